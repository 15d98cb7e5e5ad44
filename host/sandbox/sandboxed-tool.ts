/** A tool that lives in a component and runs in the sandbox pool. */
import { createHash } from 'node:crypto';
import type { ToolContext } from '../core/context.js';
import { ToolhostError } from '../base/errors.js';
import { CallRejection } from '../core/call/call.js';
import type { SchemaLimits } from '../core/schema-limits.js';
import type { RunnerSink } from '../core/events.js';
import { epochNow, type TraceSpan } from '../core/tracing.js';
import type { JsonSchema, Tool, ToolAnnotations, ToolGrant, ToolIcon, ToolRun } from '../core/tool.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';
import type { CoreModuleBytes } from './process/messages.js';
import type { SandboxRunner } from './sandbox-runner.js';
import { GuestNetwork } from './guest-network.js';
import { GuestHostCalls } from './guest-host-calls.js';
import type { ClientAllowances } from '../core/client-requests.js';
import { richResult } from '../core/result.js';
import { contentBlock } from './load/content-block.js';
import { TaskStop } from './task-stop.js';
import type { TaskHandlers, TaskInput } from './pool.js';
import type { ArgsSchema, CoreModules, GuestCallContext, GuestOutputLimits, Isolation, WorkerAccounting, WorkerOutcome } from './protocol.js';

/** What a sandboxed tool needs from the component it belongs to. */
export interface ComponentHandle {
  id: string;
  name: string;
  moduleUrl: string;
  /** The core modules compiled with their memory capped at `memoryMb` (once per cap). */
  modulesFor(memoryMb: number): Promise<CoreModules>;
  /** The same modules capped and checked, as bytes (once per cap; a sandbox process compiles them). */
  bytesFor(memoryMb: number): Promise<CoreModuleBytes>;
  /** Whatever a call at this cap needs before it runs (`modulesFor`, or `bytesFor` with process containment); fails as they do. */
  prepare(memoryMb: number): Promise<unknown>;
  /** Whether `prepare(memoryMb)` has succeeded already (a call then need not wait a turn for it). */
  prepared?(memoryMb: number): boolean;
  /** Whether the component was quarantined (its instances hang while they initialize). */
  quarantined?: () => boolean;
}

export interface SandboxedToolSpec {
  /** The tool's name inside its component (what `call` is given). */
  guestName: string;
  /** The name the host knows it by, when not `guestName` (a component's prompts and resources: `surface:COMPONENT`). */
  name?: string;
  description: string;
  inputSchema: JsonSchema;
  /** `inputSchema` as the component described it (JSON text; made from `inputSchema` when absent). */
  inputSchemaText?: string;
  outputSchema?: JsonSchema;
  idempotent: boolean;
  streaming: boolean;
  grant?: ToolGrant;
  defaultPolicy?: ExecutionPolicyInput;
  /** 0.2.0 metadata: the author's title, annotations and icons. */
  title?: string;
  annotations?: ToolAnnotations;
  icons?: ToolIcon[];
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export class SandboxedTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly executionMode = 'sandboxed' as const;
  /** The worker that runs a call checks its args (worker/args-check.ts): nothing of a guest's schema runs on the main thread. */
  readonly checksOwnArgs = true;
  readonly idempotent: boolean;
  readonly streaming: boolean;
  readonly source: string;
  readonly grant: ToolGrant;
  readonly defaultPolicy?: ExecutionPolicyInput;
  readonly isolation: Isolation;
  declare readonly title?: string;
  declare readonly annotations?: ToolAnnotations;
  declare readonly icons?: ToolIcon[];
  readonly #guestName: string;
  readonly #component: ComponentHandle;
  /** The pool, made at the first call (a host that only lists its tools, or refuses every call, starts no worker). */
  readonly #pool: () => SandboxRunner;
  readonly #limits: GuestOutputLimits;
  /** `#limits` with the last calls' client allowances (see #limitsFor). */
  #withClient: GuestOutputLimits | undefined;
  /** The input schema as the worker gets it (with the call's profile, so once per worker). */
  readonly #argsSchema: ArgsSchema;
  /** For an instance the pool makes ahead on another worker when the tool's calls come back to back (instances-made-ahead.ts). */
  readonly #modulesFor = (memoryMb: number): Promise<CoreModules> => this.#component.modulesFor(memoryMb);

