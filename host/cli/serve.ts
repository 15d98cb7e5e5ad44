/**
 * `toolhost serve`: open the host the way `list` and `call` do (see
 * `openHost`), and serve its tools over MCP (Streamable HTTP or stdio) and
 * gRPC until SIGINT/SIGTERM (or, over stdio, until stdin ends); then stop
 * accepting calls, let the ones in flight finish (bounded), exit 0.
 *
 * The servers' modules (the MCP SDK, grpc-js) are imported here, when a
 * server is started, so other commands never load them.
 */
import { resolve } from 'node:path';
import { createHost, loadHostConfig } from '../compose/host.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { DEFAULT_MAX_CALL_ID_LENGTH } from '../core/call/ids.js';
import { ToolhostError } from '../base/errors.js';
import type { GrpcServerHandle } from '../servers/grpc/index.js';
import type { McpHttpServer } from '../servers/mcp-http.js';
import type { McpStdioServer } from '../servers/mcp-stdio.js';
import type { HostMetrics } from '../servers/metrics.js';
import { interruptible } from './distribution.js';
import { UsageError } from './usage-error.js';

export interface ServeOptions {
  config?: string;
  /** `--verify-key FILE` (repeatable) and `--insecure-skip-verify`: trust for remote components. */
  verifyKey?: string[];
  insecureSkipVerify?: boolean;
  /** MCP transport (default: http when the config enables it). */
  mcp?: 'stdio' | 'http' | 'none';
  port?: number;
  host?: string;
  load: string[];
  worktree?: string;
  /** Serve gRPC (default: the config's setting, off over stdio). */
  grpc?: boolean;
  grpcPort?: number;
  /** Largest gRPC message accepted / sent (bytes; default: the config's, else 4 MiB). */
  grpcMaxReceiveBytes?: number;
  grpcMaxSendBytes?: number;
  /** How long in-flight calls may finish after a shutdown signal (ms). */
  drainMs?: number;
  /** Join a fleet on this Redis (`--redis`; over the config's `cluster.redis` / `cluster.redis_cluster`). */
  redis?: string;
  /** Join a fleet on this Redis Cluster (`--redis-cluster a,b`: seed nodes; over the config's store). */
  redisCluster?: string[];
  /** Where the sandbox workers run (`--containment`; over the config's `host.pool.containment`, default `process`). */
  containment?: 'process' | 'thread';
}

/**
 * A server runs its sandbox in a supervised process unless told otherwise: a
 * fatal V8 error in a worker then costs the calls in flight, not the server
 * (two IPC hops cost 0.1 to 0.3 ms a call; see docs/sandbox.md, Containment).
 */
const SERVE_CONTAINMENT = 'process';

const DEFAULT_DRAIN_MS = 10_000;

/** Which servers to start, from the options over the config. */
function chooseServers(options: ServeOptions, config: ResolvedConfig): { mcp: 'stdio' | 'http' | 'none'; grpc: boolean } {
  const mcp = options.mcp ?? (config.servers.mcp.http.enabled ? 'http' : 'none');
  const grpc = options.grpc ?? (config.servers.grpc.enabled && mcp !== 'stdio');
  if (mcp === 'none' && !grpc) {
    throw new UsageError('nothing to serve: MCP is off (--mcp none, or servers.mcp.http.enabled: false) and so is gRPC (--no-grpc, or servers.grpc.enabled: false)');
  }
  return { mcp, grpc };
}

/**
 * Admin tools on a network server need authenticated callers: the config check refuses a file that enables one
 * without tokens or OAuth, and this refuses the same when the command line turns a server on (`--mcp http`, `--grpc`).
 */
function checkAdminAuth(chosen: { mcp: 'stdio' | 'http' | 'none'; grpc: boolean }, config: ResolvedConfig): void {
  if (!config.adminTools) return;
  const { servers } = config;
  const common = servers.tokens.length > 0 || servers.oauth !== undefined;
  const open = [
    ...(chosen.mcp === 'http' && !common && servers.mcp.http.bearerTokenEnv === undefined ? ['MCP over HTTP'] : []),
    ...(chosen.grpc && !common && servers.grpc.bearerTokenEnv === undefined ? ['gRPC'] : []),
  ];
  if (open.length > 0) {
    throw new UsageError(`admin_tools needs authenticated callers on a network server, and ${open.join(' and ')} would serve toolhost_load to anyone who connects: configure servers.auth.tokens, bearer_token_env or servers.auth.oauth, or serve the admin tools over stdio only (--mcp stdio)`);
  }
}

