/**
 * Resumable streams across the hosts of a fleet (host/fleet/redis-event-log.ts): a 2025 client
 * whose stream on one host drops mid-call reconnects with Last-Event-ID to the other host (no
 * sticky routing), which restores the session and replays the events it missed and the result
 * from the fleet's copy in Redis, then ends the stream (nothing more will come on it there); a resume
 * from the result, on either host, is 405 (nothing left: SDK clients stop).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, type ToolRegistry } from '../host/index.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry } from './helpers.js';
import { hasRedis, RedisServer } from './redis-server.js';
import { threeStepsTool } from './three-steps-tool.js';

interface SseEvent {
  id?: string;
  data: string;
}

/** Read SSE events from a response body, handing each to `onEvent` until it returns true (false) or the stream ends (true). */
async function readEvents(response: Response, onEvent: (event: SseEvent) => boolean): Promise<boolean> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return true;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) event.id = line.slice(4);
        else if (line.startsWith('data: ')) event.data += line.slice(6);
      }
      if (onEvent(event)) {
        await reader.cancel().catch(() => undefined);
        return false;
      }
    }
  }
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** A 2025-11-25 session opened by hand; returns its id. */
async function openSession(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'resume-test', version: '1.0.0' } } }),
  });
  const sessionId = init.headers.get('mcp-session-id')!;
  await init.text();
  await (await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return sessionId;
}

describe.runIf(hasRedis)('a 2025 client resumes its stream on another host of the fleet', () => {
  const redis = new RedisServer();
  const hosts: Array<{ registry: ToolRegistry; fleet: Fleet; server: McpHttpServer }> = [];
  let release: () => void = () => undefined;

  beforeAll(async () => {
    await redis.start();
    for (let i = 0; i < 2; i += 1) {
      const registry = makeRegistry();
      registry.register(threeStepsTool((go) => (release = go)));
      const fleet = openFleet({ redis: redis.url, keyPrefix: `resume${process.pid}:` }, silentLogger);
      await fleet.link.ready();
      const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, progressFlushMs: 0, resumeEvents: 1000, sessionDirectory: fleet.sessions, eventLog: fleet.events });
      hosts.push({ registry, fleet, server });
    }
    await Promise.all(hosts.map((host) => host.fleet.sessions.listening()));
  });
  afterAll(async () => {
    release();
    for (const host of hosts) {
      await host.server.close();
      await host.fleet.close();
      await host.registry.close();
    }
    await redis.stop();
  });

  it('replays the missed events and the result from the fleet\'s copy', async () => {
    const [a, b] = hosts as [(typeof hosts)[number], (typeof hosts)[number]];
    const sessionId = await openSession(a.server.url);
    const dropped = new AbortController();
    const post = await fetch(a.server.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'three_steps', arguments: {}, _meta: { progressToken: 'p' } } }),
      signal: dropped.signal,
    });
    let lastId: string | undefined;
    const before: string[] = [];
    await readEvents(post, (event) => {
      if (event.id !== undefined) lastId = event.id;
      if (event.data !== '') before.push((JSON.parse(event.data) as { params?: { message?: string } }).params?.message ?? '');
      return before.includes('two');
    });
    dropped.abort();
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const resumed = await fetch(b.server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId, 'last-event-id': lastId! } });
    expect(resumed.status).toBe(200);
    const after: Array<{ id?: unknown; method?: string; params?: { message?: string }; result?: { structuredContent?: unknown } }> = [];
    let resultId: string | undefined;
    const ended = await readEvents(resumed, (event) => {
      if (event.data === '') return false;
      const message = JSON.parse(event.data) as (typeof after)[number];
      after.push(message);
      if (message.id === 7) resultId = event.id;
      return false;
    });
    expect(ended).toBe(true);
    expect(after.filter((message) => message.method === 'notifications/progress').map((message) => message.params?.message)).toEqual(['three']);
    expect(after.at(-1)?.result?.structuredContent).toEqual({ steps: 3 });
    for (const host of [b, a]) {
      const complete = await fetch(host.server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId, 'last-event-id': resultId! } });
      expect(complete.status).toBe(405);
      await complete.text();
    }
  });
});