  constructor(spec: SandboxedToolSpec, component: ComponentHandle, pool: () => SandboxRunner, isolation: Isolation, limits: GuestOutputLimits, schemaLimits: SchemaLimits) {
    this.name = spec.name ?? spec.guestName;
    this.description = spec.description;
    this.inputSchema = spec.inputSchema;
    if (spec.outputSchema !== undefined) this.outputSchema = spec.outputSchema;
    this.idempotent = spec.idempotent;
    this.streaming = spec.streaming;
    this.source = component.name;
    this.grant = spec.grant ?? {};
    if (spec.defaultPolicy !== undefined) this.defaultPolicy = spec.defaultPolicy;
    const metadata = this as { -readonly [K in 'title' | 'annotations' | 'icons']?: SandboxedToolSpec[K] };
    if (spec.title !== undefined) metadata.title = spec.title;
    if (spec.annotations !== undefined) metadata.annotations = spec.annotations;
    if (spec.icons !== undefined) metadata.icons = spec.icons;
    this.isolation = isolation;
    this.#guestName = spec.guestName;
    this.#component = component;
    this.#pool = pool;
    this.#limits = limits;
    this.#argsSchema = argsSchemaOf(spec.inputSchemaText ?? JSON.stringify(spec.inputSchema), schemaLimits);
  }

