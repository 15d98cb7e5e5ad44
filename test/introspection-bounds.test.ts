/**
 * Issue 35, T10: token introspection is bounded, so no unauthenticated client
 * drives the host's requests to the authorization server. Against a local
 * authorization server on 127.0.0.1 that counts its introspection requests
 * (and the most it held at once): a bogus token repeated is asked about once
 * (negative cache); one token checked by many at once is one request (single
 * flight); 800 distinct bogus tokens at once never put more than
 * `max_in_flight` requests there; one client address past its rate gets 429
 * while a valid token from another address is served; each is counted in
 * /metrics.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../host/config/index.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { createAuthenticator, createOAuthVerifier } from '../host/servers/auth/authenticator.js';
import { peerAddress } from '../host/servers/grpc/authenticate.js';
import { addressKey } from '../host/servers/auth/address-rate.js';
import type { IntrospectionOptions } from '../host/servers/auth/oauth-options.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { makeRegistry, root } from './helpers.js';
import { INTROSPECTION_CLIENT, makeKey, startAuthorizationServer, type TestAuthorizationServer } from './oauth-server.js';

const AUDIENCE = 'https://tools.example.test/mcp';
type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

/** POST an MCP initialize with this bearer token from a local address of our choosing (any 127.0.0.0/8 address is ours). */
function postFrom(url: string, localAddress: string, token: string): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      localAddress,
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

/** Run `tasks` with at most `width` at once. */
async function inBatches<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += width) {
    out.push(...await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, j) => task(start + j))));
  }
  return out;
}

describe('introspection over MCP HTTP', () => {
  let as: TestAuthorizationServer;
  let registry: ToolRegistry;
  let metrics: HostMetrics;
  let mcp: McpHttpServer;
  let grpcServer: GrpcServerHandle;
  let grpcClient: ToolServiceClient;
  const grpcCall = (token: string): Promise<grpc.ServiceError | null> => new Promise((resolve) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    grpcClient.Call({ tool_name: 'noop', args: Buffer.from('{}') }, metadata, (error) => resolve(error));
  });

  beforeAll(async () => {
    as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k', 'ES256')] });
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'noop', description: 'Nothing.', inputSchema: { type: 'object' }, run: async () => ({}) }));
    const verifier = createOAuthVerifier({
      issuer: as.issuer,
      audience: AUDIENCE,
      introspection: { endpoint: `${as.issuer}/introspect`, ...INTROSPECTION_CLIENT, addressRate: 0.05, addressBurst: 5 },
    }, []);
    metrics = createMetrics(registry);
    metrics.trackIntrospection(() => verifier.introspectionStats);
    mcp = await startMcpHttpServer(registry, { oauthVerifier: verifier, metrics, limitMetrics: metrics.limits, progressFlushMs: 0 });
    grpcServer = await startGrpcServer(registry, { port: 0, oauthVerifier: verifier, limitMetrics: metrics.limits, shutdownTimeoutMs: 200 });
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  });
  afterAll(async () => {
    grpcClient?.close();
    await grpcServer?.close();
    await mcp?.close();
    metrics?.close();
    await registry?.close();
    await as?.close();
  });

  it('asks the authorization server about one bogus token a handful of times, not once per request (500 requests)', async () => {
    const before = as.introspections;
    const answers = await inBatches(500, 50, () => postFrom(mcp.url, '127.0.0.1', 'bogus-token-never-issued'));
    expect(answers.every((answer) => answer.status === 401)).toBe(true);
    expect(as.introspections - before).toBeLessThanOrEqual(3);
    expect(await metrics.metrics()).toMatch(/toolhost_introspection_cache_hits_total\{answer="inactive"\} (4\d\d)/);
  });

  it('refuses an address past its rate with 429 and Retry-After, while a valid token from another address is served', async () => {
    const valid = as.opaque({ sub: 'dora' });
    // 127.0.0.2 sends distinct bogus tokens (each would be a request): its burst (5) is asked about, then 429.
    const attacker = await inBatches(40, 10, (i) => postFrom(mcp.url, '127.0.0.2', `bogus-${i}-${Math.random()}`));
    const limited = attacker.filter((answer) => answer.status === 429);
    expect(attacker.filter((answer) => answer.status === 401).length).toBeLessThanOrEqual(7);
    expect(limited.length).toBeGreaterThanOrEqual(33);
    expect(Number(limited[0]!.retryAfter)).toBeGreaterThanOrEqual(1);
    // Control: another address, a valid token: served (and then served again from the cache).
    expect((await postFrom(mcp.url, '127.0.0.3', valid)).status).toBe(200);
    expect((await postFrom(mcp.url, '127.0.0.3', valid)).status).toBe(200);
    const text = await metrics.metrics();
    expect(text).toMatch(/toolhost_introspection_refused_total\{reason="rate_limited"\} (3\d)/);
    expect(text).toMatch(/toolhost_server_refused_total\{server="mcp",reason="auth_rate_limited"\} (3\d)/);
    expect(text).toContain('toolhost_introspection_requests_total{outcome="active"} 1');
  });
  it('refuses a gRPC peer past its rate with RESOURCE_EXHAUSTED (OVERLOADED), while a valid token is still served', async () => {
    const valid = as.opaque({ sub: 'gus' });
    // 127.0.0.1 spent one of its 5 on the bogus token above: of 12 distinct bogus tokens, at most 4 are asked about.
    const errors = await inBatches(12, 4, (i) => grpcCall(`grpc-bogus-${i}-${Math.random()}`));
    const exhausted = errors.filter((error) => error?.code === grpc.status.RESOURCE_EXHAUSTED);
    expect(exhausted.length).toBeGreaterThanOrEqual(8);
    expect(exhausted[0]!.metadata.get('toolhost-error-code')).toEqual(['OVERLOADED']);
    expect(errors.filter((error) => error?.code === grpc.status.UNAUTHENTICATED).length).toBeLessThanOrEqual(4);
    // Control: a valid token from another address (MCP) is asked about and served; over gRPC, once cached, too.
    expect((await postFrom(mcp.url, '127.0.0.4', valid)).status).toBe(200);
    expect(await grpcCall(valid)).toBeNull();
  });
});

