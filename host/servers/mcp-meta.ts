/**
 * The `_meta` keys toolhost reads from an MCP request and writes on its result, and the one reader that turns a
 * `tools/call` request's `_meta` into call options. Both protocol legs (2025-11-25 and 2026-07-28) use it, so a key
 * means the same on either. What the reader does not decide: the principal, tenant and label ceiling come from the
 * request's credentials, never from `_meta`; a policy is parsed and checked against the grant by the call path.
 */
import type { CallOptions } from '../core/call/options.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';

/** The `_meta` keys of a `tools/call` request that toolhost reads, and of its result. */
export const MCP_META_KEYS = {
  /** Request: an ExecutionPolicy object (proto field names); it can only narrow the tool's grant. */
  policy: 'toolhost/policy',
  /** Request: the conversation whose state the call reads and writes. */
  conversationId: 'toolhost/conversationId',
  /** Request: the agent's session (defaults to the MCP session id, when the transport has one). */
  sessionId: 'toolhost/sessionId',
  /** Request: the calling agent's name. */
  agentName: 'toolhost/agentName',
  /** Result: the call's id. Request: the id to give the call (default a UUID), so it can be cancelled by id (`toolhost_cancel`, gRPC Cancel) from any host. */
  callId: 'toolhost/callId',
  /** Result: the call's accounting (wall ms, CPU ms, memory, attempts...). */
  accounting: 'toolhost/accounting',
  /** Result: the failure `{ code, message, details }` when `isError` is true. */
  error: 'toolhost/error',
  /** Progress notification: set when the notification carries a delta. */
  delta: 'toolhost/delta',
} as const;

/** The call options a request's `_meta` carries; a key present with another type than a non-empty string throws. */
export function metaCallOptions(meta: Record<string, unknown>, transportSessionId?: string): Pick<CallOptions, 'callId' | 'conversationId' | 'sessionId' | 'agentName' | 'policy'> {
  const text = (key: string): string | undefined => {
    const value = meta[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string' || value.length === 0) throw new Error(`_meta["${key}"] must be a non-empty string`);
    return value;
  };
  const options: Pick<CallOptions, 'callId' | 'conversationId' | 'sessionId' | 'agentName' | 'policy'> = {};
  const callId = text(MCP_META_KEYS.callId);
  if (callId !== undefined) options.callId = callId;
  const conversationId = text(MCP_META_KEYS.conversationId);
  if (conversationId !== undefined) options.conversationId = conversationId;
  const sessionId = text(MCP_META_KEYS.sessionId) ?? transportSessionId;
  if (sessionId !== undefined) options.sessionId = sessionId;
  const agentName = text(MCP_META_KEYS.agentName);
  if (agentName !== undefined) options.agentName = agentName;
  const policy = meta[MCP_META_KEYS.policy];
  if (policy !== undefined && policy !== null) options.policy = policy as ExecutionPolicyInput;
  return options;
}
