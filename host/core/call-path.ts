/**
 * The one call path every entry point uses:
 * lookup → policy → validate → run → stream events → exactly one terminal event.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  DEFAULT_POLICY_DEFAULTS,
  parseExecutionPolicy,
  resolveBudgets,
  type CallBudgets,
  type ExecutionPolicy,
  type ExecutionPolicyInput,
  type PolicyDefaults,
} from '../policy/execution-policy.js';
import type { ApprovalHook } from '../policy/approval.js';
import type { AuditLog } from '../policy/audit.js';
import { resolveCapabilities, type ResolvedCapabilities } from '../policy/capabilities.js';
import type { CallTracker } from './call-tracker.js';
import type { ToolContext } from './context.js';
import { ToolhostError, toErrorData, type CancelOutcome, type ToolErrorData } from './errors.js';
import { EventChannel } from './event-channel.js';
import type { ErrorEvent, TerminalEvent, ToolEvent, ToolEventSink } from './events.js';
import { Extensions } from './extensions.js';
import type { Logger } from './logger.js';
import { isRichResult, jsonResult, type CallAccounting, type ToolResult } from './result.js';
import { abortableDelay, backoffDelay, isTransient, type RetryOptions } from './retry.js';
import type { ArgsValidator } from './schema.js';
import { ConversationState, InMemoryStateStore, type StateStore } from './state.js';
import type { Tool, ToolRun } from './tool.js';

/** What a caller may say about one call. */
export interface CallOptions {
  /** The call's id (a UUID is made when absent); unique among calls in flight. */
  callId?: string;
  conversationId?: string;
  sessionId?: string;
  agentName?: string;
  /** The worktree bound to the call. */
  workingDir?: string;
  /** Environment values offered to the call (a tool sees only what its grant allows). */
  env?: Record<string, string>;
  /** Aborting it cancels the call (cooperatively first, then hard after the grace). */
  signal?: AbortSignal;
  /** The requested ExecutionPolicy, in the proto's field names (see `parseExecutionPolicy`). */
  policy?: ExecutionPolicyInput;
  /** Typed values for native tools. */
  extensions?: Extensions;
}

/** One call's events, with its id and a way to cancel it. */
export interface CallStream extends AsyncIterable<ToolEvent> {
  readonly callId: string;
  cancel(): CancelOutcome;
}

export interface RegisteredTool {
  tool: Tool;
  validate: ArgsValidator;
}

export interface CallPathDeps {
  lookup(name: string): RegisteredTool | undefined;
  suggest(name: string): string[];
  stateStore: StateStore;
  logger: Logger;
  defaults: PolicyDefaults;
  cancelGraceMs: number;
  retry: RetryOptions;
  tracker: CallTracker;
  audit: AuditLog;
  approve: ApprovalHook;
  /** Where allowlisted env values come from last. */
  hostEnv: NodeJS.ProcessEnv;
  /** Told about every terminal event of an accepted or rejected call (metrics). */
  onFinished(tool: string, event: TerminalEvent): void;
}

export const DEFAULT_CANCEL_GRACE_MS = 500;
export { DEFAULT_POLICY_DEFAULTS };

function callStream(callId: string, channel: EventChannel<ToolEvent>, tracker: CallTracker | undefined): CallStream {
  return {
    callId,
    cancel: () => tracker?.cancel(callId) ?? 'ALREADY_COMPLETED',
    [Symbol.asyncIterator]: () => channel[Symbol.asyncIterator](),
  };
}

/**
 * A call refused before it started: its stream holds only the error, with
 * `stage: 'rejected'`; `onEvent` sees that event too (metrics).
 */
export function rejectedCall(callId: string, error: unknown, startedAt = performance.now(), onEvent?: (event: ErrorEvent) => void): CallStream {
  const event = errorEvent(callId, toErrorData(error, callId), 'rejected', { wallMs: elapsed(startedAt), queuedMs: 0, attempts: 0, events: 0 });
  const channel = new EventChannel<ToolEvent>();
  channel.push(event);
  channel.close();
  onEvent?.(event);
  return callStream(callId, channel, undefined);
}

