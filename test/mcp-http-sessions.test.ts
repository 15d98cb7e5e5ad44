/**
 * The MCP HTTP server's sessions are bounded: abandoned sessions never lock
 * new clients out (LRU eviction of idle sessions at the cap, idle expiry, a
 * per-client limit), and browser requests from foreign origins are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { SessionTable } from '../host/servers/mcp-sessions.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { makeRegistry } from './helpers.js';

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'abandoner', version: '0' } },
});
const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

/** Open a session with a raw initialize request and abandon it; returns its id. */
async function abandonSession(url: string, headers: Record<string, string> = {}): Promise<{ status: number; id: string | null; body: string }> {
  const response = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers }, body: INIT });
  const body = await response.text();
  return { status: response.status, id: response.headers.get('mcp-session-id'), body };
}

async function serve(server: McpHttpServer): Promise<CallToolResult> {
  const client = new Client({ name: 'late-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  try {
    return (await client.callTool({ name: 'ping', arguments: {} })) as CallToolResult;
  } finally {
    await client.close();
  }
}

describe('MCP HTTP sessions', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let metrics: HostMetrics;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object' }, run: () => ({ pong: true }) }));
    metrics = createMetrics(registry);
    // The defaults: at most 1000 sessions, 256 per client.
    server = await startMcpHttpServer(registry, { metrics, limitMetrics: metrics.limits });
  });
  afterAll(async () => {
    await server?.close();
    metrics?.close();
    await registry?.close();
  });

  // 300 from one address: past its 256 (the global cap of 1000 is checked below with max_sessions 3; one
  // address never reaches it, so opening 1,200 here only cost ~1.5 s of CPU more).
  it('serves a new client after 300 sessions were opened and abandoned from one address', async () => {
    for (let batch = 0; batch < 3; batch += 1) {
      const opened = await Promise.all(Array.from({ length: 100 }, () => abandonSession(server.url)));
      expect(opened.every((entry) => entry.status === 200 && entry.id !== null)).toBe(true);
    }
    // One client address holds at most 256 sessions: its least recently used idle ones were evicted.
    expect(server.sessions).toBeLessThanOrEqual(256);
    const result = await serve(server);
    expect(result.structuredContent).toEqual({ pong: true });
    const text = await metrics.metrics();
    expect(text).toMatch(/toolhost_server_sessions_ended_total\{server="mcp",reason="evicted_client_limit"\} (\d+)/);
    expect(text).toMatch(/toolhost_server_sessions\{server="mcp"\} \d+/);
  });

  it('answers 404 to an evicted session, so its client initializes again', async () => {
    const first = await abandonSession(server.url);
    for (let i = 0; i < 3; i += 1) await Promise.all(Array.from({ length: 100 }, () => abandonSession(server.url)));
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const response = await fetch(server.url, { method: 'POST', headers: { ...HEADERS, 'Mcp-Session-Id': first.id!, 'Mcp-Protocol-Version': '2025-06-18' }, body: list });
    expect(response.status).toBe(404);
  });

  it('refuses a request with a foreign Origin (403, PERMISSION_DENIED) and accepts its own origin', async () => {
    const foreign = await abandonSession(server.url, { Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: { message: 'Forbidden: Origin not allowed', data: { code: 'PERMISSION_DENIED', reason: 'origin' } } });
    const own = await abandonSession(server.url, { Origin: `http://localhost:${server.port}` });
    expect(own.status).toBe(200);
    expect(await metrics.metrics()).toMatch(/toolhost_server_refused_total\{server="mcp",reason="origin"\} 1/);
  });
});

describe('MCP HTTP session limits, configured', () => {
  let registry: ToolRegistry;

  beforeAll(() => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object' }, run: () => ({ pong: true }) }));
  });
  afterAll(async () => {
    await registry?.close();
  });

  it('evicts the least recently used idle session at max_sessions, and accepts the origins it is told to', async () => {
    const server = await startMcpHttpServer(registry, { maxSessions: 3, allowedOrigins: ['https://app.example'] });
    try {
      const ids = [];
      for (let i = 0; i < 5; i += 1) ids.push((await abandonSession(server.url, { Origin: 'https://app.example' })).id);
      expect(server.sessions).toBe(3);
      expect((await abandonSession(server.url, { Origin: `http://localhost:${server.port}` })).status).toBe(403);
      expect((await serve(server)).structuredContent).toEqual({ pong: true });
    } finally {
      await server.close();
    }
  });

  it('refuses a new session only when every session is busy', () => {
    const closed: string[] = [];
    const table = new SessionTable<string>({ maxSessions: 2, maxPerClient: 2, idleMs: 1000 }, (id) => closed.push(id), () => 0);
    table.add('a', 'c1', 'a');
    table.add('b', 'c2', 'b');
    const doneA = table.use('a');
    table.use('b');
    expect(table.reserve('c3')).toMatchObject({ ok: false, reason: 'sessions_full' });
    doneA();
    expect(table.reserve('c3')).toEqual({ ok: true });
    expect(closed).toEqual(['a']);
  });

  it('expires idle sessions after idleMs, never busy ones', () => {
    let now = 0;
    const closed: string[] = [];
    const table = new SessionTable<string>({ maxSessions: 10, maxPerClient: 10, idleMs: 1000 }, (id) => closed.push(id), () => now);
    table.add('idle', 'c', 'idle');
    table.add('busy', 'c', 'busy');
    table.use('busy');
    now = 999;
    expect(table.sweep()).toBe(0);
    now = 1000;
    expect(table.sweep()).toBe(1);
    expect(closed).toEqual(['idle']);
    expect(table.size).toBe(1);
  });
});
