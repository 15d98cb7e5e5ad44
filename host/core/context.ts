/** What a running tool knows about its call. */
import type { CallCapabilities } from '../policy/capabilities.js';
import type { CallBudgets, ExecutionPolicy } from '../policy/execution-policy.js';
import type { Extensions } from './extensions.js';
import type { ConversationState } from './state.js';
import type { GatedClient } from './client-requests.js';
import type { TraceSpan } from './tracing.js';

export interface ToolContext {
  readonly callId: string;
  readonly conversationId?: string;
  /**
   * Where the conversation's state (and, in `conversation` isolation, its
   * instances) lives: the id scoped by the principal, so two principals naming
   * one conversation never meet. Key a tool's own per-conversation data by it.
   */
  readonly conversationKey?: string;
  /** The authenticated caller, when a server named one (see CallOptions.principal). */
  readonly principal?: string;
  readonly sessionId?: string;
  readonly agentName?: string;
  /** The worktree bound to this call, if any. */
  readonly workingDir?: string;
  /** Environment values granted to the call (empty below ELEVATED; then only allowlisted keys). */
  readonly env: Readonly<Record<string, string>>;
  /** What the call may use: labels, worktree and mode, env (the capability layer builds guests' WASI from it). */
  readonly capabilities: CallCapabilities;
  /** Aborts when the caller cancels or a budget ends the call; tools should stop promptly. */
  readonly signal: AbortSignal;
  /** The conversation's state (a scratch scope when the call has no conversation). */
  readonly state: ConversationState;
  /** Typed values the host hands to native tools. */
  readonly extensions: Extensions;
  /** The execution policy the caller asked for. */
  readonly policy: ExecutionPolicy;
  /** The limits the call runs under: the policy with host defaults and ceilings applied. */
  readonly budgets: CallBudgets;
  /**
   * The client that made the call: its model (sampling) and its user (elicitation), within the tool's
   * grant and the per-call caps. Refusals are ToolhostErrors: PERMISSION_DENIED (not granted, past a cap),
   * CLIENT_UNSUPPORTED (the caller cannot answer), OUTPUT_LIMIT_EXCEEDED (too large), CANCELLED.
   */
  readonly client: GatedClient;
  /**
   * The call's span when the host traces (OpenTelemetry; absent otherwise): a native tool may open children
   * under it (`span.child(name)`) or hand `span.carrier()` to a request it makes for the call. Never put
   * argument values, results or secrets in its attributes.
   */
  readonly span?: TraceSpan;
  /** Shorthand for `state.getState`: never throws. */
  getState<T>(key: string, fallback: T): Promise<T>;
  /** Shorthand for `state.setState`: throws a ToolhostError on failure. */
  setState(key: string, value: unknown): Promise<void>;
}
