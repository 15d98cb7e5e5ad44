/** What a caller says about one call, and what it gets back. */
import type { ExecutionPolicyInput } from '../../policy/execution-policy.js';
import type { CancelOutcome } from '../errors.js';
import type { ToolEvent } from '../events.js';
import type { Extensions } from '../extensions.js';

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
