/**
 * One admitted call while it runs: it owns the call's state (its two abort
 * signals, the cancel grace, its event channel and accounting) and ends it
 * exactly once. What happens around the tool's run (deadline, approval and
 * audit, retries) is not here but in the ordered layers of `layers.ts`.
 * (Over 400 lines: one call's state, its signals, its events, its span and log joins and its one end belong together.)
 *
 * Two signals: `soft` is the tool's `ctx.signal` (cooperative: the caller
 * cancelled, or the call is over); `hard` stops the runner at once (the wall
 * clock fired, or a cancel's grace ran out).
 */
import { performance } from 'node:perf_hooks';
import type { ApprovalHook } from '../../policy/approval.js';
import type { AuditEntry, AuditLog } from '../../policy/audit.js';
import type { CallTracker } from '../call-tracker.js';
import type { CallDirectory } from '../fleet.js';
import type { ToolContext } from '../context.js';
import { ToolhostError, toErrorData, type CancelOutcome, type ToolErrorData } from '../../base/errors.js';
import { EventChannel } from '../event-channel.js';
import type { CallWatcher, ErrorEvent, RunnerSink, TerminalEvent, ToolEvent } from '../events.js';
import type { Logger } from '../../base/logger.js';
import { ClientGate } from './client-gate.js';
import { isRichResult, jsonResult, type CallAccounting, type ReportedAccounting, type ToolResult } from '../result.js';
import type { RetryOptions } from '../retry.js';
import { ConversationState, InMemoryStateStore, stateNamespace, stateScope, type StateLimitName, type StateLimits, type StateStore } from '../state.js';
import type { ToolRun } from '../tool.js';
import { nestsDeeperThan } from '../result-depth.js';
import type { CallPlan } from './admission.js';
import { accountingOf } from './accounting.js';
import { CallContext, CallSink } from './call-views.js';
import type { CallStream } from './options.js';
import { failureOf } from './precedence.js';
import { traceFields, type TraceSpan } from '../tracing.js';
import { endCallSpan } from './call-span.js';
import { HostRefusals } from './refusals.js';

/** How long a cancelled call may wind down cooperatively before it is stopped hard (ms). */
export const DEFAULT_CANCEL_GRACE_MS = 500;

/** What a running call needs from the host. */
export interface CallDeps {
  stateStore: StateStore;
  /** The state limits (the value size is checked here for any store; the scratch store of a call without a conversation enforces all). */
  stateLimits: StateLimits;
  logger: Logger;
  cancelGraceMs: number;
  retry: RetryOptions;
  tracker: CallTracker;
  /** Where calls are known beyond this host (absent: this host only). */
  fleet?: CallDirectory;
  audit: AuditLog;
  approve: ApprovalHook;
  /** Levels a result may nest (see result-depth.ts). */
  maxResultDepth: number;
  /** Bytes a request to the calling client, or its answer, may take (see client-gate.ts). */
  clientRequestBytes: number;
  /** Told about every terminal event of an accepted or rejected call (metrics). */
  onFinished(tool: string, event: TerminalEvent): void;
  /** Told about every time a call hit one of the host's limits (metrics); `limit` is the limit's config key. */
  onLimit(tool: string, limit: string): void;
}

/** A call refused after it was tracked (by the approval hook): it ends with `stage: 'rejected'`. */
export class CallRejection {
  constructor(readonly error: ToolhostError) {}
}

export class Call {
  readonly id: string;
  /** What admission decided: the only description of the call below admission. */
  readonly plan: CallPlan;
  readonly deps: CallDeps;
  /** The tool's view of its call. */
  readonly context: ToolContext;
  /** Where the runner reports events and measurements. */
  readonly sink: RunnerSink;
  readonly startedAt = performance.now();
  /**
   * The two signals, made when first read (an AbortController and its signal
   * cost ~5 µs, aborting one ~7 µs: most sandboxed calls read neither, see
   * `watch`). What they would say is kept here meanwhile.
   */
  #soft: AbortController | undefined;
  #hard: AbortController | undefined;
  /** Why the soft signal is (or would be) aborted: a cancel or a stop; `over` once the call ended. */
  #softReason: unknown;
  #softAborted = false;
  #over = false;
  #hardReason: unknown;
  #hardAborted = false;
  #watchers: CallWatcher[] | undefined;
  readonly #channel = new EventChannel<ToolEvent>();
  #graceTimer: NodeJS.Timeout | undefined;
  #cancelRequested = false;
  #finished = false;
  #events = 0;
  #deltas = 0;
  #attempts = 0;
  #measured: ReportedAccounting = {};
  readonly refusals = new HostRefusals(); // what the host refused the tool: a tool that ends with one ends the call with it
  readonly #onCallerAbort = (): void => this.requestCancel();
  /** The call's span when the host traces: an entry point's server span, or the call's own `execute_tool` span. */
  readonly span: TraceSpan | undefined;
  /** Whether the call ends `span` (its own), or the entry point that opened it does. */
  readonly #ownsSpan: boolean;
  /** The span runners make their children under: the call's, or a retry's (layers.ts). */
  attemptSpan: TraceSpan | undefined;
  #logger: Logger | undefined;

