/**
 * The registry: native and sandboxed tools under one namespace, and the one
 * call path (`stream`, `execute`) every entry point goes through.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DEFAULT_POLICY_DEFAULTS, type PolicyDefaults } from '../policy/execution-policy.js';
import type { AuditEntry } from '../policy/audit.js';
import { admit, type AdmissionDeps, type RegisteredTool } from './call/admission.js';
import { Call, DEFAULT_CANCEL_GRACE_MS, rejectedCall, type CallDeps } from './call/call.js';
import { CALL_LAYERS, compose, invoke, type CallHandler } from './call/layers.js';
import type { CallOptions, CallStream } from './call/options.js';
import { CallTracker } from './call-tracker.js';
import { toDefinition, type DefinitionFormat, type DefinitionsByFormat } from './definitions.js';
import { ToolhostError, type CancelOutcome } from './errors.js';
import { isTerminal, type TerminalEvent, type ToolEvent } from './events.js';
import { createDefaultLogger, type Logger } from './logger.js';
import type { ToolResult } from './result.js';
import { denyAllApprovals, type ApprovalHook } from '../policy/approval.js';
import { createAuditLog, type AuditLog } from '../policy/audit.js';
import { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './retry.js';
import { SchemaCompiler } from './schema.js';
import { InMemoryStateStore, resolveStateLimits, type StateLimits, type StateStore } from './state.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';
import type { ToolGrant } from '../policy/grant.js';
import type { Tool } from './tool.js';

/** Tool names: what MCP allows, kept to 64 characters. */
const TOOL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** One component's tools, as a loader hands them to the registry. */
export interface LoadedComponentTools {
  /** The component's name (its file name without `.wasm`). */
  component: string;
  path?: string;
  /** The component's content hash. */
  id: string;
  /** Whether the transpiled form came from the on-disk cache. */
  cache: 'hit' | 'miss';
  tools: Tool[];
}

/** What `registerWasmTools` registered, and under which names. */
export interface WasmLoadReport {
  components: Array<Omit<LoadedComponentTools, 'tools'> & { tools: string[] }>;
  /** Tools whose plain name was taken, registered as `<component>.<tool>`. */
  renamed: Array<{ component: string; tool: string; registeredAs: string }>;
}

export interface WasmLoadOptions {
  /**
   * Instance isolation for these tools: `call` (default: a fresh instance per
   * call), `conversation` (reused by one conversation's calls on a worker) or
   * `worker` (reused by every call on a worker).
   */
  isolation?: 'call' | 'conversation' | 'worker';
  /** Cap on these tools' linear memory (MiB): calls asking for more get this much (shorthand for `grant.memoryMb`). */
  memoryMb?: number;
  /** What the host grants these tools: network and privilege ceilings, egress and env allowlists, a worktree. */
  grant?: ToolGrant;
  /** The policy these tools' calls get where they say nothing (within the grant). */
  defaultPolicy?: ExecutionPolicyInput;
}

/** What the sandbox's worker pool is doing (for metrics and health checks). */
export interface SandboxStats {
  threads: number;
  queueSize: number;
  /** Share of worker time spent running tasks (0..1). */
  utilization: number;
}

/** Loads component files into tools. The sandbox implements it; core knows nothing about Wasm. */
export interface WasmToolLoader {
  load(paths: string[], options: WasmLoadOptions): Promise<LoadedComponentTools[]>;
  /** The pool's state, once it has started (undefined before). */
  stats?(): SandboxStats | undefined;
  /** Finish what loading deferred (compiling components whose description was cached). */
  warm?(): Promise<void>;
  close(): Promise<void>;
}

export interface ToolRegistryOptions {
  /** Conversation state (default: in memory, in this thread). */
  stateStore?: StateStore;
  /**
   * Caps on conversation state (defaults: DEFAULT_STATE_LIMITS). The default
   * in-memory store enforces all of them; with a store of your own, the host
   * checks the value size and your store the per-conversation limits.
   */
  stateLimits?: Partial<StateLimits>;
  /** Structured log (default: pino JSON on stderr, level from TOOLHOST_LOG). */
  logger?: Logger;
  /** Host policy defaults (wall-clock limit, labels). */
  defaults?: Partial<PolicyDefaults>;
  /** How long a cancelled call may wind down cooperatively before it is stopped hard (ms). */
  cancelGraceMs?: number;
  /** Backoff between retries of transient failures (see `backoffDelay`). */
  retry?: Partial<RetryOptions>;
  /** Where policy decisions are recorded (default: pino JSON lines on stderr). */
  audit?: AuditLog;
  /** Approves PRIVILEGED and FULL_ACCESS calls (default: refuses them all). */
  approve?: ApprovalHook;
  /** Where allowlisted environment values come from when neither the grant nor the call sets them (default: process.env). */
  hostEnv?: NodeJS.ProcessEnv;
  /**
   * The loader behind `registerWasmTools` (the sandbox's, when the registry is
   * made by `createRegistry` or `createHost`). The registry closes it.
   */
  wasmLoader?: WasmToolLoader;
}

