/**
 * Who a gRPC request comes from: its `authorization` metadata, asked of the
 * same {@link Authenticator} as MCP HTTP (static tokens, OAuth access tokens).
 *
 * Guarantees: a request without valid credentials (when any are configured)
 * gets UNAUTHENTICATED (`toolhost-error-code: PERMISSION_DENIED`), or
 * UNAVAILABLE when an access token cannot be checked now (the authorization
 * server is away: retry); each refusal is counted once. What the credentials
 * add to a call (tenant, label ceiling) comes from them, never from the request.
 *
 * It does not decide anything about the call itself: admission does.
 */
import { status as GrpcStatus, type Metadata, type ServerErrorResponse } from '@grpc/grpc-js';
import { callerOptions, type Authenticator } from '../auth/caller.js';
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
  call: { metadata: Metadata },
  refused: (reason: string) => void,
): Promise<Who | { refused: ServerErrorResponse }> {
  if (auth === undefined) return { principal: ANONYMOUS, adds: {} };
  const presented = call.metadata.get('authorization')[0];
  const checked = await auth.authenticate(typeof presented === 'string' ? presented : undefined);
  if (checked.ok) {
    const { principal: _principal, ...adds } = callerOptions(checked.caller);
    return { principal: checked.caller.principal, adds };
  }
  refused(checked.status === 503 ? 'auth_unavailable' : 'unauthenticated');
  const unavailable = checked.status === 503;
  const error = toServiceError({ code: 'PERMISSION_DENIED', message: unavailable ? checked.message : `a valid bearer token is required: send "authorization: Bearer <token>" metadata (${checked.message})` });
  return { refused: Object.assign(error, { code: unavailable ? GrpcStatus.UNAVAILABLE : GrpcStatus.UNAUTHENTICATED }) };
}
