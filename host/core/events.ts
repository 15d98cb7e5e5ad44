/**
 * The events of one call. An accepted call emits `start`, then any number of
 * `progress`, `delta` and `log` events, then exactly one terminal event
 * (`result` or `error`), then nothing. A rejected call (unknown tool, invalid
 * input, refused policy) emits only its `error`, with `stage: 'rejected'`;
 * except args refused by a tool that checks them off the main thread
 * (`Tool.checksOwnArgs`: sandboxed and imported MCP tools), whose `error`
 * (`INVALID_INPUT`, `stage: 'rejected'`: the tool never ran) follows `start`.
 */
import type { ErrorCode, ToolErrorData } from '../base/errors.js';
import type { CallAccounting, ReportedAccounting, ToolResult } from './result.js';
import type { TraceSpan } from './tracing.js';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error'];

export interface StartEvent {
  type: 'start';
  callId: string;
  toolId: string;
  metadata: { executionMode: 'native' | 'sandboxed'; conversationId?: string; sessionId?: string; agentName?: string };
}

export interface ProgressEvent {
  type: 'progress';
  callId: string;
  /** Percent complete, 0..100, when known. */
  pct?: number;
  message?: string;
}

export interface DeltaEvent {
  type: 'delta';
  callId: string;
  /** A piece of partial output (parsed JSON when the tool sent JSON text). */
  data: unknown;
}

export interface LogEvent {
  type: 'log';
  callId: string;
  level: LogLevel;
  message: string;
  /** `guest` for the tool's own log calls, `stdout`/`stderr` for captured guest output. */
  source: 'guest' | 'stdout' | 'stderr' | 'native';
}

export interface ResultEvent {
  type: 'result';
  callId: string;
  /** The tool's output (structured JSON when it produced JSON). */
  data: unknown;
  result: ToolResult;
  accounting: CallAccounting;
}

export interface ErrorEvent {
  type: 'error';
  callId: string;
  code: ErrorCode;
  message: string;
  details?: unknown;
  /** `rejected`: the tool never ran (refused before it; see the header for args checked off the main thread); `run`: it started and failed. */
  stage: 'rejected' | 'run';
  accounting: CallAccounting;
}

export type ToolEvent = StartEvent | ProgressEvent | DeltaEvent | LogEvent | ResultEvent | ErrorEvent;
export type TerminalEvent = ResultEvent | ErrorEvent;

export function isTerminal(event: ToolEvent): event is TerminalEvent {
  return event.type === 'result' || event.type === 'error';
}

/** How a running tool reports non-terminal events, and learns that its call is over. */
export interface ToolEventSink {
  progress(pct?: number, message?: string): void;
  delta(data: unknown): void;
  log(level: LogLevel, message: string, source?: LogEvent['source']): void;
}

/**
 * What a runner gets besides the events: the sandbox and the built-in native
 * runners (HTTP tool, MCP imports) implement `Tool.invoke` with it. A native
 * tool's author (`defineNativeTool`) sees only the {@link ToolEventSink}.
 */
export interface RunnerSink extends ToolEventSink {
  /** Add what the runner measured (queue time, CPU time, instance reuse, refused requests) to the call's accounting. */
  account(accounting: ReportedAccounting): void;
  /** The tool hit one of the host's limits (`limit`: the limit's config key); for metrics. */
  limit?(limit: string): void;
  /**
   * The host refused one of the tool's requests (a state write, say) with this error: a tool that then fails with
   * its code ends the call with it (core/call/refusals.ts).
   */
  refused?(error: ToolErrorData): void;
  /**
   * Aborts when the call is over regardless of the tool (a budget was hit, or
   * a cancel's grace ran out). Runners stop the tool at once; `ctx.signal` is
   * the cooperative signal that precedes it.
   */
  readonly hardSignal: AbortSignal;
  /**
   * The same two moments without AbortSignals (each costs the host ~5 µs to
   * make, and a call's signals are made only when read): `cancel` when the
   * call is asked to stop cooperatively (a cancel or a budget; not its normal
   * end), `hard` when it is stopped hard. Each is called at most once, at once
   * if it already happened. Returns the unsubscribe.
   */
  watch?(watcher: CallWatcher): () => void;
  /**
   * The span of the call's current attempt when the host traces (absent otherwise): a runner makes its children
   * here (the sandbox run, the queue wait, host calls) and hands `carrier()` to requests it makes on the call's
   * behalf where that is allowed. Never put argument values, results or state values in its attributes.
   */
  readonly span?: TraceSpan;
}

/** What `RunnerSink.watch` tells. */
export interface CallWatcher {
  cancel?(): void;
  hard?(reason: unknown): void;
}