export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #schemas = new SchemaCompiler();
  readonly #tracker = new CallTracker();
  readonly #deps: AdmissionDeps & CallDeps;
  /** The call's layers over the tool's run, composed once. */
  readonly #run: CallHandler = compose(CALL_LAYERS, invoke);
  readonly #loader: WasmToolLoader | undefined;
  #closed = false;
  readonly #listeners = new Set<(names: string[]) => void>();
  readonly #finishedListeners = new Set<(tool: string, event: TerminalEvent) => void>();
  readonly #limitListeners = new Set<(tool: string, limit: string) => void>();

  constructor(options: ToolRegistryOptions = {}) {
    const cancelGraceMs = options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
    if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
      throw new TypeError('options.cancelGraceMs must be a non-negative number');
    }
    const defaults = { ...DEFAULT_POLICY_DEFAULTS, ...options.defaults };
    for (const key of ['wallMs', 'maxWallMs', 'maxCpuMs', 'memoryMb', 'maxMemoryMb'] as const) {
      if (!Number.isFinite(defaults[key]) || defaults[key] <= 0) throw new TypeError(`options.defaults.${key} must be a positive number`);
    }
    if (defaults.cpuMs !== undefined && (!Number.isFinite(defaults.cpuMs) || defaults.cpuMs <= 0)) {
      throw new TypeError('options.defaults.cpuMs must be a positive number when set');
    }
    if (!Number.isInteger(defaults.maxRetries) || defaults.maxRetries < 0) throw new TypeError('options.defaults.maxRetries must be a non-negative integer');
    const retry = { ...DEFAULT_RETRY_OPTIONS, ...options.retry };
    if (!(retry.baseMs >= 0) || !(retry.capMs >= retry.baseMs)) throw new TypeError('options.retry needs 0 <= baseMs <= capMs');
    const stateLimits = resolveStateLimits(options.stateLimits);
    this.#deps = {
      lookup: (name) => this.#tools.get(name),
      suggest: (name) => this.#suggest(name),
      stateStore: options.stateStore ?? new InMemoryStateStore(stateLimits),
      stateLimits,
      logger: options.logger ?? createDefaultLogger(),
      defaults,
      cancelGraceMs,
      retry,
      tracker: this.#tracker,
      audit: options.audit ?? createAuditLog(),
      approve: options.approve ?? denyAllApprovals,
      hostEnv: options.hostEnv ?? process.env,
      onFinished: (tool, event) => {
        for (const listener of this.#finishedListeners) listener(tool, event);
      },
      onLimit: (tool, limit) => {
        for (const listener of this.#limitListeners) {
          try { listener(tool, limit); } catch { /* a metrics listener must not change a call */ }
        }
      },
    };
    this.#loader = options.wasmLoader;
  }

  get logger(): Logger {
    return this.#deps.logger;
  }

  /**
   * Be told when tools are registered or removed (e.g. to send MCP's
   * `notifications/tools/list_changed`). Returns a function that unsubscribes.
   */
  onToolsChanged(listener: (names: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
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

  /** Unregister every tool a component brought (`tool.source`); returns their names. */
  unloadComponent(component: string): string[] {
    return this.retain((tool) => tool.executionMode !== 'sandboxed' || tool.source !== component);
  }

  #changed(): void {
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
    return this.#loader?.stats?.();
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
    const validate = this.#schemas.compile(tool.name, tool.inputSchema);
    this.#tools.set(tool.name, { tool, validate });
    this.#changed();
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
  definitions<F extends DefinitionFormat = 'toolhost'>(format?: F): Array<DefinitionsByFormat[F]> {
    const chosen = (format ?? 'toolhost') as F;
    return this.names().map((name) => toDefinition(this.#tools.get(name)!.tool, chosen));
  }

  unregister(name: string): boolean {
    const removed = this.#tools.delete(name);
    if (removed) this.#changed();
    return removed;
  }

  /** Keep only the tools `predicate` accepts; returns the names removed. */
  retain(predicate: (tool: Tool) => boolean): string[] {
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
    const loaded = await loader.load(Array.isArray(paths) ? paths : [paths], options);
    const plan: Array<{ name: string; tool: Tool }> = [];
    const report: WasmLoadReport = { components: [], renamed: [] };
    const taken = new Set(this.#tools.keys());
    for (const component of loaded) {
      const names: string[] = [];
      for (const tool of component.tools) {
        let name = tool.name;
        if (taken.has(name)) {
          name = `${component.component}.${tool.name}`;
          if (taken.has(name)) {
            throw new ToolhostError('COMPONENT_INVALID', `component "${component.component}": tool "${tool.name}" collides with "${name}", which is already registered`);
          }
          report.renamed.push({ component: component.component, tool: tool.name, registeredAs: name });
          this.logger.warn({ component: component.component, tool: tool.name, registeredAs: name }, 'tool name collision: registered under a namespaced name');
        }
        taken.add(name);
        names.push(name);
        plan.push({ name, tool: name === tool.name ? tool : { ...tool, name, invoke: tool.invoke.bind(tool) } });
      }
      const { tools: _tools, ...rest } = component;
      report.components.push({ ...rest, tools: names });
    }
    const compiled = plan.map(({ name, tool }) => ({ name, tool, validate: this.#schemas.compile(name, tool.inputSchema) }));
    for (const entry of compiled) this.#tools.set(entry.name, { tool: entry.tool, validate: entry.validate });
    if (compiled.length > 0) this.#changed();
    return report;
  }

  /**
   * Start a call and stream its events: `start`, progress/delta/log, then one
   * `result` or `error`. Admission (lookup → policy → validate → ids) decides
   * first; a refused call's stream holds only its error (`stage: 'rejected'`).
   */
  stream(name: string, args: unknown, options: CallOptions = {}): CallStream {
    const callId = options.callId ?? randomUUID();
    const startedAt = performance.now();
    const reject = (error: ToolhostError, audit?: AuditEntry): CallStream => {
      if (audit) this.#deps.audit.record(audit);
      return rejectedCall(callId, error, startedAt, (event) => this.#deps.onFinished(name, event));
    };
    if (this.#closed) return reject(new ToolhostError('INTERNAL', 'the registry is closed; no more calls are accepted'));
    const admission = admit(this.#deps, callId, name, args, options);
    if (!admission.admitted) return reject(admission.error, admission.audit);
    const call = new Call(this.#deps, admission.call);
    if (!call.track()) return reject(new ToolhostError('INVALID_INPUT', `call id "${callId}" is already in flight`));
    const stream = call.stream();
    this.#run(call).then(
      (run) => call.succeed(run),
      (error: unknown) => call.fail(error),
    );
    return stream;
  }

  /**
   * Run a call to completion. A call that was rejected before it ran (unknown
   * tool, invalid input, refused policy) throws a ToolhostError; a call that
   * ran and failed resolves to a result with `isError: true`.
   */
  async execute(name: string, args: unknown, options?: CallOptions): Promise<ToolResult> {
    const terminal = await lastEvent(this.stream(name, args, options));
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

  /** Cancel a call in flight: CANCELLED, or NOT_FOUND / ALREADY_COMPLETED. */
  cancel(callId: string): CancelOutcome {
    return this.#tracker.cancel(callId);
  }

  /** Cancel what is in flight and release the worker pool. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#tracker.cancelAll();
    await this.#loader?.close();
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

  #suggest(name: string): string[] {
    const wanted = name.toLowerCase();
    return this.names().filter((candidate) => {
      const lower = candidate.toLowerCase();
      return lower.endsWith(`.${wanted}`) || lower.includes(wanted) || (wanted.length > 3 && wanted.includes(lower));
    }).slice(0, 3);
  }
}

async function lastEvent(events: AsyncIterable<ToolEvent>): Promise<TerminalEvent> {
  for await (const event of events) {
    if (isTerminal(event)) return event;
  }
  throw new ToolhostError('INTERNAL', 'the call ended without a terminal event');
}
