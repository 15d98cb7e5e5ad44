/** What a caller says about one call, and what it gets back. */
import type { ExecutionPolicyInput } from '../../policy/execution-policy.js';
import type { LabelCeiling } from '../../policy/labels.js';
import type { CancelOutcome } from '../../base/errors.js';
import type { ToolEvent } from '../events.js';
import type { Extensions } from '../extensions.js';
import type { CallClient } from '../client-requests.js';
import type { TraceCarrier, TraceSpan } from '../tracing.js';

/** What a caller may say about one call. */
export interface CallOptions {
  /** The call's id (a UUID is made when absent); unique among calls in flight. */
  callId?: string;
  conversationId?: string;
  /**
   * Who is calling, as a server authenticated them (a named token's principal). Conversations are
   * scoped to it: the same conversation id names different state (and instances) for two principals,
   * and a cancel by this principal reaches only its own calls. Absent: the library's caller, or a
   * server without authentication (one shared space, as before).
   */
  principal?: string;
  /**
   * The tenant the call counts against for the fleet's per-tenant caps, as a server authenticated it
   * (an OAuth token's tenant claim). Absent: the principal is the tenant.
   */
  tenant?: string;
  /**
   * The most the caller may ask for, as a server authenticated it (an OAuth token's scopes): a call
   * whose labels pass it is refused (PERMISSION_DENIED for network, TOOL_PRIVILEGE_ESCALATION for
   * privilege), whatever the tool's grant allows. Absent: only the grant caps the call.
   */
  labelCeiling?: LabelCeiling;
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
  /**
   * How the caller answers its tool's requests (sampling, elicitation). Absent: it cannot, and a tool
   * that asks gets CLIENT_UNSUPPORTED. The MCP server passes the hooks its client declared.
   */
  client?: CallClient;
  /**
   * The caller's W3C trace context (`traceparent`, `tracestate`, `baggage`): with a tracer, the call's spans
   * continue that trace (an `execute_tool <tool>` span, child of the caller's). Ignored without a tracer.
   */
  trace?: TraceCarrier;
  /**
   * A span an entry point opened for this call (the MCP and gRPC servers' server spans): the call's spans are
   * its children, its attributes and error are set on it, and the entry ends it. Wins over `trace`.
   */
  span?: TraceSpan;
}

/** One call's events, with its id and a way to cancel it. */
export interface CallStream extends AsyncIterable<ToolEvent> {
  readonly callId: string;
  cancel(): CancelOutcome;
}