describe('introspection bounds on the authorization server', () => {
  let as: TestAuthorizationServer;
  beforeAll(async () => {
    // Each answer is held a little, so requests sent together overlap there.
    as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k', 'ES256')], introspectionDelayMs: 20 });
  });
  afterAll(async () => {
    await as?.close();
  });
  const introspection = (more: Partial<IntrospectionOptions>): IntrospectionOptions => ({ endpoint: `${as.issuer}/introspect`, ...INTROSPECTION_CLIENT, ...more });

  it('never has more than max_in_flight requests at the authorization server: 800 distinct bogus tokens at once', async () => {
    const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: introspection({ maxInFlight: 16, maxWaiting: 1000, addressRate: 0 }) } })!;
    const before = as.introspections;
    const answers = await Promise.all(Array.from({ length: 800 }, (_, i) => auth.authenticate(`Bearer flood-${i}`, { address: '192.0.2.7' })));
    expect(answers.every((answer) => !answer.ok && answer.status === 401 && answer.reason === 'inactive')).toBe(true);
    expect(as.introspections - before).toBe(800);
    expect(as.peakIntrospections).toBeLessThanOrEqual(16);
  });

  it('refuses checks past max_waiting with 503 (busy), and never sends them', async () => {
    const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: introspection({ maxInFlight: 4, maxWaiting: 10, addressRate: 0 }) } })!;
    const before = as.introspections;
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => auth.authenticate(`Bearer busy-${i}`, { address: '192.0.2.8' })));
    const busy = answers.filter((answer) => !answer.ok && answer.status === 503 && answer.reason === 'busy');
    expect(busy.length).toBe(300 - 14);
    expect(as.introspections - before).toBe(14);
    expect(as.peakIntrospections).toBeLessThanOrEqual(16);
  });

  it('sends one request for one valid token checked by 50 callers at once, and serves them all', async () => {
    const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: introspection({}) } })!;
    const token = as.opaque({ sub: 'erin' });
    const before = as.introspections;
    const answers = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(`Bearer ${token}`, { address: '192.0.2.9' })));
    expect(answers.every((answer) => answer.ok && answer.caller.principal === 'erin')).toBe(true);
    expect(as.introspections - before).toBe(1);
  });

  it('forgets an inactive answer after negative_cache_ms (0: never remembered)', async () => {
    const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: introspection({ negativeCacheMs: 0, addressRate: 0 }) } })!;
    const before = as.introspections;
    for (let i = 0; i < 3; i += 1) expect(await auth.authenticate('Bearer bogus-again')).toMatchObject({ ok: false, reason: 'inactive' });
    expect(as.introspections - before).toBe(3);
  });
});

describe('client addresses', () => {
  it('count IPv4-mapped IPv6 as IPv4 and IPv6 by its /64; gRPC peers are read without their port', () => {
    expect(addressKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:bbbb::2'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(peerAddress('127.0.0.1:50123')).toBe('127.0.0.1');
    expect(peerAddress('::1:50123')).toBe('::1');
    expect(peerAddress('[::1]:50123')).toBe('::1');
  });
});

describe('servers.auth.oauth.introspection bounds in toolhost.yaml', () => {
  it('resolve to the servers\' options, and refuse a bound out of range', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-introspection-'));
    try {
      const file = join(dir, 'toolhost.yaml');
      const write = (bounds: string): void => writeFileSync(file, ['tools: []', 'servers:', '  auth:', '    oauth:', '      issuer: https://auth.example.test', `      audience: ${AUDIENCE}`,
        `      introspection: { endpoint: https://auth.example.test/introspect, client_id: rs, client_secret_env: SECRET, ${bounds} }`, ''].join('\n'));
      write('negative_cache_ms: 5000, max_in_flight: 8, max_waiting: 64, address_rate: 2.5, address_burst: 10, max_addresses: 500');
      expect((await loadConfig(file, { env: {} })).resolved.servers.oauth?.introspection).toEqual({
        endpoint: 'https://auth.example.test/introspect', clientId: 'rs', clientSecretEnv: 'SECRET',
        negativeCacheMs: 5000, maxInFlight: 8, maxWaiting: 64, addressRate: 2.5, addressBurst: 10, maxAddresses: 500,
      });
      write('max_in_flight: 0');
      await expect(loadConfig(file, { env: {} })).rejects.toThrow('max_in_flight');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
