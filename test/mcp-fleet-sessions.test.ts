/**
 * No sticky sessions in a fleet (issue 27, item 3): two MCP HTTP servers in
 * one process, each on its own registry, share 2025-era sessions through one
 * real redis-server. A 1.x client whose requests alternate between the hosts
 * keeps its session (list, call, progress with the flush ping answered on the
 * other host, log level, cancel arriving at the other host); a 2026-07-28
 * client alternates too. Hostile: a session id used with another principal's
 * token, a principal opening more sessions than its fleet-wide cap, a session
 * ended on one host used on the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { defineNativeTool, silentLogger, type TerminalEvent, type ToolRegistry } from '../host/index.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { callWithProgress } from './fixtures/mcp/progress.js';
import { makeRegistry } from './helpers.js';
import { hasRedis, RedisServer, until } from './redis-server.js';

const TOKENS = [{ principal: 'alice', token: 'alice-token-0123456789' }, { principal: 'bob', token: 'bob-token-0123456789' }, { principal: 'carol', token: 'carol-token-0123456789' }, { principal: 'dave', token: 'dave-token-0123456789' }];
const MAX_PER_PRINCIPAL = 4;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface HostUnderTest {
  registry: ToolRegistry;
  fleet: Fleet;
  server: McpHttpServer;
  metrics: HostMetrics;
  finished: Array<{ tool: string; event: TerminalEvent }>;
  started: string[];
  hits: number;
}

function tools(host: Pick<HostUnderTest, 'started'>): Array<ReturnType<typeof defineNativeTool>> {
  return [
    defineNativeTool({
      name: 'whoami',
      description: 'Reports its principal and session.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => ({ principal: ctx.principal ?? null, sessionId: ctx.sessionId ?? null }),
    }),
    defineNativeTool({
      name: 'steps',
      description: 'Reports progress and a log line at each level.',
      inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
      streaming: true,
      run: async (args, _ctx, events) => {
        const { n } = args as { n: number };
        events.log('info', 'an info line');
        events.log('error', 'an error line');
        for (let i = 1; i <= n; i += 1) {
          await sleep(5);
          events.progress((i / n) * 100, `step ${i}`);
        }
        return { done: n };
      },
    }),
    defineNativeTool({
      name: 'slow',
      description: 'Waits for its signal.',
      inputSchema: { type: 'object', properties: { tag: { type: 'string' } } },
      run: async (args, ctx) => {
        host.started.push((args as { tag?: string }).tag ?? '');
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        throw ctx.signal.reason;
      },
    }),
  ];
}

describe.runIf(hasRedis)('MCP sessions shared by a fleet on Redis: no sticky routing', () => {
  const redis = new RedisServer();
  const hosts: HostUnderTest[] = [];
  const clients: Array<{ close(): Promise<void> }> = [];
  const prefix = `mcpfleet${process.pid}:`;

  /** A fetch that sends each request to the host `route` picks (counting hits), whatever URL the client has. */
  function routed(route: (body: string, n: number) => number): typeof fetch {
    let n = 0;
    return async (input, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      const host = hosts[route(body, n++) % hosts.length]!;
      host.hits += 1;
      const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
      url.port = String(host.server.port);
      return fetch(url, init);
    };
  }

  async function legacyClient(token: string, route: (body: string, n: number) => number = (_b, n) => n): Promise<Client> {
    const client = new Client({ name: 'alternating', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(hosts[0]!.server.url), { fetch: routed(route), requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  const raw = (host: HostUnderTest, token: string, body: object, session?: string): Promise<Response> =>
    fetch(host.server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, ...(session === undefined ? {} : { 'Mcp-Session-Id': session }) },
      body: JSON.stringify({ jsonrpc: '2.0', ...body }),
    });
  const initialize = (host: HostUnderTest, token: string): Promise<Response> =>
    raw(host, token, { id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

  beforeAll(async () => {
    await redis.start();
    for (let i = 0; i < 2; i += 1) {
      const host = { finished: [], started: [], hits: 0 } as unknown as HostUnderTest;
      host.registry = makeRegistry();
      host.registry.onCallFinished((tool, event) => host.finished.push({ tool, event }));
      for (const tool of tools(host)) host.registry.register(tool);
      host.fleet = openFleet({ redis: redis.url, keyPrefix: prefix, sessions: { maxPerPrincipal: MAX_PER_PRINCIPAL } }, silentLogger);
      await host.fleet.link.ready();
      host.metrics = createMetrics(host.registry);
      host.server = await startMcpHttpServer(host.registry, { tokens: TOKENS, sessionDirectory: host.fleet.sessions, metrics: host.metrics, limitMetrics: host.metrics.limits });
      hosts.push(host);
    }
    await Promise.all(hosts.map((host) => host.fleet.sessions.listening()));
  });

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const host of hosts) {
      await host.server.close();
      host.metrics.close();
      await host.fleet.close();
      await host.registry.close();
    }
    await redis.stop();
  });

  it('a 1.x client whose requests alternate between the hosts keeps its session: list, call, progress, log level', async () => {
    const client = await legacyClient(TOKENS[0]!.token);
    const logs: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
      logs.push(String((params.data as { message?: unknown }).message));
    });
    const before = hosts.map((host) => host.hits);
    for (let i = 0; i < 4; i += 1) expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('whoami');
    const who = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
    expect((who.structuredContent as { principal: string }).principal).toBe('alice');
    // The log level is set through one host and holds on the other.
    await client.setLoggingLevel('error');
    for (let i = 0; i < 2; i += 1) {
      const { result, progress } = await callWithProgress(client, 'steps', { n: 4 });
      expect(result.isError).toBeFalsy();
      expect(progress.map((entry) => entry.progress)).toEqual([25, 50, 75, 100]);
    }
    expect(logs.filter((line) => line === 'an info line')).toEqual([]);
    expect(logs.filter((line) => line === 'an error line')).toHaveLength(2);
    // Both hosts served this client, and each holds the session now.
    hosts.forEach((host, i) => expect(host.hits - before[i]!).toBeGreaterThan(2));
    expect(hosts.map((host) => host.server.sessions)).toEqual([1, 1]);
  });

  it('the client\'s answer to the server\'s ping reaches the host that asked, through the other host', async () => {
    // Calls go to host 0; everything else, the answer to the ping after the last progress included, to host 1.
    const client = await legacyClient(TOKENS[0]!.token, (body) => (body.includes('"tools/call"') ? 0 : 1));
    const started = performance.now();
    const { result, progress } = await callWithProgress(client, 'steps', { n: 2 });
    const ms = performance.now() - started;
    expect(result.isError).toBeFalsy();
    expect(progress.map((entry) => entry.progress)).toEqual([50, 100]);
    // Unanswered, the ping would hold the response for progressFlushMs (1 s).
    expect(ms).toBeLessThan(900);
  });

  it('a cancel that reaches the other host cancels the call where it runs', async () => {
    const client = await legacyClient(TOKENS[0]!.token, (body, n) => (body.includes('"tools/call"') ? 0 : body.includes('notifications/cancelled') ? 1 : n));
    const controller = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { tag: 'far-cancel' } }, undefined, { signal: controller.signal });
    await expect.poll(() => hosts[0]!.started).toContain('far-cancel');
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(() => hosts[0]!.finished.filter((entry) => entry.tool === 'slow').map((entry) => entry.event.type === 'error' && entry.event.code)).toContain('CANCELLED');
  });

  it('/metrics counts the sessions a host rebuilt and the messages relayed between the hosts', async () => {
    const scrape = async (host: HostUnderTest): Promise<Record<string, number>> => {
      const response = await fetch(new URL('/metrics', host.server.url), { headers: { Authorization: `Bearer ${TOKENS[0]!.token}` } });
      expect(response.status).toBe(200);
      const values: Record<string, number> = {};
      for (const line of (await response.text()).split('\n')) {
        const match = /^(toolhost_server_(?:sessions_restored|messages_relayed)_total\{[^}]*\}) (\d+)$/.exec(line);
        if (match) values[match[1]!] = Number(match[2]);
      }
      return values;
    };
    const count = (values: Record<string, number>, key: string): number => values[key] ?? 0;
    const restored = 'toolhost_server_sessions_restored_total{server="mcp",outcome="restored"}';
    const sent = (kind: string): string => `toolhost_server_messages_relayed_total{server="mcp",direction="sent",kind="${kind}"}`;
    const delivered = (kind: string): string => `toolhost_server_messages_relayed_total{server="mcp",direction="delivered",kind="${kind}"}`;
    const before = await Promise.all(hosts.map(scrape));
    // Opened on host 0 (initialize), then served by host 1: host 1 rebuilds it once.
    const client = await legacyClient(TOKENS[0]!.token, (body, n) => (body.includes('"tools/call"') ? 0 : body.includes('notifications/cancelled') ? 1 : n));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    // A call on host 0 cancelled through host 1: host 1 relays the cancel, host 0 delivers it.
    const controller = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { tag: 'metrics-cancel' } }, undefined, { signal: controller.signal });
    await expect.poll(() => hosts[0]!.started).toContain('metrics-cancel');
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(async () => count(await scrape(hosts[0]!), delivered('cancel'))).toBe(count(before[0]!, delivered('cancel')) + 1);
    const after = await Promise.all(hosts.map(scrape));
    expect(count(after[1]!, restored) - count(before[1]!, restored)).toBe(1);
    expect(count(after[0]!, restored) - count(before[0]!, restored)).toBe(0);
    expect(count(after[1]!, sent('cancel')) - count(before[1]!, sent('cancel'))).toBe(1);
    // A ping answer relayed the other way (the previous tests) shows as a response.
    expect(count(after[0]!, delivered('response')) + count(after[1]!, delivered('response'))).toBeGreaterThan(0);
    // Ended, so the principal's fleet-wide session cap is as the next tests expect.
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
  });

  it('a session id is never accepted from another principal, on any host', async () => {
    const opened = await initialize(hosts[0]!, TOKENS[0]!.token);
    expect(opened.status).toBe(200);
    await opened.text();
    const session = opened.headers.get('mcp-session-id')!;
    for (const host of hosts) {
      const stolen = await raw(host, TOKENS[1]!.token, { id: 2, method: 'tools/list' }, session);
      expect(stolen.status).toBe(404);
    }
    expect(await hosts[1]!.metrics.metrics()).toMatch(/toolhost_server_refused_total\{server="mcp",reason="session_principal"\} [1-9]/);
    // Its owner still has it, through the other host.
    const own = await raw(hosts[1]!, TOKENS[0]!.token, { id: 3, method: 'tools/list' }, session);
    expect(own.status).toBe(200);
    await own.text();
    // Ended through one host, it is gone on both.
    const ended = await fetch(hosts[1]!.server.url, { method: 'DELETE', headers: { Authorization: `Bearer ${TOKENS[0]!.token}`, 'Mcp-Session-Id': session } });
    expect(ended.status).toBe(200);
    expect((await raw(hosts[0]!, TOKENS[0]!.token, { id: 4, method: 'tools/list' }, session)).status).toBe(404);
  });

  it('a principal cannot open more sessions than its fleet-wide cap, whichever host it asks; others still can', async () => {
    // Bob opens sessions on alternating hosts until refused.
    const statuses: number[] = [];
    let refusal: { error?: { data?: { code?: string; reason?: string } } } = {};
    for (let i = 0; i < MAX_PER_PRINCIPAL + 3; i += 1) {
      const response = await initialize(hosts[i % 2]!, TOKENS[1]!.token);
      statuses.push(response.status);
      const text = await response.text();
      if (response.status === 429) refusal = JSON.parse(text) as typeof refusal;
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(MAX_PER_PRINCIPAL);
    expect(statuses.slice(MAX_PER_PRINCIPAL)).toEqual([429, 429, 429]);
    expect(refusal.error?.data).toEqual({ code: 'OVERLOADED', reason: 'principal_sessions_full' });
    expect(await hosts[0]!.metrics.metrics()).toMatch(/toolhost_server_refused_total\{server="mcp",reason="principal_sessions_full"\} [1-9]/);
    // Alice is not held to Bob's count.
    const alice = await initialize(hosts[1]!, TOKENS[0]!.token);
    expect(alice.status).toBe(200);
    await alice.text();
  });

  it('a host with no room to restore a session answers 503 OVERLOADED, not 404 (the client retries instead of opening another)', async () => {
    const small = { started: [] as string[] };
    const registry = makeRegistry();
    for (const tool of tools(small)) registry.register(tool);
    const server = await startMcpHttpServer(registry, { tokens: TOKENS, sessionDirectory: hosts[0]!.fleet.sessions, maxSessions: 1 });
    const busy = new Client({ name: 'busy', version: '1.0.0' });
    try {
      await busy.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${TOKENS[3]!.token}` } } }));
      const controller = new AbortController();
      const running = busy.callTool({ name: 'slow', arguments: { tag: 'hold' } }, undefined, { signal: controller.signal }).catch(() => undefined);
      await expect.poll(() => small.started).toContain('hold');
      const opened = await initialize(hosts[0]!, TOKENS[2]!.token);
      await opened.text();
      const elsewhere = await raw({ server } as HostUnderTest, TOKENS[2]!.token, { id: 5, method: 'tools/list' }, opened.headers.get('mcp-session-id')!);
      expect(elsewhere.status).toBe(503);
      expect(((await elsewhere.json()) as { error: { data: unknown } }).error.data).toEqual({ code: 'OVERLOADED', reason: 'sessions_full' });
      controller.abort();
      await running;
    } finally {
      await busy.close();
      await server.close();
      await registry.close();
    }
  });

  it('a session outlives a Redis restart that lost its record: the host holding it registers it again', async () => {
    const client = await legacyClient(TOKENS[2]!.token, () => 0);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await redis.stop();
    // While Redis is away, the host that holds the session serves it.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await redis.start();
    await until(() => hosts.every((host) => host.fleet.link.up), 10_000, 'the hosts to reconnect');
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    // Registered again: the other host can serve it now.
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const other = await raw(hosts[1]!, TOKENS[2]!.token, { id: 9, method: 'tools/list' }, session);
    expect(other.status).toBe(200);
    await other.text();
  });

  it('a 2026-07-28 client alternating between the hosts needs nothing shared', async () => {
    const client = new ModernClient({ name: 'v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new ModernTransport(new URL(hosts[0]!.server.url), { fetch: routed((_b, n) => n), requestInit: { headers: { Authorization: `Bearer ${TOKENS[0]!.token}` } } }));
    clients.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    for (let i = 0; i < 4; i += 1) {
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect((result.structuredContent as { principal: string }).principal).toBe('alice');
    }
  });
});
