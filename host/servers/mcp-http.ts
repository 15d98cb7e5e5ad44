/**
 * MCP over Streamable HTTP on a plain `node:http` server.
 *
 * Routes: `POST|GET|DELETE /mcp`, `GET /healthz`, `GET /metrics`. `/mcp`
 * answers two protocol eras, each request routed by the SDK v2's own
 * classification (`isLegacyRequest`): 2026-07-28 requests (the per-request
 * envelope) go to the stateless leg (mcp-modern.ts), everything else to the
 * 2025-era sessions (mcp-legacy.ts: one SDK 1.x Server per session, shared
 * through a fleet's session directory when there is one).
 *
 * Every request's `Host` header must be on the allowlist (403 otherwise): a
 * defence against DNS rebinding, checked before anything else for every route.
 * (The SDK transport's own `allowedHosts` option is not used: it sees only
 * requests that reach a session, and matches exact strings, where this check
 * also covers `/healthz`, `/metrics` and new sessions, and accepts bare names.)
 * A request that carries an `Origin` header (a browser's) must name an allowed
 * origin (403 otherwise), as the MCP spec requires of Streamable HTTP servers;
 * requests without one (non-browser clients) pass.
 * With a bearer token (or named tokens, or OAuth: auth/), `/mcp` and `/metrics`
 * need `Authorization: Bearer <token>` (401 otherwise, with `WWW-Authenticate`;
 * 503 when an access token cannot be checked now); `/healthz` stays open for
 * probes and reveals only counts. With OAuth, RFC 9728 metadata is served
 * without a token at `/.well-known/oauth-protected-resource` (any origin may
 * read it), and every request's token is checked again: its scopes cap the
 * labels of that request's calls. A session belongs to the principal of the
 * token that initialized it: its calls carry that principal (conversations
 * are scoped to it, see principals.ts), and a request with another
 * principal's token gets 404, as if the session did not exist.
 *
 * Sessions are bounded (see mcp-sessions.ts, and fleet-wide, the directory): idle ones expire, at the cap the
 * least recently used idle one is evicted, and one client address holds a
 * limited number. Refusals carry a toolhost code in the JSON-RPC error's
 * `data.code` (PERMISSION_DENIED, OVERLOADED) and are counted in the metrics.
 *
 * Connections are bounded too (connection-gate.ts): in total, per client
 * address and per network, a connection past a cap is closed at once (counted;
 * silent and idle ones make room first); a connection must send its first byte
 * within `firstByteTimeoutMs` and its request headers within `headersTimeoutMs`, and an
 * idle kept-alive one is closed after Node's keep-alive timeout (5 s).
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { definedLimits, gateConnections, resolveConnectionLimits } from './connection-gate.js';
import { createModernMcp } from './mcp-modern.js';
import { CallParking, DEFAULT_MAX_PARKED_CALLS } from './mcp-input-required.js';
import { DEFAULT_EVENT_STORE_LIMITS } from './mcp-event-store.js';
import { ResumeRelay } from './mcp-resume-relay.js';
import { endListenSpan, openListenSpan, type ListenEnd } from './mcp-listen-span.js';
import { checkMcpServerOptions, type McpToolSource } from './mcp-server.js';
import { packageVersion } from './package-version.js';
import { atExpiry, createLegacySessions, DEFAULT_RESUME_RETRY_MS } from './mcp-legacy.js';
import { DEFAULT_SESSION_LIMITS } from './mcp-sessions.js';
import { createAuthenticator } from './auth/authenticator.js';
import { authenticateRequest, serveProtectedResource } from './auth/http-guard.js';
import type { Caller } from './auth/caller.js';
import { callScopeRefusal, metricsScopeRefusal, sendScopeRefusal } from './mcp-step-up.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_MAX_SUBSCRIPTIONS, type McpHttpServer, type McpHttpServerOptions } from './mcp-http-options.js';
import { defaultAllowedHosts, defaultAllowedOrigins, header, hostForUrl, hostMatcher, methodNotAllowed, originMatcher, pathOf, readJson, rpcError, sendJson } from './http-edges.js';
import { checkParamHeaders, HEADER_MISMATCH, paramHeadersOf, type ParamHeaderMismatch } from './mcp-param-headers.js';


const MCP_PATH = '/mcp';
const DEFAULT_MAX_BODY = 4 * 1024 * 1024;

/** Start serving MCP over Streamable HTTP; resolves once the server listens. */
export async function startMcpHttpServer(registry: McpToolSource, options: McpHttpServerOptions = {}): Promise<McpHttpServer> {
  const {
    host = '127.0.0.1',
    port = 0,
    allowedHosts,
    bearerToken,
    tokens: namedTokens,
    oauth,
    oauthVerifier,
    metrics,
    health,
    allowedOrigins,
    maxSessions = DEFAULT_SESSION_LIMITS.maxSessions,
    maxSessionsPerClient = DEFAULT_SESSION_LIMITS.maxPerClient,
    sessionIdleMs = DEFAULT_SESSION_LIMITS.idleMs,
    limitMetrics,
    maxBodyBytes = DEFAULT_MAX_BODY,
    maxConnections,
    maxConnectionsPerClient,
    maxConnectionsPerNetwork,
    networkPrefixV4,
    networkPrefixV6,
    firstByteTimeoutMs,
    headersTimeoutMs = DEFAULT_HEADERS_TIMEOUT_MS,
    maxSubscriptions = DEFAULT_MAX_SUBSCRIPTIONS,
    maxParkedCalls = DEFAULT_MAX_PARKED_CALLS,
    resumeEvents = DEFAULT_EVENT_STORE_LIMITS.maxEvents,
    resumeBytes = DEFAULT_EVENT_STORE_LIMITS.maxBytes,
    resumeRetryMs = DEFAULT_RESUME_RETRY_MS,
    eventLog,
    fleetRelay,
    sessionDirectory,
    ...serverOptions
  } = options;
  const connectionLimits = resolveConnectionLimits(definedLimits({ maxConnections, maxConnectionsPerClient, maxConnectionsPerNetwork, networkPrefixV4, networkPrefixV6, firstByteTimeoutMs }));
  if (!Number.isInteger(headersTimeoutMs) || headersTimeoutMs < 1) throw new TypeError('options.headersTimeoutMs must be a positive integer');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError('options.port must be an integer from 0 to 65535');
  if (!Number.isInteger(maxSessions) || maxSessions < 1) throw new TypeError('options.maxSessions must be a positive integer');
  if (!Number.isInteger(maxSessionsPerClient) || maxSessionsPerClient < 1) throw new TypeError('options.maxSessionsPerClient must be a positive integer');
  if (!Number.isFinite(sessionIdleMs) || sessionIdleMs <= 0) throw new TypeError('options.sessionIdleMs must be a positive number');
  if (allowedOrigins !== undefined && (!Array.isArray(allowedOrigins) || allowedOrigins.some((entry) => typeof entry !== 'string' || entry === ''))) {
    throw new TypeError('options.allowedOrigins must be an array of non-empty strings');
  }
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1) throw new TypeError('options.maxBodyBytes must be a positive integer');
  if (!Number.isInteger(maxSubscriptions) || maxSubscriptions < 1) throw new TypeError('options.maxSubscriptions must be a positive integer');
  if (!Number.isInteger(resumeEvents) || resumeEvents < 0) throw new TypeError('options.resumeEvents must be a non-negative integer');
  if (!Number.isInteger(resumeBytes) || resumeBytes < 1) throw new TypeError('options.resumeBytes must be a positive integer');
  if (!Number.isInteger(resumeRetryMs) || resumeRetryMs < 0) throw new TypeError('options.resumeRetryMs must be a non-negative integer');
  const auth = createAuthenticator({ bearerToken, tokens: namedTokens, oauth, oauthVerifier });
  if (allowedHosts !== undefined && (!Array.isArray(allowedHosts) || allowedHosts.some((entry) => typeof entry !== 'string' || entry === ''))) {
    throw new TypeError('options.allowedHosts must be an array of non-empty strings');
  }
  if (metrics !== undefined && typeof metrics.metrics !== 'function') throw new TypeError('options.metrics must have a metrics() method');
  // Fail on bad server options now, not on the first session.
  checkMcpServerOptions(serverOptions);

  // 2025-era requests: sessions (mcp-legacy.ts), shared by the fleet when there is a session directory.
  const legacy = createLegacySessions(registry, {
    serverOptions,
    limits: { maxSessions, maxPerClient: maxSessionsPerClient, idleMs: sessionIdleMs },
    maxBodyBytes,
    logger: registry.logger,
    limitMetrics,
    directory: sessionDirectory,
    resume: { maxEvents: resumeEvents, maxBytes: resumeBytes },
    resumeRetryMs,
    eventLog,
  });
  // 2026-07-28 calls that asked their client something, waiting for its retry (mcp-input-required.ts).
  const parking = new CallParking({ maxPerPrincipal: maxParkedCalls, onRefused: () => limitMetrics?.refused('mcp', 'parked_calls_full') });
  limitMetrics?.trackParkedCalls?.('mcp', () => parking.size);
  if (fleetRelay !== undefined) {
    const relay = new ResumeRelay(fleetRelay.link, fleetRelay.prefix, parking, registry.logger, registry.tracer);
    parking.useRelay(relay);
    // Redis may be away now: the link subscribes again when it is back.
    await relay.start().catch((error: unknown) => registry.logger.warn({ err: (error as Error).message }, 'mcp http: could not listen for relayed 2026-07-28 retries yet'));
  }
  // 2026-07-28 requests: the SDK v2's stateless handler over the same registry (mcp-modern.ts).
  const modern = createModernMcp(registry, {
    serverInfo: serverOptions.serverInfo ?? { name: 'toolhost', version: packageVersion() },
    ...(serverOptions.instructions === undefined ? {} : { instructions: serverOptions.instructions }),
    ...(serverOptions.worktree === undefined ? {} : { worktree: serverOptions.worktree }),
    maxBodyBytes,
    maxSubscriptions,
    parking,
    onerror: (error) => {
      // The SDK refuses a subscriptions/listen past the cap in-band (-32603) and tells only this callback.
      if (/subscription limit reached/i.test(error.message)) limitMetrics?.refused('mcp', 'subscriptions_full');
      registry.logger.debug({ err: error.message }, 'mcp http: 2026-07-28 request failed');
    },
  });
  const serveModern = toNodeHandler(modern.handler, {
    maxRequestBodySize: maxBodyBytes,
    onerror: (error) => registry.logger.warn({ err: error.message }, 'mcp http: 2026-07-28 request failed'),
  });
  let hostCheck: (header: string | undefined) => boolean = () => false;
  let originCheck: (header: string | undefined) => boolean = () => false;
  let closing = false;
  // POST requests being answered: a call's POST stays open until its response is written.
  let activePosts = 0;
  const postsDone = new Set<() => void>();

  const handleMcp = async (req: IncomingMessage, res: ServerResponse, caller: Caller | undefined): Promise<void> => {
    const principal = caller?.principal;
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      res.setHeader('Allow', 'GET, POST, DELETE');
      return rpcError(res, 405, -32000, 'Method not allowed');
    }
    if (method === 'POST') {
      activePosts += 1;
      try {
        return await handleMcpRequest(req, res, method, caller);
      } finally {
        activePosts -= 1;
        if (activePosts === 0) for (const done of [...postsDone]) done();
      }
    }
    return handleMcpRequest(req, res, method, caller);
  };

  const handleMcpRequest = async (req: IncomingMessage, res: ServerResponse, method: string, caller: Caller | undefined): Promise<void> => {
    const principal = caller?.principal;
    let body: unknown;
    if (method === 'POST') {
      const read = await readJson(req, maxBodyBytes);
      if (!read.ok) return rpcError(res, read.status, read.status === 413 ? -32000 : -32700, read.message);
      body = read.value;
      // Step-up authorization: a call the token's scopes do not cover is 403 insufficient_scope, naming the scopes that would.
      const scopeRefusal = auth !== undefined && caller !== undefined ? callScopeRefusal(registry, auth, caller, body, serverOptions.worktree) : undefined;
      if (scopeRefusal !== undefined && auth !== undefined) {
        limitMetrics?.refused('mcp', 'insufficient_scope');
        return sendScopeRefusal(res, auth, scopeRefusal);
      }
      // The SDK's own classification: a request with the 2026-07-28 envelope is the modern leg's.
      if (!(await isLegacyRequest(new Request('http://mcp.invalid/mcp', { method: 'POST', headers: webHeaders(req) }), body, { maxRequestBodySize: maxBodyBytes }))) {
        if (closing) return rpcError(res, 503, -32000, 'the server is closing', { code: 'OVERLOADED', reason: 'closing' });
        // SEP-2243: the Mcp-Param-* headers must say what the body says (mcp-param-headers.ts).
        const headerMismatch = paramHeaderMismatch(registry, body, req);
        if (headerMismatch !== undefined) {
          limitMetrics?.refused('mcp', 'header_mismatch');
          return rpcError(res, 400, HEADER_MISMATCH, headerMismatch.message, headerMismatch.data, requestIdOf(body));
        }
        const listening = isListen(body);
        // Traced hosts: the listen stream's own span (the SDK serves it outside the traced handlers).
        const span = listening ? openListenSpan(registry.tracer, req, body) : undefined;
        let ended: ListenEnd = 'closed';
        // A subscriptions/listen stream ends when its token expires: the client listens again with a fresh one.
        const expiry = listening ? atExpiry(req, () => {
          limitMetrics?.refused('mcp', 'token_expired');
          ended = 'token_expired';
          res.destroy();
        }) : undefined;
        // The resource URIs a listen stream asks about get notifications/resources/updated while it is open.
        const forget = listening ? modern.listen(body) : undefined;
        try {
          return await serveModern(req, res, body);
        } finally {
          clearTimeout(expiry);
          forget?.();
          endListenSpan(span, closing && ended === 'closed' ? 'server_closing' : ended);
        }
      }
    }
    await legacy.handle(req, res, method, body, principal);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!hostCheck(header(req, 'host'))) {
      limitMetrics?.refused('mcp', 'host');
      return rpcError(res, 403, -32000, 'Forbidden: Host header not allowed', { code: 'PERMISSION_DENIED', reason: 'host' });
    }
    const path = pathOf(req.url);
    if (serveProtectedResource(auth, path, req, res)) return;
    if (!originCheck(header(req, 'origin'))) {
      limitMetrics?.refused('mcp', 'origin');
      return rpcError(res, 403, -32000, 'Forbidden: Origin not allowed', { code: 'PERMISSION_DENIED', reason: 'origin' });
    }
    if (path === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET, HEAD');
      const extra = health ? await health() : {};
      return sendJson(res, 200, { status: closing ? 'closing' : 'ok', tools: registry.names().length, inFlight: registry.inFlight, sessions: legacy.size, ...extra });
    }
    if (path !== MCP_PATH && path !== '/metrics') return sendJson(res, 404, { error: 'not found' });
    let caller: Caller | undefined;
    if (auth !== undefined) {
      const authenticated = await authenticateRequest(auth, req, res, (reason, detail) => {
        limitMetrics?.refused('mcp', reason);
        registry.logger.debug({ reason: detail }, 'mcp http: request not authenticated');
      });
      if (authenticated === null) return;
      caller = authenticated;
    }
    if (path === '/metrics') {
      if (req.method !== 'GET') return methodNotAllowed(res, 'GET');
      // With OAuth, an access token reads the metrics only with their own scope.
      const scopeRefusal = auth !== undefined && caller !== undefined ? metricsScopeRefusal(auth, caller) : undefined;
      if (scopeRefusal !== undefined && auth !== undefined) {
        limitMetrics?.refused('mcp', 'insufficient_scope');
        return sendScopeRefusal(res, auth, scopeRefusal);
      }
      if (!metrics) return sendJson(res, 404, { error: 'metrics are not enabled' });
      const text = await metrics.metrics();
      res.writeHead(200, { 'Content-Type': metrics.contentType });
      res.end(text);
      return;
    }
    await handleMcp(req, res, caller);
  };

  const http: HttpServer = createServer({
    headersTimeout: headersTimeoutMs,
    // Node's default (300 s) must not be below the headers timeout; the body has its own byte cap.
    requestTimeout: Math.max(300_000, headersTimeoutMs),
    // How often the timeouts above are checked (Node's default, 30 s, would let a slow-headers socket live 3x longer).
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs),
  }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      registry.logger.warn({ err: (error as Error).message, url: req.url }, 'mcp http: request failed');
      if (!res.headersSent) sendJson(res, 500, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
      else res.destroy();
    });
  });
  gateConnections(http, connectionLimits, { refused: (reason) => limitMetrics?.refused('mcp', reason), closed: (reason) => limitMetrics?.connectionClosed?.('mcp', reason) });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const bound = (http.address() as AddressInfo).port;
  hostCheck = hostMatcher(allowedHosts ?? defaultAllowedHosts(host, bound));
  originCheck = originMatcher(allowedOrigins ?? defaultAllowedOrigins(bound));
  const url = `http://${hostForUrl(host)}:${bound}${MCP_PATH}`;

  let closed: Promise<void> | undefined;
  return {
    url,
    port: bound,
    get sessions() {
      return legacy.size;
    },
    connections() {
      return new Promise((resolve, reject) => http.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    },
    close({ drainMs = 0 } = {}) {
      closed ??= (async () => {
        closing = true;
        if (drainMs > 0) {
          const deadline = Date.now() + drainMs;
          await Promise.all([legacy.drain(drainMs), modern.drain(drainMs)]);
          // Then let the answers already produced reach their clients.
          await waitUntil(() => activePosts === 0, postsDone, deadline - Date.now());
        }
        // Closing a session's server closes its transport, which aborts its requests: their calls end CANCELLED.
        await Promise.allSettled([legacy.close(), modern.close()]);
        parking.close();
        await new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeAllConnections();
        });
      })();
      return closed;
    },
  };
}

