/**
 * The registry: native and sandboxed tools under one namespace, components'
 * prompts and resources (`surfaces`, core/surfaces.ts), and the one call path
 * (`stream`, `execute`) every entry point goes through.
 * (Over 400 lines: the one front over tools, surfaces and calls; each concern's body lives in its own module.)
 */
import { planComponentNames, similarNames } from './component-names.js';
import { checkRegistryOptions } from './registry-options.js';
import type { SandboxHandle, SandboxStats, ToolRegistryOptions, WasmLoadOptions, WasmLoadReport, WasmToolLoader, WorkerHeap } from './registry-types.js';
import { performance } from 'node:perf_hooks';
import type { AuditEntry } from '../policy/audit.js';
import { admit, overCallerCeiling, type AdmissionDeps, type RegisteredTool } from './call/admission.js';
import { Call, CallEvents, rejectedCall, type CallDeps } from './call/call.js';
import { admissionSpan, endCallSpan, openCallSpan } from './call/call-span.js';
import { traceFields, type CallTracer, type TraceSpan } from './tracing.js';
import { CallIdSource } from './call/call-id-source.js';
import { CALL_LAYERS, compose, invoke, type CallHandler } from './call/layers.js';
import type { CallOptions, CallStream } from './call/options.js';
import { CallTracker } from './call-tracker.js';
import { modelNames, toDefinition, type DefinitionFormat, type DefinitionOptions, type DefinitionsByFormat } from './definitions.js';
import { ToolhostError, type CancelOutcome } from '../base/errors.js';
import type { FleetStatus } from './fleet.js';
import type { TerminalEvent } from './events.js';
import { createDefaultLogger, type Logger } from '../base/logger.js';
import type { ToolResult } from './result.js';
import { denyAllApprovals } from '../policy/approval.js';
import { createAuditLog } from '../policy/audit.js';
import { HostOwnedPaths } from '../policy/host-owned-paths.js';
import { publishableSchema, SchemaCompiler } from './schema.js';
import type { SchemaLimits } from './schema-limits.js';
import { ComponentSurfaces } from './surfaces.js';
import { describeNesting, distinctWorktrees, grantedWorktreesOf, nestedWorktrees, type GrantedWorktree } from '../policy/worktree-nesting.js';
import { InMemoryStateStore, resolveStateLimits } from './state.js';
import type { Tool } from './tool.js';

/** Tool names: what MCP allows, kept to 64 characters. */
const TOOL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

export type { LoadedComponentTools, SandboxStats, ToolRegistryOptions, WasmLoadOptions, WasmLoadReport, WasmToolLoader, WorkerHeap } from './registry-types.js';

/** New call ids (flat UUID strings, see call-id-source.ts). */
const callIds = new CallIdSource();
/** A remote source (`oci://`, `https://`: see distribution/source.ts) names no file of this host. */
const URL_SOURCE = /^[a-z][a-z0-9+.-]*:\/\//i;

