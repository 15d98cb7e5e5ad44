/**
 * Resumable streams on the 2025-11-25 leg (host/servers/mcp-event-store.ts): SSE event ids, and
 * a client that drops its stream mid-call and reconnects with Last-Event-ID receives the events it
 * missed and the call's result. Bounded per session (resume_events / resume_bytes): a resume from
 * an event no longer held is refused 410 (OUTPUT_LIMIT_EXCEEDED, reason resume_window), and one
 * session's event ids replay nothing of another's. A resumed stream ends with its call's response; a
 * resume of a stream that is over (answered, or cancelled) gets what remains and ends, or 405 when
 * nothing remains (host/servers/mcp-stream-resume.ts); the standalone stream resumes too, one at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry } from './helpers.js';
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

describe('a 2025 client that loses its stream mid-call resumes it with Last-Event-ID', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'wait',
      description: 'Sends one progress, then waits until cancelled.',
      inputSchema: { type: 'object' },
      streaming: true,
      run: (_args, ctx, events) => new Promise((_resolve, reject) => {
        events.progress(1, 'waiting');
        ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
      }),
    }));
    registry.register(threeStepsTool((go) => (release = go)));
    registry.register(defineNativeTool({
      name: 'chatty',
      description: 'Many progress notifications.',
      inputSchema: { type: 'object' },
      streaming: true,
      run: async (_args, _ctx, events) => {
        for (let i = 1; i <= 40; i += 1) events.progress(i * 2, `step ${i} ${'x'.repeat(100)}`);
        return { steps: 40 };
      },
    }));
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, progressFlushMs: 0, resumeEvents: 10, resumeBytes: 1_000_000 });
  });
  afterAll(async () => {
    release();
    await server?.close();
    await registry?.close();
  });

  it('receives the events it missed and the result after reconnecting', async () => {
    const sessionId = await openSession(server.url);
    const dropped = new AbortController();
    const post = await fetch(server.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'three_steps', arguments: {}, _meta: { progressToken: 'p' } } }),
      signal: dropped.signal,
    });
    expect(post.headers.get('content-type')).toContain('text/event-stream');
    let lastId: string | undefined;
    const before: string[] = [];
    await readEvents(post, (event) => {
      if (event.id !== undefined) lastId = event.id;
      if (event.data !== '') before.push((JSON.parse(event.data) as { params?: { message?: string } }).params?.message ?? '');
      return before.includes('two');
    });
    // The stream drops mid-call; the call goes on and ends while the client is away.
    dropped.abort();
    expect(lastId).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const resumed = await fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId, 'last-event-id': lastId! } });
    expect(resumed.status).toBe(200);
    const after: Array<{ id?: unknown; method?: string; params?: { message?: string }; result?: { structuredContent?: unknown } }> = [];
    await readEvents(resumed, (event) => {
      if (event.data === '') return false;
      const message = JSON.parse(event.data) as (typeof after)[number];
      after.push(message);
      return message.id === 7;
    });
    expect(after.filter((message) => message.method === 'notifications/progress').map((message) => message.params?.message)).toEqual(['three']);
    expect(after.at(-1)?.result?.structuredContent).toEqual({ steps: 3 });
  });

  it('refuses a resume from an event past the session\'s window (410, resume_window), and another session\'s ids replay nothing', async () => {
    const sessionId = await openSession(server.url);
    const post = await fetch(server.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'chatty', arguments: {}, _meta: { progressToken: 'q' } } }),
    });
    const ids: string[] = [];
    await readEvents(post, (event) => {
      if (event.id !== undefined) ids.push(event.id);
      return event.data !== '' && (JSON.parse(event.data) as { id?: unknown }).id === 8;
    });
    expect(ids.length).toBeGreaterThan(10);
    const resume = (id: string, session = sessionId): Promise<Response> =>
      fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session, 'last-event-id': id } });
    const gone = await resume(ids[0]!);
    expect(gone.status).toBe(410);
    expect(((await gone.json()) as { error: { data: unknown } }).error.data).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', reason: 'resume_window' });
    // Another session presenting this session's event id: nothing of it is replayed.
    const other = await openSession(server.url);
    const foreign = await resume(ids.at(-2)!, other);
    expect(foreign.status).toBe(410);
    await foreign.text();
  });

  const resume = (id: string, session: string): Promise<Response> =>
    fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session, 'last-event-id': id } });

  it('ends a resumed stream once the call it carries is answered, and answers a resume after the answer 405', async () => {
    const sessionId = await openSession(server.url);
    const dropped = new AbortController();
    const post = await fetch(server.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'three_steps', arguments: {}, _meta: { progressToken: 'r' } } }),
      signal: dropped.signal,
    });
    let lastId: string | undefined;
    await readEvents(post, (event) => {
      if (event.id !== undefined) lastId = event.id;
      return event.data.includes('"two"');
    });
    dropped.abort();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Resumed while the call still runs: the stream stays open for the rest of the call, then ends.
    const resumed = await resume(lastId!, sessionId);
    expect(resumed.status).toBe(200);
    setTimeout(() => release(), 200);
    let resultId: string | undefined;
    const ended = await readEvents(resumed, (event) => {
      if (event.data !== '' && (JSON.parse(event.data) as { id?: unknown }).id === 9) resultId = event.id;
      return false;
    });
    expect(ended).toBe(true);
    expect(resultId).toBeDefined();
    // From the response on there is nothing left: 405, which SDK clients take as final (no reconnect loop).
    const complete = await resume(resultId!, sessionId);
    expect(complete.status).toBe(405);
    expect(((await complete.json()) as { error: { data: unknown } }).error.data).toMatchObject({ reason: 'stream_complete' });
    // From before the response: the response again, then the stream ends.
    const again = await resume(lastId!, sessionId);
    expect(again.status).toBe(200);
    const messages: Array<{ id?: unknown }> = [];
    expect(await readEvents(again, (event) => {
      if (event.data !== '') messages.push(JSON.parse(event.data) as { id?: unknown });
      return false;
    })).toBe(true);
    expect(messages.at(-1)?.id).toBe(9);
  });

  it('answers a resume of a cancelled call\'s stream 405 instead of holding it open', async () => {
    const sessionId = await openSession(server.url);
    const post = await fetch(server.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'wait', arguments: {}, _meta: { progressToken: 'w' } } }),
    });
    let lastId: string | undefined;
    const cancelled = fetch(server.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 10 } }) });
    // The server closes the cancelled request's stream (no response comes).
    expect(await readEvents(post, (event) => {
      if (event.id !== undefined) lastId = event.id;
      return false;
    })).toBe(true);
    await (await cancelled).text();
    expect(lastId).toBeDefined();
    // (Should the progress have been written after the stream closed, the resume gets it and ends; the next is 405.)
    let answer = await resume(lastId!, sessionId);
    if (answer.status === 200) {
      expect(await readEvents(answer, (event) => {
        if (event.id !== undefined) lastId = event.id;
        return false;
      })).toBe(true);
      answer = await resume(lastId!, sessionId);
    }
    expect(answer.status).toBe(405);
    await answer.text();
  });

  it('resumes the session\'s standalone stream from its last event, one stream at a time', async () => {
    const sessionId = await openSession(server.url);
    const dropped = new AbortController();
    const standalone = await fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId }, signal: dropped.signal });
    expect(standalone.status).toBe(200);
    // A tool registered now: the session hears tools/list_changed on its standalone stream, with an event id.
    setTimeout(() => registry.register(defineNativeTool({ name: `late_${Date.now()}`, description: 'Late.', inputSchema: { type: 'object' }, run: async () => ({}) })), 50);
    let lastId: string | undefined;
    await readEvents(standalone, (event) => {
      if (event.data.includes('notifications/tools/list_changed')) lastId = event.id;
      return lastId !== undefined;
    });
    dropped.abort();
    expect(lastId).toMatch(/^_GET_stream_\d+$/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const resumedAbort = new AbortController();
    const resumed = await fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId, 'last-event-id': lastId! }, signal: resumedAbort.signal });
    expect(resumed.status).toBe(200);
    // While it is open, another resume of the same stream is refused (one standalone stream per session).
    const second = await resume(lastId!, sessionId);
    expect(second.status).toBe(409);
    await second.text();
    resumedAbort.abort();
    await resumed.body?.cancel().catch(() => undefined);
  });
});