/** A modern `tools/call`'s `Mcp-Param-*` headers checked against its arguments (undefined: agree, or nothing to check). */
function paramHeaderMismatch(registry: McpToolSource, body: unknown, req: IncomingMessage): ParamHeaderMismatch | undefined {
  if (typeof body !== 'object' || body === null || (body as { method?: unknown }).method !== 'tools/call') return undefined;
  const params = (body as { params?: { name?: unknown; arguments?: unknown } }).params;
  if (typeof params?.name !== 'string') return undefined;
  const declarations = paramHeadersOf(registry.get(params.name)?.inputSchema);
  if (declarations.length === 0) return undefined;
  return checkParamHeaders(declarations, params.arguments, (name) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  });
}

/** A JSON-RPC request's id, to echo in an error answered before the SDK reads it. */
function requestIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function isListen(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'subscriptions/listen';
}

/** A Node request's headers as web `Headers` (for the SDK's classification). */
function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

/** Resolve when `condition()` holds (re-checked whenever a waiter in `waiters` is called) or after `ms`. */
function waitUntil(condition: () => boolean, waiters: Set<() => void>, ms: number): Promise<void> {
  if (condition() || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const check = (): void => {
      if (!condition()) return;
      finish();
    };
    const finish = (): void => {
      clearTimeout(timer);
      waiters.delete(check);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    timer.unref?.();
    waiters.add(check);
  });
}

export { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_MAX_SUBSCRIPTIONS, type McpHttpServer, type McpHttpServerOptions, type MetricsSource } from './mcp-http-options.js';
export { defaultAllowedHosts, defaultAllowedOrigins, originMatcher, hostMatcher } from './http-edges.js';