  constructor(deps: CallDeps, plan: CallPlan, span?: TraceSpan, ownsSpan = false) {
    this.id = plan.callId;
    this.plan = plan;
    this.deps = deps;
    this.span = span;
    this.attemptSpan = span;
    this.#ownsSpan = ownsSpan;
    const { tool, conversationKey } = plan;
    const source = tool.executionMode === 'native' ? 'native' : 'guest';
    this.sink = new CallSink(this, {
      progress: (pct, message) => {
        const event: ToolEvent = { type: 'progress', callId: this.id };
        if (typeof pct === 'number' && Number.isFinite(pct)) event.pct = Math.min(100, Math.max(0, pct));
        if (message !== undefined) event.message = message;
        this.emit(event);
      },
      delta: (data) => {
        this.#deltas += 1;
        this.emit({ type: 'delta', callId: this.id, data });
      },
      log: (level, message, from = source) => this.emit({ type: 'log', callId: this.id, level, message, source: from }),
      account: (partial) => {
        Object.assign(this.#measured, partial);
      },
      limit: (limit) => deps.onLimit(tool.name, limit), refused: (error) => this.refusals.note(error),
      watch: (watcher) => this.watch(watcher),
    });
    // A call without a conversation gets a scratch store of its own.
    this.context = new CallContext(this, plan, () => {
      const onStateLimit = (limit: StateLimitName): void => deps.onLimit(tool.name, limit);
      // Each component's own namespace of the conversation, unless its grant shares one (state.ts stateNamespace).
      const access = tool.grant?.state?.access ?? 'write';
      return conversationKey !== undefined
        ? new ConversationState(deps.stateStore, stateScope(conversationKey, stateNamespace(tool)), this.logger, deps.stateLimits.maxValueBytes, onStateLimit, access)
        : new ConversationState(new InMemoryStateStore(deps.stateLimits), this.id, this.logger, deps.stateLimits.maxValueBytes, onStateLimit, access);
    }, () => new ClientGate(this, plan.client));
  }

  /** The host's logger; for a traced call, its lines carry the call's `trace_id` and `span_id` (made when first used). */
  get logger(): Logger {
    if (this.span === undefined) return this.deps.logger;
    return (this.#logger ??= this.deps.logger.child(traceFields(this.span)));
  }

  /** Record an audit entry, joined to the call's span when it has one. */
  audit(entry: AuditEntry, level?: 'info' | 'warn'): void {
    this.deps.audit.record(this.span === undefined ? entry : { ...entry, ...traceFields(this.span) }, level);
  }

  /**
   * Track the call (so it can be cancelled by id) and listen to the caller's
   * signal. False when a call with this id is already in flight.
   */
  track(): boolean {
    if (!this.deps.tracker.begin(this.id, () => this.requestCancel(), this.plan.principal)) return false;
    const { signal } = this.plan;
    if (signal?.aborted) this.requestCancel();
    signal?.addEventListener('abort', this.#onCallerAbort, { once: true });
    return true;
  }

  /** The caller's events. */
  stream(): CallEvents {
    return new CallEvents(this.id, () => this.deps.tracker.cancel(this.id, this.plan.principal), this.#channel);
  }

  get cancelRequested(): boolean {
    return this.#cancelRequested;
  }

  /** Aborted when the tool should stop (cooperatively), or once the call is over. */
  get softSignal(): AbortSignal {
    if (!this.#soft) {
      this.#soft = new AbortController();
      if (this.#softAborted) this.#soft.abort(this.#softReason);
      else if (this.#over) this.#soft.abort(callOver(this.id));
    }
    return this.#soft.signal;
  }

  /** Aborted when the call is stopped hard (the runner must stop the tool at once). */
  get hardSignal(): AbortSignal {
    if (!this.#hard) {
      this.#hard = new AbortController();
      if (this.#hardAborted) this.#hard.abort(this.#hardReason);
    }
    return this.#hard.signal;
  }

  /** Why the call was stopped hard, once it was. */
  get hardStop(): { reason: unknown } | undefined {
    return this.#hardAborted ? { reason: this.#hardReason } : undefined;
  }

  /** Be told when the call is asked to stop, or stopped hard, without the signals (see RunnerSink.watch). */
  watch(watcher: CallWatcher): () => void {
    if (this.#softAborted) watcher.cancel?.();
    if (this.#hardAborted) {
      watcher.hard?.(this.#hardReason);
      return () => {};
    }
    (this.#watchers ??= []).push(watcher);
    return () => {
      const at = this.#watchers?.indexOf(watcher) ?? -1;
      if (at !== -1) this.#watchers!.splice(at, 1);
    };
  }

  #abortSoft(reason: unknown): void {
    if (this.#softAborted || this.#over) return;
    this.#softAborted = true;
    this.#softReason = reason;
    this.#soft?.abort(reason);
    for (const watcher of this.#watchers ?? []) watcher.cancel?.();
  }

  #abortHard(reason: unknown): void {
    if (this.#hardAborted) return;
    this.#hardAborted = true;
    this.#hardReason = reason;
    this.#hard?.abort(reason);
    const watchers = this.#watchers;
    this.#watchers = undefined;
    for (const watcher of watchers ?? []) watcher.hard?.(reason);
  }

  /** Ask the tool to stop; stop it hard when it has not after the grace. */
  requestCancel(): void {
    if (this.#cancelRequested || this.#hardAborted) return;
    this.#cancelRequested = true;
    const reason = new ToolhostError('CANCELLED', 'the call was cancelled by its caller', { callId: this.id });
    this.#abortSoft(reason);
    this.#graceTimer = setTimeout(() => this.#abortHard(reason), this.deps.cancelGraceMs);
    this.#graceTimer.unref?.();
  }

  /** Stop the call now, for `reason` (a budget): both signals fire. */
  stop(reason: ToolhostError): void {
    this.#abortSoft(reason);
    this.#abortHard(reason);
  }

  /** One more attempt is starting (retries count them). */
  beginAttempt(): number {
    this.#attempts += 1;
    return this.#attempts;
  }

  /** A non-terminal event for the caller; dropped once the call has ended. */
  emit(event: ToolEvent): void {
    if (this.#finished) return;
    this.#events += 1;
    this.#channel.push(event);
  }

  /** The `start` event: the call was accepted and is about to run. */
  announce(): void {
    const { tool, conversationId, sessionId, agentName } = this.plan;
    this.#channel.push({
      type: 'start',
      callId: this.id,
      toolId: tool.name,
      metadata: {
        executionMode: tool.executionMode,
        ...(conversationId === undefined ? {} : { conversationId }),
        ...(sessionId === undefined ? {} : { sessionId }),
        ...(agentName === undefined ? {} : { agentName }),
      },
    });
  }

  accounting(): CallAccounting {
    return accountingOf(this.#measured, elapsed(this.startedAt), this.#attempts, this.#events);
  }

  /** End the call with what its run returned; a result the host cannot carry ends it with an error instead. */
  succeed(run: ToolRun): void {
    let result: ToolResult;
    try {
      const limit = this.deps.maxResultDepth;
      const value = isRichResult(run.output) ? run.output.structuredContent : run.output;
      if (nestsDeeperThan(value, limit)) {
        throw new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `the result nests more than ${limit} levels deep (host.output_limits.max_result_depth)`, {
          callId: this.id,
          details: { limit: 'max_result_depth', maxDepth: limit },
        });
      }
      result = toResult(run);
    } catch (error) {
      // Also what a native tool's unserializable value (a BigInt, say) becomes.
      this.fail(error);
      return;
    }
    const accounting = this.accounting();
    result.accounting = accounting;
    this.#finish({ type: 'result', callId: this.id, data: result.structuredContent ?? null, result, accounting });
  }

  /** End the call with what its run threw, by the precedence table. */
  fail(error: unknown): void {
    if (error instanceof CallRejection) {
      this.#finish(errorEvent(this.id, error.error.toData(), 'rejected', { ...this.accounting(), attempts: 0 }));
      return;
    }
    const accounting = this.accounting();
    const data = failureOf({
      callId: this.id,
      tool: this.plan.tool.name,
      hardStop: this.#hardAborted ? this.#hardReason : undefined,
      cancelRequested: this.#cancelRequested,
      error,
      networkDenied: accounting.networkDenied ?? [],
      network: this.plan.capabilities.network,
      deltas: this.#deltas,
      waitingForWorker: accounting.waitingForWorker === true, refusals: this.refusals,
    });
    this.#finish(errorEvent(this.id, data, 'run', accounting));
  }

  #finish(event: TerminalEvent): void {
    if (this.#finished) return;
    this.#finished = true;
    const { tool, signal, principal } = this.plan;
    const { logger } = this.deps;
    // Built only when it is written: at the default level (warn) it never is, and it cost every call.
    if (logger.isLevelEnabled?.('info') !== false) this.logger.info({ callId: this.id, tool: tool.name, outcome: event.type === 'result' ? 'ok' : event.code, ...event.accounting }, 'call finished');
    if (this.span !== undefined) endCallSpan(this.span, event, this.#ownsSpan);
    clearTimeout(this.#graceTimer);
    signal?.removeEventListener('abort', this.#onCallerAbort);
    this.deps.tracker.end(this.id, principal);
    this.#channel.push(event);
    this.#channel.close();
    this.deps.onFinished(tool.name, event);
    // Anything still listening (a native tool ignoring its signal) learns the call is over;
    // a signal nobody made yet is made aborted if it is ever read.
    if (!this.#softAborted && !this.#over) {
      this.#over = true;
      this.#soft?.abort(callOver(this.id));
    }
    this.#watchers = undefined;
  }
}

/**
 * A call refused before it started: its stream holds only the error, with
 * `stage: 'rejected'`; `onEvent` sees that event too (metrics).
 */
export function rejectedCall(callId: string, error: unknown, startedAt = performance.now(), onEvent?: (event: ErrorEvent) => void): CallEvents {
  const event = errorEvent(callId, toErrorData(error, callId), 'rejected', { wallMs: elapsed(startedAt), queuedMs: 0, attempts: 0, events: 0 });
  const channel = new EventChannel<ToolEvent>();
  channel.push(event);
  channel.close();
  onEvent?.(event);
  return new CallEvents(callId, () => 'ALREADY_COMPLETED', channel);
}

/** A call's events as its caller sees them (see CallStream), read either way: all of them, or the terminal one alone. */
export class CallEvents implements CallStream {
  readonly callId: string;
  readonly cancel: () => CancelOutcome;
  readonly #channel: EventChannel<ToolEvent>;

  constructor(callId: string, cancel: () => CancelOutcome, channel: EventChannel<ToolEvent>) {
    this.callId = callId;
    this.cancel = cancel;
    this.#channel = channel;
  }

  [Symbol.asyncIterator](): AsyncIterator<ToolEvent> {
    return this.#channel[Symbol.asyncIterator]();
  }

  /**
   * The terminal event, for a caller that wants only that (`execute`): the
   * other events are not kept. A call's channel is closed right after its
   * terminal event (Call.#finish, rejectedCall) and only then, so its last
   * event is the terminal one; handed on as it comes (a check in a handler
   * would add a turn to every call).
   */
  terminal(): Promise<TerminalEvent> {
    return this.#channel.last() as Promise<TerminalEvent>;
  }
}

function toResult(run: ToolRun): ToolResult {
  const output = run.output;
  if (isRichResult(output)) {
    const result: ToolResult = { content: output.content, isError: false };
    if (output.structuredContent !== undefined) result.structuredContent = output.structuredContent;
    return result;
  }
  return jsonResult(output === undefined ? null : output, run.text);
}

function errorEvent(callId: string, data: ToolErrorData, stage: ErrorEvent['stage'], accounting: CallAccounting): ErrorEvent {
  const event: ErrorEvent = { type: 'error', callId, code: data.code, message: data.message, stage, accounting };
  if (data.details !== undefined) event.details = data.details;
  return event;
}

const elapsed = (since: number): number => Math.round((performance.now() - since) * 1000) / 1000;

/**
 * The reason the soft signal ends with once a call is over. Made for every
 * call, so without a stack trace (nobody reads it; capturing it cost ~10 µs).
 */
function callOver(callId: string): ToolhostError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ToolhostError('CANCELLED', 'the call is over', { callId });
  } finally {
    Error.stackTraceLimit = limit;
  }
}
