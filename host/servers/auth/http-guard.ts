/**
 * The HTTP side of authentication for the MCP server: the RFC 9728 metadata
 * route, and the check every guarded request passes (401 with
 * `WWW-Authenticate`, 503 with `Retry-After` when an access token cannot be
 * checked now, 429 with `Retry-After` when the client's address asked for too
 * many token checks).
 *
 * Guarantees: an authenticated request carries its caller to the SDK's
 * handlers as `req.auth` (`extra.authInfo`), without the token itself; a
 * refused one is answered here and counted once.
 *
 * It does not bind sessions to principals: mcp-http.ts does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { header, methodNotAllowed, sendJson } from '../http-edges.js';
import { callerOptions, refusedReason, type Authenticator, type Caller } from './caller.js';

/** Where the caller's call options go in `AuthInfo.extra` (mcp-server.ts reads them). */
export const CALLER_AUTH_KEY = 'toolhost/caller';

/** Serve the protected-resource metadata when `path` is one of its paths; true when answered. */
export function serveProtectedResource(auth: Authenticator | undefined, path: string, req: IncomingMessage, res: ServerResponse): boolean {
  const resource = auth?.protectedResource;
  if (resource === undefined || !resource.paths.includes(path)) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    methodNotAllowed(res, 'GET, HEAD');
    return true;
  }
  // Public metadata, no credentials: any origin (a browser-based MCP client) may read it.
  res.setHeader('Access-Control-Allow-Origin', '*');
  sendJson(res, 200, resource.document);
  return true;
}

/**
 * The request's caller, or null when it was refused (and answered here).
 * `refused(reason)` counts the refusal (caller.ts `refusedReason`: `unauthenticated`, `auth_unavailable`,
 * `auth_busy` or `auth_rate_limited`).
 */
export async function authenticateRequest(
  auth: Authenticator,
  req: IncomingMessage,
  res: ServerResponse,
  refused: (reason: string, detail: string) => void,
): Promise<Caller | null> {
  const checked = await auth.authenticate(header(req, 'authorization'), { address: req.socket.remoteAddress });
  if (!checked.ok) {
    refused(refusedReason(checked), `${checked.reason}: ${checked.message}`);
    if (checked.status === 503 || checked.status === 429) {
      res.setHeader('Retry-After', String(checked.retryAfterSec ?? 5));
      const what = checked.status === 503 ? 'Service unavailable' : 'Too many requests';
      sendJson(res, checked.status, { jsonrpc: '2.0', error: { code: -32000, message: `${what}: ${checked.message}` }, id: null });
    } else {
      res.setHeader('WWW-Authenticate', auth.challenge(checked));
      sendJson(res, 401, { jsonrpc: '2.0', error: { code: -32000, message: `Unauthorized: ${checked.message}` }, id: null });
    }
    return null;
  }
  const { caller } = checked;
  // The SDK hands it to the request's handlers (`extra.authInfo`): this request's calls get its tenant and ceiling.
  const info: AuthInfo = { token: '', clientId: caller.principal, scopes: [...caller.scopes], extra: { [CALLER_AUTH_KEY]: callerOptions(caller) } };
  if (caller.expiresAt !== undefined) info.expiresAt = caller.expiresAt;
  (req as IncomingMessage & { auth?: AuthInfo }).auth = info;
  return caller;
}
