/**
 * The HTTP answer of step-up authorization for MCP (auth/step-up.ts names the
 * scopes): before a request reaches either protocol leg, an access token that
 * lacks the scope it needs gets HTTP 403 with `WWW-Authenticate: Bearer
 * error="insufficient_scope", scope="..."`, the signal an OAuth client
 * re-authorizes on, instead of a tool error its auth flow never sees:
 *
 * - `GET /metrics` without `metrics_scope`;
 * - `tools/call` of an admin tool without `admin_scope`;
 * - `tools/call` above the token's label ceiling (registry `ceilingRefusal`:
 *   admission's own decision, audited and counted as a `scope_labels` hit),
 *   when some configured scope would cover it (otherwise the call is refused as
 *   before: no scope could help, so no step-up is offered).
 *
 * Static tokens are not OAuth: they are never asked for scopes (their ceiling,
 * when any, is the operator's). Only a single JSON-RPC request is looked at;
 * its `_meta` is read as the call path reads it (mcp-meta.ts).
 */
import type { ServerResponse } from 'node:http';
import type { Authenticator, Caller } from './auth/caller.js';
import { insufficientScopeChallenge } from './auth/step-up.js';
import type { CallOptions } from '../core/call/options.js';
import { ADMIN_TOOL_NAMES } from '../tools/admin-tools.js';
import { sendJson } from './http-edges.js';
import { metaCallOptions } from './mcp-meta.js';
import type { McpToolSource } from './mcp-server.js';

/** A 403 to send instead of serving the request. */
export interface ScopeRefusal {
  scopes: string[];
  message: string;
  data: Record<string, unknown>;
  id: unknown;
}

/** Whether `/metrics` needs a scope this caller lacks. */
export function metricsScopeRefusal(auth: Authenticator, caller: Caller): ScopeRefusal | undefined {
  const stepUp = auth.stepUp;
  if (stepUp === undefined || caller.kind !== 'oauth' || caller.scopes.includes(stepUp.metricsScope)) return undefined;
  const message = `reading /metrics needs the scope "${stepUp.metricsScope}"`;
  return { scopes: stepUp.withHeld([stepUp.metricsScope], caller.scopes), message, data: { code: 'PERMISSION_DENIED', message, details: { reason: 'insufficient-scope' } }, id: null };
}

/** Whether a `tools/call` request needs a scope this caller lacks. */
export function callScopeRefusal(registry: McpToolSource, auth: Authenticator, caller: Caller, body: unknown, worktree?: (tool: string) => string | undefined): ScopeRefusal | undefined {
  const stepUp = auth.stepUp;
  if (stepUp === undefined || caller.kind !== 'oauth' || typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const request = body as { method?: unknown; id?: unknown; params?: { name?: unknown; _meta?: unknown } };
  const name = request.params?.name;
  if (request.method !== 'tools/call' || typeof name !== 'string') return undefined;
  if ((ADMIN_TOOL_NAMES as readonly string[]).includes(name) && !caller.scopes.includes(stepUp.adminScope)) {
    const message = `calling "${name}" needs the scope "${stepUp.adminScope}"`;
    return { scopes: stepUp.withHeld([stepUp.adminScope], caller.scopes), message, data: { code: 'PERMISSION_DENIED', message, details: { reason: 'insufficient-scope' } }, id: request.id ?? null };
  }
  if (caller.labelCeiling === undefined || registry.ceilingRefusal === undefined) return undefined;
  const options: CallOptions = { principal: caller.principal, labelCeiling: caller.labelCeiling, ...(caller.tenant === undefined ? {} : { tenant: caller.tenant }) };
  try {
    const meta = request.params?._meta;
    Object.assign(options, metaCallOptions(typeof meta === 'object' && meta !== null ? meta as Record<string, unknown> : {}));
  } catch {
    return undefined; // a malformed _meta is the call path's to refuse (INVALID_INPUT)
  }
  const dir = worktree?.(name);
  if (dir !== undefined) options.workingDir = dir;
  const refused = registry.ceilingRefusal(name, options);
  if (refused === undefined) return undefined;
  const scopes = stepUp.scopesFor((refused.details ?? {}) as { network?: string; privilege?: string }, caller.scopes);
  if (scopes === undefined) return undefined;
  return { scopes, message: refused.message, data: { code: refused.code, message: refused.message, details: { ...(refused.details as object), reason: 'caller-ceiling' } }, id: request.id ?? null };
}

/** Answer 403 insufficient_scope. */
export function sendScopeRefusal(res: ServerResponse, auth: Authenticator, refusal: ScopeRefusal): void {
  res.setHeader('WWW-Authenticate', insufficientScopeChallenge(refusal.scopes, refusal.message, auth.protectedResource?.url));
  sendJson(res, 403, { jsonrpc: '2.0', error: { code: -32000, message: `Forbidden: insufficient scope: ${refusal.message}`, data: refusal.data }, id: refusal.id });
}