export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #schemas: SchemaCompiler;
  readonly #tracker: CallTracker;
  readonly #deps: AdmissionDeps & CallDeps;
  /** The call's layers over the tool's run, composed once. */
  readonly #run: CallHandler = compose(CALL_LAYERS, invoke);
  readonly #loader: WasmToolLoader | undefined;
  readonly #sandbox: SandboxHandle | undefined;
  /** Where a writable worktree must not reach (the call's admission refuses it): see host/policy/host-owned-paths.ts. */
  readonly hostOwnedPaths: HostOwnedPaths;
  /** Components' prompts and resources, each operation a call of the component's surface tool through the call path. */
  readonly surfaces: ComponentSurfaces;
  #closed = false;
  #modelNameCache: Map<string, string> | undefined;
  readonly #listeners = new Set<(names: string[]) => void>();
  readonly #acceptedListeners = new Set<(tool: string, callId: string) => void>();
  readonly #finishedListeners = new Set<(tool: string, event: TerminalEvent) => void>();
  readonly #limitListeners = new Set<(tool: string, limit: string) => void>();
  /** The registered tools' granted worktrees (admission compares a call's own worktree with them), until tools change. */
  #grantedWorktrees: GrantedWorktree[] | undefined;
  readonly #tracer: CallTracer | undefined;

  constructor(options: ToolRegistryOptions = {}) {
    const { cancelGraceMs, defaults, callIds, retry, maxResultDepth, clientRequestBytes } = checkRegistryOptions(options);
    this.#tracker = new CallTracker(callIds.rememberedBytes);
    this.hostOwnedPaths = options.hostOwnedPaths ?? new HostOwnedPaths();
    const stateLimits = resolveStateLimits(options.stateLimits);
    this.#deps = {
      // A model-facing name (e.g. `git__status` for `git.status`) finds its tool too.
      lookup: (name) => {
        const registered = this.resolveName(name);
        return registered === undefined ? undefined : this.#tools.get(registered);
      },
      suggest: (name) => similarNames(this.names(), name),
      stateStore: options.stateStore ?? new InMemoryStateStore(stateLimits),
      stateLimits,
      logger: options.logger ?? createDefaultLogger(),
      defaults,
      cancelGraceMs,
      retry,
      tracker: this.#tracker,
      ...(options.fleet === undefined ? {} : { fleet: options.fleet }),
      audit: options.audit ?? createAuditLog(),
      approve: options.approve ?? denyAllApprovals,
      hostEnv: options.hostEnv ?? process.env,
      hostOwned: this.hostOwnedPaths,
      grantedWorktrees: () => this.#grantedWorktrees ??= distinctWorktrees(grantedWorktreesOf([...this.#tools.values()].map(({ tool }) => tool))),
      maxCallIdLength: callIds.maxLength,
      maxResultDepth,
      clientRequestBytes,
      onFinished: (tool, event) => {
        for (const listener of this.#finishedListeners) listener(tool, event);
      },
      onLimit: (tool, limit) => {
        for (const listener of this.#limitListeners) {
          try { listener(tool, limit); } catch { /* a metrics listener must not change a call */ }
        }
      },
    };
    this.#schemas = new SchemaCompiler(options.schemaLimits, (tool, limit) => this.#deps.onLimit(tool, limit));
    const surfaceTools = new Map<Tool, RegisteredTool>();
    this.surfaces = new ComponentSurfaces((tool, args, call) => {
      if (!surfaceTools.has(tool)) surfaceTools.set(tool, tool.checksOwnArgs === true ? { tool } : { tool, validate: this.#schemas.compile(tool.name, tool.inputSchema) });
      return this.#start(tool.name, args, call, surfaceTools.get(tool));
    }, {
      ...(options.surfaceItems === undefined ? {} : { maxItems: options.surfaceItems }),
      ...(options.surfaceListingWaitMs === undefined ? {} : { listingWaitMs: options.surfaceListingWaitMs }),
      logger: this.#deps.logger,
      onLimit: (tool, limit) => this.#deps.onLimit(tool, limit),
    });
    this.#tracer = options.tracer;
    // A span dropped at the export queue's cap (telemetry.max_queue_spans) is a limit hit like any other.
    options.tracer?.onDropped?.(() => this.#deps.onLimit('(tracing)', 'max_queue_spans'));
    this.#loader = options.wasmLoader;
    this.#sandbox = options.pool;
    this.hostOwnedPaths.addAll(this.#loader?.ownedPaths?.() ?? []);
    if (this.#deps.audit.file !== undefined) this.hostOwnedPaths.add('audit-log', this.#deps.audit.file);
    options.fleet?.bind({ cancelLocal: (callId, principal) => this.#tracker.cancel(callId, principal), ...(options.tracer === undefined ? {} : { tracer: options.tracer }) });
  }

  get logger(): Logger {
    return this.#deps.logger;
  }

  /** Where calls' spans go, when the host traces (servers open their server spans with it). */
  get tracer(): CallTracer | undefined {
    return this.#tracer;
  }

  /** What tools' schemas may cost (`host.guest_limits`): for runners that check schemas off the main thread. */
  get schemaLimits(): Readonly<SchemaLimits> {
    return this.#schemas.limits;
  }

  /**
   * Be told when tools are registered or removed (e.g. to send MCP's
   * `notifications/tools/list_changed`). Returns a function that unsubscribes.
   */
  onToolsChanged(listener: (names: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Be told about every call that was accepted (admitted and tracked under its id), before it runs. With
   * `onCallFinished` it lets a caller check that each accepted call ended exactly once (`npm run soak` does).
   * Returns an unsubscribe function.
   */
  onCallAccepted(listener: (tool: string, callId: string) => void): () => void {
    this.#acceptedListeners.add(listener);
    return () => this.#acceptedListeners.delete(listener);
  }

  /** Be told about every call's terminal event (after it was delivered): for metrics. Returns an unsubscribe function. */
  onCallFinished(listener: (tool: string, event: TerminalEvent) => void): () => void {
    this.#finishedListeners.add(listener);
    return () => this.#finishedListeners.delete(listener);
  }

  /**
   * Be told each time a call hits one of the host's limits (a state write refused, too many host calls):
   * for metrics. `limit` is its config key (e.g. `state_keys_per_conversation`). Returns an unsubscribe function.
   */
  onLimitHit(listener: (tool: string, limit: string) => void): () => void {
    this.#limitListeners.add(listener);
    return () => this.#limitListeners.delete(listener);
  }

  /** Unregister every tool a component brought (`tool.source`), and its prompts and resources; returns the tools' names. */
  unloadComponent(component: string): string[] {
    return this.retain((tool) => tool.executionMode !== 'sandboxed' || tool.source !== component);
  }

  #changed(): void {
    this.#modelNameCache = undefined;
    this.#grantedWorktrees = undefined;
    const names = this.names();
    for (const listener of this.#listeners) {
      try {
        listener(names);
      } catch (error) {
        this.logger.warn({ err: (error as Error).message }, 'a tools-changed listener failed');
      }
    }
  }

  /** The sandbox pool's state, once a component has started it (undefined before, or without a sandbox). */
  sandboxStats(): SandboxStats | undefined {
    return this.#sandbox?.stats();
  }

  /** Collect every sandbox worker's garbage and read its heap (measurements; undefined before the pool started, or in a sandbox process). */
  async collectWorkerGarbage(): Promise<WorkerHeap[] | undefined> {
    return this.#sandbox?.collectWorkerGarbage();
  }

  /** Compile what loading deferred, so the first calls do not wait for it (servers do this before they listen). */
  async warm(): Promise<void> {
    await this.#loader?.warm?.();
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.#tracker.size;
  }

  /**
   * Register a tool. Its input schema is compiled now; a bad schema, a bad
   * name or a name already taken throws a ToolhostError.
   */
  register(tool: Tool): void {
    this.#assertOpen();
    if (!TOOL_NAME.test(tool.name)) {
      throw new ToolhostError('INVALID_INPUT', `tool name "${tool.name}" must match ${TOOL_NAME.source}`);
    }
    if (this.#tools.has(tool.name)) {
      throw new ToolhostError('INVALID_INPUT', `a tool named "${tool.name}" is already registered`);
    }
    this.#tools.set(tool.name, this.#compile(tool.name, tool));
    this.#changed();
  }

  /**
   * A tool's schemas checked for cost and compiled: its input validator, and the output schema clients may be
   * shown (without patterns, see `publishableSchema`), as the tool's description for `definitions`. A tool
   * that `checksOwnArgs` (a guest's or a remote server's schemas) gets nothing compiled or walked by a
   * keyword's meaning here: its schemas were checked off this thread where they were loaded, and only the
   * linear, keyword-blind strip of `publishableSchema` runs on its output schema.
   */
  #compile(name: string, tool: Tool): RegisteredTool {
    const offThread = tool.checksOwnArgs === true;
    const registered: RegisteredTool = offThread ? { tool } : { tool, validate: this.#schemas.compile(name, tool.inputSchema) };
    if (tool.outputSchema === undefined) return registered;
    const published = offThread ? publishableSchema(tool.outputSchema) : this.#schemas.checkOutput(name, tool.outputSchema);
    if (published !== tool.outputSchema) registered.described = Object.create(tool, { outputSchema: { value: published, enumerable: true } }) as Tool;
    return registered;
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  names(): string[] {
    return [...this.#tools.keys()].sort();
  }

  /** Every tool's definition, in toolhost's shape or an agent API's. */
  definitions<F extends DefinitionFormat = 'toolhost'>(format?: F, options?: DefinitionOptions): Array<DefinitionsByFormat[F]> {
    const chosen = (format ?? 'toolhost') as F;
    const names = this.#modelNames();
    const out: Array<DefinitionsByFormat[F]> = [];
    for (const name of this.names()) {
      const registered = this.#tools.get(name)!;
      const definition = toDefinition(registered.described ?? registered.tool, chosen, names.get(name), options);
      if (definition !== undefined) out.push(definition);
    }
    return out;
  }

  /**
   * The registered name a name given by a caller stands for: the name itself
   * when it is registered, else the tool whose model-facing name it is (see
   * `modelNames`), else undefined.
   */
  resolveName(name: string): string | undefined {
    if (this.#tools.has(name)) return name;
    for (const [registered, model] of this.#modelNames()) if (model === name) return registered;
    return undefined;
  }

  /** The model-facing name of each registered tool (recomputed when the tools change). */
  #modelNames(): Map<string, string> {
    this.#modelNameCache ??= modelNames(this.#tools.keys());
    return this.#modelNameCache;
  }

  unregister(name: string): boolean {
    const removed = this.#tools.delete(name);
    if (removed) this.#changed();
    return removed;
  }

  /**
   * Keep only the tools `predicate` accepts; returns the names removed. A component's prompts and resources
   * go too when `predicate` rejects its surface tool (`surface:COMPONENT`, sandboxed, `source` the component).
   */
  retain(predicate: (tool: Tool) => boolean): string[] {
    this.surfaces.retain(predicate);
    const removed: string[] = [];
    for (const [name, { tool }] of this.#tools) {
      if (!predicate(tool)) {
        this.#tools.delete(name);
        removed.push(name);
      }
    }
    if (removed.length > 0) this.#changed();
    return removed;
  }

  /**
   * Load component files (or every `.wasm` file in the given directories) and
   * register their tools. All components load before any tool is registered,
   * so a bad component registers nothing. A tool whose name is taken is
   * registered as `<component>.<tool>` and reported in `renamed` (and logged).
   */
  async registerWasmTools(paths: string | string[], options: WasmLoadOptions = {}): Promise<WasmLoadReport> {
    this.#assertOpen();
    const loader = this.#wasmLoader();
    const files = Array.isArray(paths) ? paths : [paths];
    // A guest that could rewrite a component (or drop one into a loaded directory) would run its code under that grant.
    for (const path of files) if (!URL_SOURCE.test(path)) this.hostOwnedPaths.add('component', path);
    // Nor the trust anchors this load verifies with (a guest that replaced a key would sign its own code).
    for (const key of options.verify?.keys ?? []) this.hostOwnedPaths.add('verify-key', key);
    if (options.verify?.trustedRoot !== undefined) this.hostOwnedPaths.add('trusted-root', options.verify.trustedRoot);
    const loaded = await loader.load(files, options).catch((error: unknown) => {
      // A load-time cap (a remote component over its size cap) counts as a limit hit, under the source's name.
      const details = error instanceof ToolhostError ? error.details as { limitHit?: unknown; source?: unknown } | undefined : undefined;
      if (typeof details?.limitHit === 'string') this.#deps.onLimit(String(details.source), details.limitHit);
      throw error;
    });
    const { plan, report } = planComponentNames(loaded, new Set(this.#tools.keys()));
    for (const { component, tool, registeredAs } of report.renamed) {
      this.logger.warn({ component, tool, registeredAs }, 'tool name collision: registered under a namespaced name');
    }
    this.#refuseNestedWorktrees(plan.map(({ tool }) => tool));
    const compiled = plan.map(({ name, tool }) => ({ name, registered: this.#compile(name, tool) }));
    for (const entry of compiled) this.#tools.set(entry.name, entry.registered);
    if (compiled.length > 0) this.#changed();
    for (const { component, surface } of loaded) if (surface !== undefined) this.surfaces.set({ component, ...surface });
    return report;
  }

  /** Refuse tools whose granted worktree nests with another tool's writable one (policy/worktree-nesting.ts). */
  #refuseNestedWorktrees(adding: Tool[]): void {
    const fresh = new Set<unknown>(adding);
    const nested = nestedWorktrees([...grantedWorktreesOf([...this.#tools.values()].map(({ tool }) => tool)), ...grantedWorktreesOf(adding)])
      .find(({ outer, inner }) => fresh.has(outer.where) || fresh.has(inner.where));
    if (nested) throw new ToolhostError('PERMISSION_DENIED', describeNesting(nested), { details: { reason: 'nested-worktree', outer: nested.outer.worktree, inner: nested.inner.worktree } });
  }

  /**
   * Start a call and stream its events: `start`, progress/delta/log, then one
   * `result` or `error`. Admission (lookup → policy → validate → ids) decides
   * first; a refused call's stream holds only its error (`stage: 'rejected'`).
   */
  stream(name: string, args: unknown, options: CallOptions = {}): CallStream {
    return this.#start(name, args, options);
  }

  /**
   * Whether `name` called with `options` would be refused for its caller's own label ceiling (an OAuth token's
   * scopes), decided by admission's policy step as `stream` decides it, without starting the call or checking its
   * args: the refusal (audited and counted as a `scope_labels` limit hit, as `stream` would), else undefined. A
   * server answers it before the call is made (MCP over HTTP: 403 insufficient_scope, step-up authorization).
   */
  ceilingRefusal(name: string, options: CallOptions): ToolhostError | undefined {
    if (options.labelCeiling === undefined || this.#closed) return undefined;
    const lookup = (tool: string): RegisteredTool | undefined => {
      const registered = this.#deps.lookup(tool);
      return registered === undefined ? undefined : { tool: registered.tool };
    };
    const admission = admit({ ...this.#deps, lookup }, options.callId ?? callIds.next(), name, undefined, options);
    if (admission.admitted || !overCallerCeiling(admission.error)) return undefined;
    this.#deps.onLimit(name, 'scope_labels');
    if (admission.audit) this.#deps.audit.record(admission.audit);
    return admission.error;
  }

  /** `stream`, as the events type that can also give the terminal event alone (`execute`). */
  #start(name: string, args: unknown, options: CallOptions, surface?: RegisteredTool): CallEvents {
    const callId = options.callId ?? callIds.next();
    const startedAt = performance.now();
    // Traced calls only (one check otherwise): the entry's span, or the call's own.
    const traced = options.span !== undefined || this.#tracer !== undefined ? openCallSpan(this.#tracer, name, args, options, callId, startedAt) : undefined;
    const span = traced?.span;
    const reject = (error: ToolhostError, audit?: AuditEntry): CallEvents => {
      if (audit) this.#deps.audit.record(span === undefined ? audit : { ...audit, ...traceFields(span) });
      return rejectedCall(callId, error, startedAt, (event) => {
        this.#deps.onFinished(name, event);
        if (span !== undefined) endCallSpan(span, event, traced!.owned);
      });
    };
    if (this.#closed) return reject(new ToolhostError('INTERNAL', 'the registry is closed; no more calls are accepted'));
    // A component's surface tool is found only here, never by name (core/surfaces.ts).
    const admission = admit(surface === undefined ? this.#deps : { ...this.#deps, lookup: () => surface }, callId, name, args, options);
    if (span !== undefined) admissionSpan(span, startedAt, admission);
    // Above its caller's own label ceiling (an OAuth token's scopes): a hit of that limit, for the metrics.
    if (!admission.admitted && overCallerCeiling(admission.error)) this.#deps.onLimit(name, 'scope_labels');
    if (!admission.admitted) return reject(admission.error, admission.audit);
    const call = new Call(this.#deps, admission.call, span, traced?.owned === true);
    if (!call.track()) return reject(new ToolhostError('INVALID_INPUT', `call id "${callId}" is already in flight`));
    for (const listener of this.#acceptedListeners) {
      try { listener(name, callId); } catch { /* an observer must not change a call */ }
    }
    const stream = call.stream();
    this.#run(call)
      .then(
        (run) => call.succeed(run),
        (error: unknown) => call.fail(error),
      )
      .catch((error: unknown) => {
        // Ending the call failed itself: the host keeps serving, and the call still ends once.
        this.logger.error({ callId, err: error instanceof Error ? error.message : String(error) }, 'a call could not be ended normally');
        call.fail(new ToolhostError('INTERNAL', 'the call could not be ended normally', { callId }));
      });
    return stream;
  }

  /**
   * Run a call to completion. A call that was rejected before it ran (unknown
   * tool, invalid input, refused policy) throws a ToolhostError; a call that
   * ran and failed resolves to a result with `isError: true`.
   */
  async execute(name: string, args: unknown, options?: CallOptions): Promise<ToolResult> {
    const terminal = await this.#start(name, args, options ?? {}).terminal();
    if (terminal.type === 'result') return terminal.result;
    const error = new ToolhostError(terminal.code, terminal.message, { details: terminal.details, callId: terminal.callId });
    if (terminal.stage === 'rejected') throw error;
    return {
      content: [{ type: 'text', text: `${terminal.code}: ${terminal.message}` }],
      isError: true,
      error: error.toData(),
      accounting: terminal.accounting,
    };
  }

  /** Whether `principal`'s call `callId` is in flight, finished recently, or unknown (cancels nothing; ids are per principal). */
  callState(callId: string, principal?: string): 'in_flight' | 'completed' | 'unknown' {
    return this.#tracker.state(callId, principal);
  }

  /**
   * Cancel a call in flight: CANCELLED, or NOT_FOUND / ALREADY_COMPLETED.
   * Call ids are per principal: `principal` (a caller a server authenticated)
   * reaches only its own calls, and no principal only calls started without
   * one; another principal's call of the same id answers NOT_FOUND.
   */
  cancel(callId: string, principal?: string): CancelOutcome {
    return this.#tracker.cancel(callId, principal);
  }

  /** `cancel`, then (not here, with a fleet) on the host running it, same principal; FLEET_UNAVAILABLE when the fleet cannot answer. */
  async cancelAnywhere(callId: string, principal?: string, span?: TraceSpan): Promise<CancelOutcome> {
    const local = this.#tracker.cancel(callId, principal);
    const fleet = this.#deps.fleet;
    if (local !== 'NOT_FOUND' || fleet === undefined) return local;
    return fleet.cancel(callId, principal, span);
  }

  /** The fleet's view of this host (undefined without a fleet). */
  fleetStatus(): FleetStatus | undefined {
    return this.#deps.fleet?.status();
  }

  /** Cancel what is in flight and release the worker pool. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#tracker.cancelAll();
    await this.#loader?.close();
    await this.#sandbox?.close();
  }

  #wasmLoader(): WasmToolLoader {
    if (!this.#loader) {
      throw new ToolhostError('INTERNAL', 'this registry has no Wasm loader: make it with createRegistry() or createHost() from the toolhost package');
    }
    return this.#loader;
  }

  #assertOpen(): void {
    if (this.#closed) throw new ToolhostError('INTERNAL', 'the registry is closed');
  }
}