  async invoke(args: unknown, ctx: ToolContext, events: RunnerSink): Promise<ToolRun> {
    const context: GuestCallContext = { callId: ctx.callId };
    // An empty conversation id is no conversation (as for state): in
    // `conversation` isolation it must not name one instance every such caller shares.
    if (ctx.conversationId) context.conversationId = ctx.conversationId;
    if (ctx.sessionId !== undefined) context.sessionId = ctx.sessionId;
    if (ctx.agentName !== undefined) context.agentName = ctx.agentName;

    if (this.#component.quarantined?.()) {
      throw new ToolhostError('COMPONENT_INVALID', `component "${this.#component.name}" is quarantined: its instances hung while they initialized (a worker preparing one was stopped twice); load it again to lift the quarantine`, {
        details: { reason: 'quarantined' },
      });
    }
    // A writable worktree that overlaps the transpile cache (or any other host-owned path) never
    // gets here: admission refuses it (policy/host-owned-paths.ts; the loader names its cache).
    const { memoryMb, cpuMs: cpuBudgetMs } = ctx.budgets;
    // Made with the guest's first outgoing request (most calls make none).
    let network: GuestNetwork | undefined;
    const guestNetwork = (): GuestNetwork => (network ??= new GuestNetwork(ctx, () => events.hardSignal));
    /** What the guest went past in the worker (it then ends with OUTPUT_LIMIT_EXCEEDED, whatever it returned). */
    let overLimit: { limit: string; message: string; max: number } | undefined;
    // Past a limit the guest is stopped at once (its worker is replaced: it
    // may well go on looping over refusals otherwise), through the signal the
    // pool hands piscina, so piscina itself retires the worker. (Terminating the
    // worker behind piscina's back let piscina hand it the next call, which
    // then died with it: found by the soak.) The call's hard stop is forwarded
    // to the same controller, so the pool watches one signal; it is watched
    // without reading the call's own signals where the sink allows (see RunnerSink.watch).
    const stop = new TaskStop();
    let hardStopped = false;
    const onHardStop = (reason: unknown): void => {
      hardStopped = true;
      stop.abort(reason);
    };
    const unwatch = watchHardStop(events, onHardStop);
    const overLimitError = (): ToolhostError => new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `${overLimit!.message}; the call was ended`, {
      details: { reason: overLimit!.limit === 'handles_per_call' ? 'handles' : 'host-calls', limit: overLimit!.limit, max: overLimit!.max },
      callId: ctx.callId,
    });
    // Compile (or, for a sandbox process, cap and check) once per cap before a
    // worker is involved; a component that needs more memory at start than the cap fails here.
    if (this.#component.prepared?.(memoryMb) !== true) await this.#component.prepare(memoryMb);
    const accountNetwork = (): void => {
      if (network === undefined || network.denied.length === 0) return;
      events.account({ networkDenied: network.denied, ...(network.deniedCount > network.denied.length ? { networkDeniedCount: network.deniedCount } : {}) });
    };
    const { capabilities } = ctx;
    const limits = this.#limitsFor(ctx);
    const input: TaskInput = {
      kind: 'call',
      componentId: this.#component.id,
      memoryMb,
      moduleUrl: this.#component.moduleUrl,
      tool: this.#guestName,
      argsSchema: this.#argsSchema,
      args: JSON.stringify(args) ?? 'null',
      context,
      isolation: this.isolation,
      limits,
      capabilities: { env: Object.entries(capabilities.env), network: capabilities.network },
    };
    if (capabilities.filesystem) input.capabilities.filesystem = capabilities.filesystem;
    if (this.isolation === 'conversation' && ctx.conversationKey !== undefined) input.conversationKey = ctx.conversationKey;
    // Traced calls: the queue wait and the run are drawn on this thread from what the pool and the worker
    // measured (no tracer in the workers); host calls get spans of their own as they are answered here.
    const span = events.span;
    const runStart = span === undefined ? 0 : epochNow();
    let stoppedQueuedMs: number | undefined;
    // What the host refuses the guest is kept by the call: a tool that ends with one ends the call with it (core/call/refusals.ts).
    const refused = (error: ToolhostError): void => events.refused?.(error.toData());
    const host = new GuestHostCalls({
      ctx,
      component: this.#component,
      limits,
      maxHostCalls: this.#limits.maxHostCalls,
      network: guestNetwork,
      clientWaits: () => this.#pool().clientWaits,
      refused,
      limit: (limit) => events.limit?.(limit),
    });
    const handlers: TaskHandlers = {
      signal: stop,
      principal: ctx.principal,
      onStopped: (measured) => {
        stoppedQueuedMs = measured.queuedMs;
        events.account({
          ...(measured.queuedMs === undefined ? {} : { queuedMs: round(measured.queuedMs) }),
          ...(measured.waiting === true ? { waitingForWorker: true } : {}),
          ...(measured.cpuMs === undefined ? {} : { cpuMs: round(measured.cpuMs), cpuClock: 'thread' }),
          isolation: this.isolation,
        });
      },
      onMessage: (message) => {
        if (message.type === 'progress') events.progress(message.pct, message.message);
        else if (message.type === 'delta') events.delta(parseMaybeJson(message.data));
        else if (message.type === 'limit') {
          if (overLimit !== undefined) return;
          overLimit = { limit: message.limit, message: message.message, max: message.max };
          events.limit?.(message.limit);
          stop.abort(overLimitError());
        } else if (message.type === 'log') events.log(message.level, message.message, message.source);
        else if (message.type === 'client-refused') ctx.client.refused?.(message.kind, message.reason, message.bytes, message.uncounted !== true);
      },
      rpc: (request) => span === undefined ? host.answer(request) : host.traced(span, request),
      modulesFor: this.#modulesFor,
    };
    if (events.watch) handlers.onCancel = (raise) => events.watch!({ cancel: raise });
    else handlers.cancelSignal = ctx.signal;
    if (cpuBudgetMs !== undefined) handlers.cpuBudgetMs = cpuBudgetMs;
    let outcome: WorkerOutcome;
    try {
      outcome = await this.#pool().run(input, handlers);
    } catch (error) {
      accountNetwork();
      if (span !== undefined) this.#runSpans(span, runStart, { queuedMs: stoppedQueuedMs }, overLimit !== undefined && !hardStopped ? 'OUTPUT_LIMIT_EXCEEDED' : error instanceof ToolhostError ? error.code : 'INTERNAL');
      // Stopped for the limit (unless a hard stop came first): the limit is why.
      if (overLimit !== undefined && !hardStopped) throw overLimitError();
      // The sandbox process was replaced at one of the host's limits (heartbeat_ms): counted for each call it ended;
      // and a call refused at the queue's limits (max_queue, max_queue_per_principal).
      const limit = error instanceof ToolhostError ? (error.details as { limit?: unknown } | undefined)?.limit : undefined;
      if (typeof limit === 'string' && ((error as ToolhostError).code === 'TOOL_CRASHED' || (error as ToolhostError).code === 'OVERLOADED')) events.limit?.(limit);
      throw error;
    } finally {
      unwatch();
      host.close();
    }
    const { accounting } = outcome;
    if (span !== undefined) this.#runSpans(span, runStart, accounting, overLimit !== undefined ? 'OUTPUT_LIMIT_EXCEEDED' : outcome.ok ? undefined : outcome.error.code);
    const measured: Parameters<RunnerSink['account']>[0] = {
      queuedMs: round(accounting.queuedMs ?? 0),
      instance: accounting.instance,
      isolation: accounting.isolation,
      instantiateMs: round(accounting.instantiateMs),
      cpuClock: accounting.cpuClock,
      workerThreadId: accounting.threadId,
    };
    if (accounting.peakMemoryBytes !== undefined) measured.peakMemoryBytes = accounting.peakMemoryBytes;
    if (accounting.cpuMs !== undefined) measured.cpuMs = round(accounting.cpuMs);
    if (accounting.reinstantiated === true) measured.reinstantiated = true;
    if (accounting.evictions !== undefined) measured.evictions = accounting.evictions;
    events.account(measured);
    // Other conversations' kept instances this call's dropped (the worker's budget): each a limit hit.
    for (let i = 0; i < (accounting.keptEvicted ?? 0); i++) events.limit?.('kept_instances_mb');
    // Components whose instances the worker dropped for its share of the memory budget (or idleness): each a limit hit.
    for (let i = 0; i < (accounting.evictions ?? 0); i++) events.limit?.('memory_budget_mb');
    accountNetwork();
    if (overLimit !== undefined) throw overLimitError();
    // What the network policy refused is a fact for the call's accounting; the
    // error it leads to is decided by the call path's precedence table.
    // Args the worker refused before the guest ran: a refusal, as admission's own would have been.
    if (!outcome.ok && outcome.refused === true) throw new CallRejection(ToolhostError.fromData({ ...outcome.error, callId: ctx.callId }));
    if (!outcome.ok) throw ToolhostError.fromData({ ...outcome.error, callId: ctx.callId });
    if (!('value' in outcome)) throw new ToolhostError('INTERNAL', 'the worker answered a call with a describe result');
    if (outcome.content === undefined && outcome.noValue !== true) return { output: parseMaybeJson(outcome.value), text: outcome.value };
    // 0.2.0: content items beside (or instead of) the value, which stays the structured content.
    const value = outcome.noValue === true ? undefined : parseMaybeJson(outcome.value);
    const content = outcome.content === undefined ? [{ type: 'text' as const, text: outcome.value }] : outcome.content.map(contentBlock);
    return { output: richResult(content, value) };
  }