/**
 * A server's start, with an address already in use said as such (INVALID_INPUT, naming the setting to change)
 * instead of an INTERNAL error quoting the socket layer.
 */
async function listening<T>(server: string, setting: string, file: string | undefined, started: Promise<T>): Promise<T> {
  try {
    return await started;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const inUse = /EADDRINUSE: address already in use ([^\s\]]+)/.exec(message);
    if (!inUse) throw error;
    const where = file === undefined ? 'the embedded defaults' : file;
    throw new ToolhostError('INVALID_INPUT', `the ${server} server cannot listen: ${inUse[1]} is already in use; choose another port (${setting}; from ${where}), or stop what holds it`, {
      details: { server, address: inUse[1] },
    });
  }
}

/** Run the server until it is told to stop; resolves with the exit code. */
export async function serve(options: ServeOptions): Promise<number> {
  const hostOptions = { load: options.load, ...(options.config === undefined ? {} : { configPath: options.config }), trust: { keys: options.verifyKey ?? [], skip: options.insecureSkipVerify === true } };
  const loaded = await loadHostConfig(hostOptions);
  const { warnings, file } = loaded;
  const fromFile: ResolvedConfig = withStore(loaded.config, options);
  const containment = options.containment ?? fromFile.sandbox.containment ?? SERVE_CONTAINMENT;
  const configured: ResolvedConfig = { ...fromFile, sandbox: { ...fromFile.sandbox, containment } };
  // Decide what to serve before anything is loaded or started.
  const chosen = chooseServers(options, configured);
  checkAdminAuth(chosen, configured);
  // The host knows which network servers run (the admin tools need authenticated callers when one does).
  const { servers } = configured;
  const config: ResolvedConfig = {
    ...configured,
    servers: { ...servers, mcp: { ...servers.mcp, http: { ...servers.mcp.http, enabled: chosen.mcp === 'http' } }, grpc: { ...servers.grpc, enabled: chosen.grpc } },
  };
  // Over stdio, stdout carries the protocol and nothing else.
  const say = (line: string): void => {
    (chosen.mcp === 'stdio' ? process.stderr : process.stdout).write(`${line}\n`);
  };

  for (const warning of warnings) process.stderr.write(`toolhost: ${warning}\n`);
  // What this host tells the fleet view about itself (addresses known once the servers listen).
  const addresses: Record<string, string> = {};
  let described: { registry: { sandboxStats(): unknown } } | undefined;
  // A shutdown signal while remote components load ends the loads (CANCELLED): start is bounded by the operator too.
  const host = await interruptible((signal) => createHost(config, { ...hostOptions, signal, describeHost: () => ({ servers: addresses, pool: described?.registry.sandboxStats() ?? null }) }));
  described = host;
  const { registry } = host;
  // Loading from the cache defers compiling; a server compiles before it listens, so first calls are not cold.
  await registry.warm();
  let mcpHttp: McpHttpServer | undefined;
  let mcpStdio: McpStdioServer | undefined;
  let grpc: GrpcServerHandle | undefined;
  let metrics: HostMetrics | undefined;
  try {
    const worktree = options.worktree === undefined ? undefined : resolve(options.worktree);
    const worktreeFor = worktree === undefined ? undefined : () => worktree;
    // Named tokens (both servers): read from the environment, never from the file.
    const tokens = config.servers.tokens.map(({ principal, tokenEnv }, i) => {
      const token = process.env[tokenEnv];
      if (!token) throw new ToolhostError('INVALID_INPUT', `servers.auth.tokens[${i}].token_env names ${tokenEnv}, which is not set in the environment`);
      return { principal, token };
    });
    const metricsOptions = config.servers.metricsMaxLabelValues === undefined ? {} : { maxLabelValues: config.servers.metricsMaxLabelValues };
    const progressFlush = config.servers.mcp.progressFlushMs === undefined ? {} : { progressFlushMs: config.servers.mcp.progressFlushMs };
    // OAuth access tokens (both servers); the servers check the options (https, or http on loopback) when they start.
    // One verifier for both servers: the issuer's metadata and key set are fetched and cached once.
    let oauth: { oauthVerifier?: import('../servers/auth/authenticator.js').OAuthVerifier } = {};
    if (config.servers.oauth !== undefined) {
      const [{ createOAuthVerifier }, { SHARED_TOKEN_PRINCIPAL }] = await Promise.all([import('../servers/auth/authenticator.js'), import('../servers/principals.js')]);
      const { introspection, ...settings } = config.servers.oauth;
      let secret: string | undefined;
      if (introspection !== undefined) {
        secret = process.env[introspection.clientSecretEnv];
        if (!secret) throw new ToolhostError('INVALID_INPUT', `servers.auth.oauth.introspection.client_secret_env names ${introspection.clientSecretEnv}, which is not set in the environment`);
      }
      const options = introspection === undefined || secret === undefined ? settings : {
        ...settings,
        introspection: { ...withoutSecretEnv(introspection), clientSecret: secret },
      };
      oauth = { oauthVerifier: createOAuthVerifier(options, [...tokens.map((entry) => entry.principal), SHARED_TOKEN_PRINCIPAL]) };
    }

    if (chosen.mcp === 'http') {
      const http = config.servers.mcp.http;
      const bearerToken = http.bearerTokenEnv === undefined ? undefined : process.env[http.bearerTokenEnv];
      if (http.bearerTokenEnv !== undefined && !bearerToken) {
        throw new ToolhostError('INVALID_INPUT', `servers.mcp.http.bearer_token_env names ${http.bearerTokenEnv}, which is not set in the environment`);
      }
      const [{ startMcpHttpServer }, { createMetrics }] = await Promise.all([import('../servers/mcp-http.js'), import('../servers/metrics.js')]);
      metrics = createMetrics(registry, metricsOptions);
      mcpHttp = await listening('MCP HTTP', 'servers.mcp.http.port or --port', file, startMcpHttpServer(registry, {
        host: options.host ?? http.host,
        port: options.port ?? http.port,
        ...(http.allowedHosts === undefined ? {} : { allowedHosts: http.allowedHosts }),
        ...(http.allowedOrigins === undefined ? {} : { allowedOrigins: http.allowedOrigins }),
        ...(bearerToken === undefined ? {} : { bearerToken }),
        ...(tokens.length === 0 ? {} : { tokens }),
        ...oauth,
        ...progressFlush,
        ...(worktreeFor === undefined ? {} : { worktree: worktreeFor }),
        maxSessions: http.maxSessions,
        maxSessionsPerClient: http.maxSessionsPerClient,
        sessionIdleMs: http.sessionIdleMs,
        maxBodyBytes: http.maxBodyBytes,
        ...(http.maxConnections === undefined ? {} : { maxConnections: http.maxConnections }),
        maxConnectionsPerClient: http.maxConnectionsPerClient,
        maxConnectionsPerNetwork: http.maxConnectionsPerNetwork,
        networkPrefixV4: http.networkPrefixV4,
        networkPrefixV6: http.networkPrefixV6,
        firstByteTimeoutMs: http.firstByteTimeoutMs,
        headersTimeoutMs: http.headersTimeoutMs,
        maxSubscriptions: http.maxSubscriptions,
        maxParkedCalls: http.maxParkedCalls,
        resumeEvents: http.resumeEvents,
        resumeBytes: http.resumeBytes,
        resumeRetryMs: http.resumeRetryMs,
        // In a fleet, 2025-era sessions live in Redis: any host serves any session.
        ...(host.fleet === undefined ? {} : { sessionDirectory: host.fleet.sessions, eventLog: host.fleet.events, fleetRelay: { link: host.fleet.link, prefix: host.fleet.prefix } }),
        metrics,
        limitMetrics: metrics.limits,
        health: () => ({ pool: registry.sandboxStats() ?? null, ...(host.fleet === undefined ? {} : { fleet: registry.fleetStatus() }) }),
      }));
    } else if (chosen.mcp === 'stdio') {
      const { serveMcpStdio } = await import('../servers/mcp-stdio.js');
      mcpStdio = await serveMcpStdio(registry, { ...progressFlush, ...(worktreeFor === undefined ? {} : { worktree: worktreeFor }) });
    }
    if (chosen.grpc) {
      const settings = config.servers.grpc;
      const bearerToken = settings.bearerTokenEnv === undefined ? undefined : process.env[settings.bearerTokenEnv];
      if (settings.bearerTokenEnv !== undefined && !bearerToken) {
        throw new ToolhostError('INVALID_INPUT', `servers.grpc.bearer_token_env (or servers.mcp.http.bearer_token_env) names ${settings.bearerTokenEnv}, which is not set in the environment`);
      }
      const [{ startGrpcServer }, { createMetrics }, grpcJs] = await Promise.all([import('../servers/grpc/index.js'), import('../servers/metrics.js'), import('@grpc/grpc-js')]);
      // grpc-js logs to the console by itself; in a server its lines belong in the host's log.
      grpcJs.setLogger({ error: (...parts: unknown[]) => registry.logger.debug({ grpc: parts.map(String).join(' ') }, 'grpc-js') });
      metrics ??= createMetrics(registry, metricsOptions);
      grpc = await listening('gRPC', 'servers.grpc.port or --grpc-port', file, startGrpcServer(registry, {
        host: options.host ?? settings.host,
        port: options.grpcPort ?? settings.port,
        maxReceiveMessageBytes: options.grpcMaxReceiveBytes ?? settings.maxReceiveMessageBytes,
        maxSendMessageBytes: options.grpcMaxSendBytes ?? settings.maxSendMessageBytes,
        health: settings.health,
        reflection: settings.reflection,
        ...(settings.maxConnections === undefined ? {} : { maxConnections: settings.maxConnections }),
        maxConnectionsPerClient: settings.maxConnectionsPerClient,
        maxConnectionsPerNetwork: settings.maxConnectionsPerNetwork,
        networkPrefixV4: settings.networkPrefixV4,
        networkPrefixV6: settings.networkPrefixV6,
        firstByteTimeoutMs: settings.firstByteTimeoutMs,
        idleTimeoutMs: settings.idleTimeoutMs,
        maxCallIdLength: config.callIds.maxLength ?? DEFAULT_MAX_CALL_ID_LENGTH,
        limitMetrics: metrics.limits,
        ...(bearerToken === undefined ? {} : { bearerToken }),
        ...(tokens.length === 0 ? {} : { tokens }),
        ...oauth,
        ...(worktreeFor === undefined ? {} : { worktree: worktreeFor }),
      }));
    }
    const verifier = oauth.oauthVerifier;
    if (metrics !== undefined && verifier !== undefined) metrics.trackIntrospection(() => verifier.introspectionStats);
  } catch (error) {
    metrics?.close();
    await Promise.allSettled([mcpHttp?.close(), mcpStdio?.close(), grpc?.close()]);
    await host.close();
    throw error;
  }

  if (mcpHttp) addresses.mcp = mcpHttp.url;
  if (grpc) addresses.grpc = grpc.address;
  say(`toolhost: serving ${registry.names().length} tools${file ? ` from ${file}` : ' (embedded defaults)'}`);
  if (mcpHttp) {
    say(`  MCP (Streamable HTTP): ${mcpHttp.url}`);
    const base = mcpHttp.url.replace(/\/mcp$/, '');
    say(`  metrics: ${base}/metrics   health: ${base}/healthz`);
  }
  if (mcpStdio) say('  MCP: stdio');
  if (grpc) say(`  gRPC (sw4rm.tool.ToolService): ${grpc.address}`);
  if (host.fleet) {
    const store = config.cluster?.redisCluster === undefined ? redactUrl(config.cluster?.redis ?? '') : `the Redis Cluster ${config.cluster.redisCluster.nodes.map(redactUrl).join(',')}`;
    say(`  fleet: host ${host.fleet.directory.hostId} on ${store} (Redis ${host.fleet.link.up ? 'up' : 'not reachable yet'})`);
  }

  const stopped = new Promise<string>((resolveStop) => {
    process.once('SIGINT', () => resolveStop('SIGINT'));
    process.once('SIGTERM', () => resolveStop('SIGTERM'));
    void mcpStdio?.closed.then(() => resolveStop('stdin closed'));
  });
  const reason = await stopped;
  process.stderr.write(`toolhost: ${reason}: stopping (${registry.inFlight} calls in flight)\n`);

  // Stop accepting, let calls in flight finish for a while, then cancel what remains.
  const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
  await Promise.allSettled([mcpHttp?.close({ drainMs }), mcpStdio?.close({ drainMs }), grpc?.close()]);
  const deadline = Date.now() + drainMs;
  while (registry.inFlight > 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
  metrics?.close();
  await host.close();
  return 0;
}

/** The config with the store the command line names (`--redis` or `--redis-cluster`, over the file's). */
function withStore(config: ResolvedConfig, options: Pick<ServeOptions, 'redis' | 'redisCluster'>): ResolvedConfig {
  if (options.redis !== undefined) return { ...config, cluster: { ...config.cluster, redis: options.redis, redisCluster: undefined } };
  if (options.redisCluster !== undefined) return { ...config, cluster: { ...config.cluster, redis: undefined, redisCluster: { nodes: [...options.redisCluster] } } };
  return config;
}

/** A Redis URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'redis://(unparseable URL)';
  }
}

/** The introspection settings as the servers take them, without the name of the secret's variable. */
function withoutSecretEnv<T extends { clientSecretEnv: string }>(settings: T): Omit<T, 'clientSecretEnv'> {
  const { clientSecretEnv: _env, ...rest } = settings;
  return rest;
}
