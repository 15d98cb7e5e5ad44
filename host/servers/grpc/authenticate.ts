/**
 * Who a gRPC request comes from: its `authorization` metadata, asked of the
 * same {@link Authenticator} as MCP HTTP (static tokens, OAuth access tokens).
 *
 * Guarantees: a request without valid credentials (when any are configured)
 * gets UNAUTHENTICATED (`toolhost-error-code: PERMISSION_DENIED`, with why in
 * `toolhost-error-details-bin`: `{ reason, error }`, e.g. `expired`, `invalid_token`), or
 * UNAVAILABLE when an access token cannot be checked now (the authorization
 * server is away, or too many checks wait: retry), or RESOURCE_EXHAUSTED when
 * the peer's address asked for too many token checks; each refusal is counted once. What the credentials
 * add to a call (tenant, label ceiling) comes from them, never from the request.
 *
 * It does not decide anything about the call itself: admission does.
 */
import { status as GrpcStatus, type Metadata, type ServerErrorResponse } from '@grpc/grpc-js';
import { callerOptions, refusedReason, type Authenticator } from '../auth/caller.js';
import type { CallOptions } from '../../core/call/options.js';
import { toServiceError } from './status.js';

/** Who a request comes from: the token's principal, or {@link ANONYMOUS} (no token configured). */
export type Principal = string;
/** An authenticated request: its principal, and what its credentials add to its calls (tenant, label ceiling). */
export interface Who {
  principal: Principal;
  adds: Pick<CallOptions, 'tenant' | 'labelCeiling'>;
}
/** Anyone, on a server without tokens (its calls carry no principal: one shared space). */
export const ANONYMOUS = '\u0000anonymous';

/** The principal a request's calls and cancels carry (none for {@link ANONYMOUS}). */
export function callerPrincipal(principal: Principal): string | undefined {
  return principal === ANONYMOUS ? undefined : principal;
}

/**
 * A gRPC request's caller from its `authorization` metadata (anyone when no
 * authenticator is configured), or the status to refuse it with:
 * UNAUTHENTICATED, or UNAVAILABLE when an access token cannot be checked now.
 */
export async function authenticateGrpc(
  auth: Authenticator | undefined,
  call: { metadata: Metadata; getPeer?: () => string },
  refused: (reason: string) => void,
): Promise<Who | { refused: ServerErrorResponse }> {
  if (auth === undefined) return { principal: ANONYMOUS, adds: {} };
  const presented = call.metadata.get('authorization')[0];
  const checked = await auth.authenticate(typeof presented === 'string' ? presented : undefined, { address: peerAddress(call.getPeer?.()) });
  if (checked.ok) {
    const { principal: _principal, ...adds } = callerOptions(checked.caller);
    return { principal: checked.caller.principal, adds };
  }
  refused(refusedReason(checked));
  const retry = checked.status !== 401;
  // Too many checks (this peer's rate, or the waiting line full): OVERLOADED with the reason, a transient error.
  const overloaded = checked.reason === 'rate_limited' || checked.reason === 'busy';
  const error = toServiceError(overloaded
    ? { code: 'OVERLOADED', message: checked.message, details: { reason: checked.reason, retry_after_s: checked.retryAfterSec ?? 1 } }
    : {
      code: 'PERMISSION_DENIED',
      message: retry ? checked.message : `a valid bearer token is required: send "authorization: Bearer <token>" metadata (${checked.message})`,
      // Why, as MCP HTTP's WWW-Authenticate says it: missing, expired, audience, issuer, signature, token_type... (issue 38).
      details: { reason: checked.reason, ...(checked.error === undefined ? {} : { error: checked.error }) },
    });
  const code = checked.status === 503 ? GrpcStatus.UNAVAILABLE : checked.status === 429 ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.UNAUTHENTICATED;
  return { refused: Object.assign(error, { code }) };
}

/** The address of grpc-js's `getPeer()` (`ADDRESS:PORT`, IPv6 without brackets), or the text as it is. */
export function peerAddress(peer: string | undefined): string | undefined {
  if (peer === undefined) return undefined;
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(peer);
  return match?.[1] ?? peer;
}