  /**
   * The call's limits with what its tool may ask the caller (`ctx.client`'s
   * allowances), so the worker refuses the rest without posting it. One object
   * per distinct allowance, kept: the pool finds a call's profile by its limits object.
   */
  #limitsFor(ctx: ToolContext): GuestOutputLimits {
    const allowed = ctx.client.allowances?.();
    if (allowed === undefined) return this.#limits;
    const kept = this.#withClient;
    if (kept !== undefined && sameAllowances(kept.clientRequests!, allowed)) return kept;
    return (this.#withClient = { ...this.#limits, clientRequests: allowed });
  }

  /**
   * The sandbox's two spans of a call, under `parent`: `sandbox.queue` (waiting for a worker) and `sandbox.run`
   * (the worker's part: instance, isolation, containment, CPU), drawn from the times the pool and the worker
   * reported. Sizes and times only: nothing of the args or the result.
   */
  #runSpans(parent: TraceSpan, start: number, accounting: Partial<WorkerAccounting>, failed: string | undefined): void {
    const end = epochNow();
    const queuedMs = Math.max(0, Math.min(accounting.queuedMs ?? 0, end - start));
    parent.child('sandbox.queue', { startTime: start, attributes: { 'toolhost.sandbox.queued_ms': round(queuedMs) } }).end(start + queuedMs);
    const run = parent.child('sandbox.run', {
      startTime: start + queuedMs,
      attributes: {
        'toolhost.component': this.#component.name,
        'toolhost.sandbox.containment': this.#pool().process === undefined ? 'thread' : 'process',
        'toolhost.sandbox.isolation': accounting.isolation ?? this.isolation,
        'toolhost.sandbox.instance': accounting.instance,
        'toolhost.sandbox.cpu_ms': accounting.cpuMs === undefined ? undefined : round(accounting.cpuMs),
        'toolhost.sandbox.instantiate_ms': accounting.instantiateMs === undefined ? undefined : round(accounting.instantiateMs),
        'toolhost.sandbox.peak_memory_bytes': accounting.peakMemoryBytes,
        'toolhost.sandbox.reinstantiated': accounting.reinstantiated,
      },
    });
    if (failed !== undefined) run.fail(failed);
    run.end(end);
  }
}

/** What the worker needs to check a call's args: the schema's text and limits, keyed by their hash. */
function argsSchemaOf(text: string, limits: SchemaLimits): ArgsSchema {
  const hash = createHash('sha256').update(text).update('\0').update(JSON.stringify(limits)).digest('hex');
  return { hash, text, limits };
}

/** Call `onStop` when the call is stopped hard; returns the unsubscribe. */
function watchHardStop(events: RunnerSink, onStop: (reason: unknown) => void): () => void {
  if (events.watch) return events.watch({ hard: onStop });
  const signal = events.hardSignal;
  const listener = (): void => onStop(signal.reason);
  if (signal.aborted) {
    listener();
    return () => {};
  }
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

function sameAllowances(a: ClientAllowances, b: ClientAllowances): boolean {
  return a.bytes === b.bytes
    && a.sampling?.maxRequests === b.sampling?.maxRequests && a.sampling?.maxTokens === b.sampling?.maxTokens
    && a.elicitation?.maxRequests === b.elicitation?.maxRequests && a.roots?.maxRequests === b.roots?.maxRequests;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