/** Start a call now; its events can be iterated once. */
export function startCall(deps: CallPathDeps, name: string, args: unknown, options: CallOptions = {}): CallStream {
  const callId = options.callId ?? randomUUID();
  const startedAt = performance.now();
  const rejected = (error: unknown): CallStream => rejectedCall(callId, error, startedAt, (event) => deps.onFinished(name, event));

  const registered = deps.lookup(name);
  if (!registered) {
    const suggestions = deps.suggest(name);
    const hint = suggestions.length > 0 ? `; did you mean ${suggestions.map((s) => `"${s}"`).join(' or ')}?` : '';
    return rejected(new ToolhostError('TOOL_NOT_FOUND', `no tool named "${name}"${hint}`, { details: { name } }));
  }
  let policy: ExecutionPolicy;
  let budgets: CallBudgets;
  let resolved: ResolvedCapabilities;
  try {
    const toolDefaults = parseExecutionPolicy(registered.tool.defaultPolicy);
    // The tool's default policy fills in what the call leaves out; the grant caps both.
    policy = { ...toolDefaults, ...parseExecutionPolicy(options.policy) };
    budgets = resolveBudgets(policy, deps.defaults, registered.tool.grant);
    registered.validate(args, callId);
    resolved = resolveCapabilities({
      callId,
      tool: registered.tool.name,
      policy,
      toolDefaults,
      grant: registered.tool.grant ?? {},
      defaults: deps.defaults,
      ...(options.workingDir === undefined ? {} : { workingDir: options.workingDir }),
      ...(options.env === undefined ? {} : { env: options.env }),
      hostEnv: deps.hostEnv,
    });
  } catch (error) {
    if (error instanceof ToolhostError && (error.code === 'PERMISSION_DENIED' || error.code === 'TOOL_PRIVILEGE_ESCALATION' || error.code === 'WORKTREE_NOT_BOUND')) {
      const labels = (error.details ?? {}) as { network?: never; privilege?: never };
      deps.audit.record({ callId, tool: registered.tool.name, ...labels, decision: 'denied', code: error.code, reason: error.message });
    }
    return rejected(error);
  }
  const { capabilities } = resolved;
  // Native tools see the worktree bound to the call (or the tool's), whatever the privilege: they are trusted code.
  const workingDir = options.workingDir ?? registered.tool.grant?.worktree;
  if (typeof options.callId === 'string' && options.callId.length === 0) {
    return rejected(new ToolhostError('INVALID_INPUT', 'callId must not be empty'));
  }

  const soft = new AbortController();
  const hard = new AbortController();
  let cancelRequested = false;
  let graceTimer: NodeJS.Timeout | undefined;
  const requestCancel = (): void => {
    if (cancelRequested || hard.signal.aborted) return;
    cancelRequested = true;
    const reason = new ToolhostError('CANCELLED', 'the call was cancelled by its caller', { callId });
    soft.abort(reason);
    graceTimer = setTimeout(() => hard.abort(reason), deps.cancelGraceMs);
    graceTimer.unref?.();
  };
  if (!deps.tracker.begin(callId, requestCancel)) {
    return rejected(new ToolhostError('INVALID_INPUT', `call id "${callId}" is already in flight`));
  }
  const onCallerAbort = (): void => requestCancel();
  if (options.signal?.aborted) requestCancel();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });

  const wallTimer = setTimeout(() => {
    const what = budgets.wallCode === 'WALL_TIMEOUT' ? 'wall-clock budget' : 'timeout';
    const reason = new ToolhostError(budgets.wallCode, `the call ran past its ${what} of ${budgets.wallMs} ms`, { callId, details: { limitMs: budgets.wallMs } });
    soft.abort(reason);
    hard.abort(reason);
  }, budgets.wallMs);
  wallTimer.unref?.();

  const channel = new EventChannel<ToolEvent>();
  const stream = callStream(callId, channel, deps.tracker);
  const tool = registered.tool;
  let events = 0;
  let deltas = 0;
  let runner: Partial<CallAccounting> = {};
  let attempts = 0;
  let finished = false;
  const accounting = (): CallAccounting => ({
    queuedMs: 0,
    ...runner,
    wallMs: elapsed(startedAt),
    attempts,
    events,
  });
  const emit = (event: ToolEvent): void => {
    if (finished) return;
    events += 1;
    channel.push(event);
  };
  const sink: ToolEventSink = {
    progress(pct, message) {
      const event: ToolEvent = { type: 'progress', callId };
      if (typeof pct === 'number' && Number.isFinite(pct)) event.pct = Math.min(100, Math.max(0, pct));
      if (message !== undefined) event.message = message;
      emit(event);
    },
    delta(data) {
      deltas += 1;
      emit({ type: 'delta', callId, data });
    },
    log(level, message, source = tool.executionMode === 'native' ? 'native' : 'guest') {
      emit({ type: 'log', callId, level, message, source });
    },
    account(partial) {
      runner = { ...runner, ...partial };
    },
    hardSignal: hard.signal,
  };
  const state = options.conversationId
    ? new ConversationState(deps.stateStore, options.conversationId, deps.logger)
    : new ConversationState(new InMemoryStateStore(), callId, deps.logger);
  const ctx: ToolContext = {
    callId,
    ...(options.conversationId === undefined ? {} : { conversationId: options.conversationId }),
    ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    ...(options.agentName === undefined ? {} : { agentName: options.agentName }),
    ...(workingDir === undefined ? {} : { workingDir }),
    env: Object.freeze({ ...capabilities.env }),
    capabilities,
    signal: soft.signal,
    state,
    extensions: options.extensions ?? new Extensions(),
    policy,
    budgets,
    getState: (key, fallback) => state.getState(key, fallback),
    setState: (key, value) => state.setState(key, value),
  };

  const metadata: ToolEvent & { type: 'start' } = {
    type: 'start',
    callId,
    toolId: tool.name,
    metadata: {
      executionMode: tool.executionMode,
      ...(options.conversationId === undefined ? {} : { conversationId: options.conversationId }),
      ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
      ...(options.agentName === undefined ? {} : { agentName: options.agentName }),
    },
  };

  const finish = (event: TerminalEvent): void => {
    if (finished) return;
    finished = true;
    const { accounting: acc } = event;
    deps.logger.info(
      { callId, tool: tool.name, outcome: event.type === 'result' ? 'ok' : event.code, ...acc },
      'call finished',
    );
    clearTimeout(wallTimer);
    clearTimeout(graceTimer);
    options.signal?.removeEventListener('abort', onCallerAbort);
    deps.tracker.end(callId);
    channel.push(event);
    channel.close();
    deps.onFinished(tool.name, event);
    // Anything still listening (a native tool ignoring its signal) learns the call is over.
    if (!soft.signal.aborted) soft.abort(new ToolhostError('CANCELLED', 'the call is over', { callId }));
  };

  const retries = tool.idempotent ? budgets.maxRetries : 0;
  const attempt = async (): Promise<ToolRun> => {
    for (;;) {
      attempts += 1;
      try {
        return await runTool(tool, args, ctx, sink);
      } catch (error) {
        if (attempts > retries || !isTransient(error) || soft.signal.aborted) throw error;
        const delay = backoffDelay(attempts, deps.retry);
        const code = (error as ToolhostError).code;
        sink.log('warn', `attempt ${attempts} failed with ${code}; retrying in ${Math.round(delay)} ms`, 'native');
        await abortableDelay(delay, soft.signal);
      }
    }
  };

  /** Approval (when the call needs it) and the audit entry, then the start event. */
  const admit = async (): Promise<void> => {
    if (resolved.approval) {
      let approved = false;
      try {
        approved = (await deps.approve({
          ...resolved.approval,
          ...(options.conversationId === undefined ? {} : { conversationId: options.conversationId }),
          ...(options.agentName === undefined ? {} : { agentName: options.agentName }),
        })) === true;
      } catch (error) {
        deps.logger.warn({ callId, err: (error as Error).message }, 'the approval hook failed; treating it as a refusal');
      }
      if (!approved) {
        const reason = `the call needs approval (${resolved.approval.reasons.join(', ')}) and the approval hook did not give it`;
        deps.audit.record({ callId, tool: tool.name, network: capabilities.network, privilege: capabilities.privilege, decision: 'denied', code: 'PERMISSION_DENIED', reason });
        throw new Rejection(new ToolhostError('PERMISSION_DENIED', reason, { callId }));
      }
    }
    if (resolved.audit) deps.audit.record(resolved.audit.entry, resolved.audit.level);
    channel.push(metadata);
  };

  // Without an approval to wait for, admit() runs to completion synchronously: `start` is out before this returns.
  void admit().then(attempt).then(
    (run) => {
      const result = toResult(run);
      const acc = accounting();
      result.accounting = acc;
      finish({ type: 'result', callId, data: result.structuredContent ?? null, result, accounting: acc });
    },
    (error: unknown) => {
      if (error instanceof Rejection) {
        finish(errorEvent(callId, error.error.toData(), 'rejected', { ...accounting(), attempts: 0 }));
        return;
      }
      let data: ToolErrorData;
      if (hard.signal.aborted) {
        data = toErrorData(hard.signal.reason, callId);
      } else if (cancelRequested) {
        data = toErrorData(new ToolhostError('CANCELLED', 'the call was cancelled by its caller'), callId);
      } else if (error instanceof ToolhostError) {
        data = error.withCallId(callId).toData();
      } else {
        const message = error instanceof Error ? error.message : String(error);
        data = { code: 'TOOL_CRASHED', message: `tool "${tool.name}" threw: ${message}`, callId };
      }
      if (data.code === 'CANCELLED') data.details = { partial: deltas > 0, deltas };
      finish(errorEvent(callId, data, 'run', accounting()));
    },
  );
  return stream;
}

/** A call refused after it was tracked (e.g. by the approval hook): it ends with `stage: 'rejected'`. */
class Rejection {
  constructor(readonly error: ToolhostError) {}
}

async function runTool(tool: Tool, args: unknown, ctx: ToolContext, sink: ToolEventSink): Promise<ToolRun> {
  const hardSignal = sink.hardSignal;
  if (hardSignal.aborted) throw hardSignal.reason;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(hardSignal.reason);
    hardSignal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([tool.invoke(args, ctx, sink), aborted]);
  } finally {
    if (onAbort) hardSignal.removeEventListener('abort', onAbort);
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

function elapsed(since: number): number {
  return Math.round((performance.now() - since) * 1000) / 1000;
}
