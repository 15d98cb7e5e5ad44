/**
 * The MCP HTTP server's options and its handle (mcp-http.ts starts it): what a
 * user gives, with the defaults of the limits it adds.
 */
import type { SharedEventLog } from './mcp-event-store.js';
import type { RelayLink } from './mcp-resume-relay.js';
import type { SessionDirectory } from '../core/session-directory.js';
import type { McpServerOptions } from './mcp-server.js';
import type { ServerLimitMetrics } from './metrics.js';
import type { NamedToken } from './principals.js';
import type { OAuthOptions } from './auth/oauth-options.js';
import type { OAuthVerifier } from './auth/authenticator.js';

/** What `/metrics` serves: a prom-client `Registry` fits, as does toolhost's `createMetrics(...)`. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface McpHttpServerOptions extends McpServerOptions {
  /** The address to listen on (default 127.0.0.1). */
  host?: string;
  /** The port (default 0: an ephemeral port; read it from the result). */
  port?: number;
  /**
   * Accepted `Host` headers: `name:port` (exact) or a bare `name` (any port);
   * IPv6 in brackets (`[::1]:8080`). Default: `127.0.0.1:<port>`,
   * `localhost:<port>`, `[::1]:<port>` and `<host>:<port>`.
   */
  allowedHosts?: string[];
  /** When set, `/mcp` and `/metrics` need `Authorization: Bearer <token>`; its principal is `bearer`. */
  bearerToken?: string;
  /** Named tokens, each a principal of its own (beside or instead of `bearerToken`). */
  tokens?: NamedToken[];
  /** OAuth 2.1 access tokens (JWTs of `issuer` for the resource `audience`), beside or instead of static tokens. */
  oauth?: OAuthOptions;
  /** Instead of `oauth`: a verifier shared with the gRPC server (`createOAuthVerifier`), so the key set is fetched once. */
  oauthVerifier?: OAuthVerifier;
  /** Served at `GET /metrics` (404 without it). */
  metrics?: MetricsSource;
  /** Extra fields for `GET /healthz` (e.g. sandbox pool stats). */
  health?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Accepted `Origin` headers (`scheme://host[:port]`, compared without case).
   * Default: `http://localhost:<port>`, `http://127.0.0.1:<port>`, `http://[::1]:<port>`.
   * Requests without an `Origin` header are not browsers' and pass.
   */
  allowedOrigins?: string[];
  /** Sessions open at once; at the cap the least recently used idle session is evicted (default 1000). */
  maxSessions?: number;
  /** Sessions one client address may hold (default 256). */
  maxSessionsPerClient?: number;
  /** How long an idle session lives, in ms (default 600000: 10 minutes). */
  sessionIdleMs?: number;
  /** Where refusals and session ends are counted (toolhost's `createMetrics(...).limits`). */
  limitMetrics?: ServerLimitMetrics;
  /** Largest accepted request body, in bytes (default 4 MiB; 413 beyond). */
  maxBodyBytes?: number;
  /** TCP connections open at once; past it a new one is closed at once (default 4096, or a quarter of the open-file limit when lower). */
  maxConnections?: number;
  /** TCP connections one client address (an IPv6 /64) may hold; past it a new one is closed at once (default 256). */
  maxConnectionsPerClient?: number;
  /** TCP connections one network (IPv4 /24, IPv6 /48 by default) may hold; past it a silent one of the network makes room, else the new one is closed (default 1024). */
  maxConnectionsPerNetwork?: number;
  /** Prefix lengths that make a network (defaults 24 and 48). */
  networkPrefixV4?: number;
  networkPrefixV6?: number;
  /** A connection that has not sent a byte within this long, in ms, is closed (default 5000). */
  firstByteTimeoutMs?: number;
  /** How long a connection may take to send a request's headers, in ms (default 10000); then it is closed. */
  headersTimeoutMs?: number;
  /** 2026-07-28 `subscriptions/listen` streams open at once (default 1024; the SDK refuses more in-band). */
  maxSubscriptions?: number;
  /** 2026-07-28 calls one principal may have parked, waiting for its client's answer (default 16; past it the tool's request is OVERLOADED). */
  maxParkedCalls?: number;
  /** 2025-era events kept per session for replay after `Last-Event-ID` (default 1000; 0: no event ids, no resumption). */
  resumeEvents?: number;
  /** Bytes of those events per session (default 262144). */
  resumeBytes?: number;
  /** The `retry:` (ms) of a resumable stream's priming event: how long a client waits before resuming a stream that ended (default 1000). */
  resumeRetryMs?: number;
  /** A fleet's Redis link and prefix: 2026-07-28 retries for a call parked on another host are relayed there (mcp-resume-relay.ts). */
  fleetRelay?: { link: RelayLink; prefix: string };
  /** A fleet's shared copy of sessions' events, so a session restored on another host replays them (with `sessionDirectory`). */
  eventLog?: SharedEventLog;
  /**
   * Where 2025-era sessions are shared by a fleet (a fleet's `sessions`), so that any host serves any
   * session: no sticky routing. Absent: sessions live in this host's memory.
   */
  sessionDirectory?: SessionDirectory;
}

/** The default of {@link McpHttpServerOptions.maxSubscriptions}. */
export const DEFAULT_MAX_SUBSCRIPTIONS = 1024;

/** The default of {@link McpHttpServerOptions.headersTimeoutMs}. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;

export interface McpHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:43123/mcp`. */
  readonly url: string;
  readonly port: number;
  /** Open MCP sessions. */
  readonly sessions: number;
  /** Connections open to the server now (node:http's `getConnections`: streams held open included). */
  connections(): Promise<number>;
  /**
   * Stop: new sessions get 503 and new calls an OVERLOADED result at once; calls
   * in flight get up to `drainMs` (default 0) to finish; then every session is
   * closed (cancelling what still runs) and the HTTP server with them.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}
