/**
 * The HTTP streaming tool through the call path, against local servers on
 * 127.0.0.1 (ephemeral ports): SSE, NDJSON and plain bodies, split writes,
 * failures of every kind, cancellation, and the network policy. Each call
 * must end with exactly one terminal event, after its deltas in order.
 */
import { createServer, type IncomingMessage, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ToolRegistry, silentLogger, type CallOptions, type ErrorEvent, type ResultEvent, type ToolEvent } from '../host/index.js';
import { createHttpStreamingTool, type HttpStreamingToolSpec } from '../host/tools/http-streaming-tool.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { collect, terminalCount, types } from './helpers.js';

// ---------------------------------------------------------------------------
// Local servers

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Resolves when the server sees the exchange's connection (or response) closed. */
  closed: Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

interface LocalServer {
  server: Server;
  port: number;
  base: string;
  /** TCP connections accepted so far. */
  connections: number;
  requests: Recorded[];
  routes: Map<string, Handler>;
  /** Resolves with the next request that arrives. */
  nextRequest(): Promise<Recorded>;
}

async function startServer(): Promise<LocalServer> {
  const routes = new Map<string, Handler>();
  const waiting: Array<(request: Recorded) => void> = [];
  const server = createServer();
  const local: LocalServer = {
    server,
    port: 0,
    base: '',
    connections: 0,
    requests: [],
    routes,
    nextRequest: () => new Promise((resolve) => waiting.push(resolve)),
  };
  server.on('connection', () => {
    local.connections += 1;
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
      const recorded: Recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), closed };
      local.requests.push(recorded);
      for (const resolve of waiting.splice(0)) resolve(recorded);
      const path = new URL(recorded.url, 'http://x').pathname;
      const handler = routes.get(path);
      if (!handler) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('no such route');
        return;
      }
      void Promise.resolve(handler(req, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local.port = (server.address() as AddressInfo).port;
  local.base = `http://127.0.0.1:${local.port}`;
  return local;
}

async function stopServer(local: LocalServer): Promise<void> {
  local.server.closeAllConnections();
  await new Promise<void>((resolve) => local.server.close(() => resolve()));
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Write pieces one by one, pausing between them so that each goes out in its own TCP segment. */
async function writeSlowly(res: ServerResponse, pieces: Array<string | Buffer>, gapMs = 15): Promise<void> {
  for (const piece of pieces) {
    if (res.destroyed) return;
    res.write(piece);
    await pause(gapMs);
  }
}

function streamHead(res: ServerResponse, contentType: string): void {
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** Resolves true when `promise` settles within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------
// Routes

let main: LocalServer;
let other: LocalServer;
/** A port nothing listens on. */
let closedPort: number;

function installRoutes(routes: Map<string, Handler>): void {
  routes.set('/sse', async (_req, res) => {
    streamHead(res, 'text/event-stream; charset=utf-8');
    await writeSlowly(res, [
      ': a comment\r\nretry: 100\r\nid: 1\r\nevent: upd',
      // Multi-line data (two lines of one JSON document); the write ends between \r and \n.
      'ate\r\ndata: {"step":1,\r\ndata: "more":true}\r',
      '\n\r\n',
      'data: plain text\ndata: second line\n\n: keep-alive\n\nid: 2\n\n',
      // A multi-byte character split across two writes.
      Buffer.from('data: caf\xc3', 'latin1'),
      Buffer.concat([Buffer.from([0xa9]), Buffer.from('\n\ndata: [DONE]\n\n')]),
    ]);
    res.end();
  });
  routes.set('/ndjson', async (_req, res) => {
    streamHead(res, 'application/x-ndjson');
    await writeSlowly(res, ['{"i":1}\r\n\r\n', '{"i"', ':2}\n\n   \n', 'not json\r', '\n{"i":3}']);
    res.end();
  });
  routes.set('/jsonl', async (_req, res) => {
    streamHead(res, 'application/jsonl');
    await writeSlowly(res, ['{"j":1}\n', '{"j":2}\n']);
    res.end();
  });
  routes.set('/json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, items: [1, 2] }));
  });
  routes.set('/text', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello\nworld');
  });
  routes.set('/png', (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  });
  routes.set('/empty', (_req, res) => {
    res.writeHead(204).end();
  });
  routes.set('/echo', (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const query: Record<string, string[]> = {};
    for (const [key, value] of url.searchParams) (query[key] ??= []).push(value);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, query }));
  });
  routes.set('/fail', (_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom",\n "detail": "the model is overloaded"}');
  });
  routes.set('/fail-long', (_req, res) => {
    res.writeHead(503, { 'content-type': 'text/plain' }).end('x'.repeat(10_000));
  });
  routes.set('/drop', async (_req, res) => {
    streamHead(res, 'text/event-stream');
    await writeSlowly(res, ['data: one\n\n', 'data: tw']);
    res.socket?.destroy();
  });
  routes.set('/truncated', async (_req, res) => {
    streamHead(res, 'text/event-stream');
    await writeSlowly(res, ['data: one\n\n', 'data: two\n']);
    res.end();
  });
  routes.set('/ndjson-truncated', async (_req, res) => {
    streamHead(res, 'application/x-ndjson');
    await writeSlowly(res, ['{"a":1}\n', '{"b":']);
    res.end();
  });
  // Never answers (the client gives up, or is cancelled).
  routes.set('/hang', () => undefined);
  // Two events, then silence with the connection open.
  routes.set('/two-then-wait', async (_req, res) => {
    streamHead(res, 'text/event-stream');
    await writeSlowly(res, ['data: {"n":1}\n\n', 'data: {"n":2}\n\n']);
  });
  routes.set('/big', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(`${JSON.stringify({ pad: 'x'.repeat(200) })}\n`);
    res.end(`${JSON.stringify({ pad: 'y'.repeat(200) })}\n`);
  });
  routes.set('/redirect', (_req, res) => {
    res.writeHead(307, { location: '/jsonl' }).end();
  });
  routes.set('/redirect-away', (_req, res) => {
    res.writeHead(302, { location: `${other.base}/json` }).end();
  });
}

beforeAll(async () => {
  main = await startServer();
  other = await startServer();
  installRoutes(main.routes);
  installRoutes(other.routes);
  const scratch = await startServer();
  closedPort = scratch.port;
  await stopServer(scratch);
});

afterAll(async () => {
  await stopServer(main);
  await stopServer(other);
});

// ---------------------------------------------------------------------------
// The registry and tools

let registry: ToolRegistry;

beforeEach(() => {
  registry = new ToolRegistry({ logger: silentLogger, audit: new MemoryAuditLog() });
});

afterEach(async () => {
  await registry.close();
});

/** Register a tool calling `path` on the main server, granted EGRESS_RESTRICTED to the main server only. */
function httpTool(name: string, path: string, extra: Partial<HttpStreamingToolSpec> = {}): void {
  registry.register(createHttpStreamingTool({
    name,
    description: `Calls ${path}.`,
    url: `${main.base}${path}`,
    grant: { network: 'EGRESS_RESTRICTED', egressAllow: [`127.0.0.1:${main.port}`] },
    defaultPolicy: { network_policy: 'EGRESS_RESTRICTED' },
    ...extra,
  }));
}

async function call(name: string, args: unknown = {}, options: CallOptions = {}): Promise<ToolEvent[]> {
  const events = await collect(registry.stream(name, args, options));
  expect(terminalCount(events)).toBe(1);
  expect(['result', 'error']).toContain(events.at(-1)?.type);
  return events;
}

const deltas = (events: ToolEvent[]): unknown[] => events.flatMap((event) => (event.type === 'delta' ? [event.data] : []));
const terminal = (events: ToolEvent[]): ToolEvent => events.at(-1)!;

function expectToolError(events: ToolEvent[], code: string): ErrorEvent & { details: { code: string; details: Record<string, unknown> } } {
  const last = terminal(events);
  expect(last).toMatchObject({ type: 'error', code: 'TOOL_ERROR', stage: 'run', details: { code } });
  return last as ErrorEvent & { details: { code: string; details: Record<string, unknown> } };
}

// ---------------------------------------------------------------------------
// Tests

describe('the HTTP streaming tool: responses', () => {
  it('turns an SSE stream into one delta per event: multi-line data, comments, id/event/retry, writes split mid-line and mid-\\r\\n', async () => {
    httpTool('sse', '/sse', { headers: { 'x-api-key': 'secret' } });
    const events = await call('sse', { prompt: 'hi', n: 2 });
    expect(types(events)).toEqual(['start', 'delta', 'delta', 'delta', 'delta', 'result']);
    const expected = [{ step: 1, more: true }, 'plain text\nsecond line', 'café', '[DONE]'];
    expect(deltas(events)).toEqual(expected);
    expect((terminal(events) as ResultEvent).data).toEqual({
      status: 200,
      url: `${main.base}/sse`,
      contentType: 'text/event-stream; charset=utf-8',
      events: 4,
      data: expected,
    });

    const request = main.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(JSON.parse(request.body)).toEqual({ prompt: 'hi', n: 2 });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.accept).toContain('text/event-stream');
    expect(request.headers.accept).toContain('application/x-ndjson');
    expect(request.headers.accept).toContain('application/jsonl');
    expect(request.headers['x-api-key']).toBe('secret');
    // The exchange is over: the connection was closed.
    expect(await within(request.closed, 2000)).toBe(true);
  });

  it('turns NDJSON into one delta per non-empty line: empty and blank lines skipped, CRLF, non-JSON lines as text, a final line without newline', async () => {
    httpTool('ndjson', '/ndjson');
    const events = await call('ndjson');
    expect(types(events)).toEqual(['start', 'delta', 'delta', 'delta', 'delta', 'result']);
    expect(deltas(events)).toEqual([{ i: 1 }, { i: 2 }, 'not json', { i: 3 }]);
    expect((terminal(events) as ResultEvent).data).toMatchObject({ status: 200, contentType: 'application/x-ndjson', events: 4 });
  });

  it('streams application/jsonl the same way', async () => {
    httpTool('jsonl', '/jsonl');
    const events = await call('jsonl');
    expect(deltas(events)).toEqual([{ j: 1 }, { j: 2 }]);
    expect(terminal(events)).toMatchObject({ type: 'result', data: { events: 2, data: [{ j: 1 }, { j: 2 }] } });
  });

  it('answers a plain JSON body with one delta and the parsed JSON as the result', async () => {
    httpTool('json', '/json');
    const events = await call('json', { q: 1 });
    expect(types(events)).toEqual(['start', 'delta', 'result']);
    expect(deltas(events)).toEqual([{ ok: true, items: [1, 2] }]);
    const result = terminal(events) as ResultEvent;
    expect(result.data).toEqual({ ok: true, items: [1, 2] });
    expect(result.result.isError).toBe(false);
  });

  it('answers a text body with its text, an image with an image block, an empty body with null and no delta', async () => {
    httpTool('text', '/text');
    httpTool('png', '/png');
    httpTool('empty', '/empty');
    const text = await call('text');
    expect(deltas(text)).toEqual(['hello\nworld']);
    expect((terminal(text) as ResultEvent).result.content).toEqual([{ type: 'text', text: 'hello\nworld' }]);

    const png = await call('png');
    const base64 = Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64');
    expect(deltas(png)).toEqual([{ contentType: 'image/png', bytes: 4, base64 }]);
    expect((terminal(png) as ResultEvent).result.content).toEqual([{ type: 'image', data: base64, mimeType: 'image/png' }]);

    const empty = await call('empty');
    expect(types(empty)).toEqual(['start', 'result']);
    expect((terminal(empty) as ResultEvent).data).toBeNull();
  });

  it('sends GET arguments as query parameters, arrays repeated', async () => {
    httpTool('get', '/echo?fixed=1', { method: 'GET' });
    const events = await call('get', { q: 'a b', n: 3, tag: ['x', 'y'], flag: true });
    expect(deltas(events)).toEqual([{ method: 'GET', query: { fixed: ['1'], q: ['a b'], n: ['3'], tag: ['x', 'y'], flag: ['true'] } }]);
    expect(main.requests.at(-1)!.body).toBe('');
  });

  it('follows a redirect, checking the new hop', async () => {
    httpTool('redirect', '/redirect');
    const events = await call('redirect');
    expect(deltas(events)).toEqual([{ j: 1 }, { j: 2 }]);
    expect(terminal(events)).toMatchObject({ type: 'result', data: { url: `${main.base}/jsonl` } });
  });
});

describe('the HTTP streaming tool: failures', () => {
  it('ends a non-2xx answer with HTTP_STATUS, the status and a body excerpt, and no delta', async () => {
    httpTool('fail', '/fail');
    const events = await call('fail');
    expect(types(events)).toEqual(['start', 'error']);
    const error = expectToolError(events, 'HTTP_STATUS');
    expect(error.message).toBe(`POST ${main.base}/fail answered 500 Internal Server Error: {"error":"boom", "detail": "the model is overloaded"}`);
    expect(error.details.details).toMatchObject({ status: 500, bodyExcerpt: '{"error":"boom",\n "detail": "the model is overloaded"}', contentType: 'application/json' });
  });

  it('never shows the URL\'s query string (it may carry a key) in errors', async () => {
    httpTool('keyed_fail', '/fail?key=s3cret');
    httpTool('keyed_denied', '/json?key=s3cret');
    httpTool('keyed_truncated', '/truncated?key=s3cret');
    const failed = await call('keyed_fail');
    const denied = await call('keyed_denied', {}, { policy: { network_policy: 'DENY_ALL' } });
    const truncated = await call('keyed_truncated');
    expect(main.requests.at(-1)!.url).toBe('/truncated?key=s3cret');
    for (const events of [failed, denied, truncated]) {
      expect(terminal(events).type).toBe('error');
      expect(JSON.stringify(terminal(events))).not.toContain('s3cret');
    }
    expect(terminal(denied)).toMatchObject({ code: 'NETWORK_DENIED', details: { url: `${main.base}/json` } });
  });

  it('caps the excerpt of a long error body', async () => {
    httpTool('fail_long', '/fail-long');
    const error = expectToolError(await call('fail_long'), 'HTTP_STATUS');
    expect(error.details.details.status).toBe(503);
    expect(error.details.details.bodyExcerpt).toBe('x'.repeat(2048));
    expect(error.message.length).toBeLessThan(400);
  });

  it('ends a connection dropped mid-stream with HTTP_STREAM_BROKEN after the complete events', async () => {
    httpTool('drop', '/drop');
    const events = await call('drop');
    expect(types(events)).toEqual(['start', 'delta', 'error']);
    expect(deltas(events)).toEqual(['one']);
    const error = expectToolError(events, 'HTTP_STREAM_BROKEN');
    expect(error.details.details).toMatchObject({ phase: 'body', events: 1, status: 200 });
  });

  it('ends a stream that stops inside an SSE event with HTTP_TRUNCATED_EVENT, never a silent truncation', async () => {
    httpTool('truncated', '/truncated');
    const events = await call('truncated');
    expect(types(events)).toEqual(['start', 'delta', 'error']);
    expect(deltas(events)).toEqual(['one']);
    const error = expectToolError(events, 'HTTP_TRUNCATED_EVENT');
    expect(error.details.details).toMatchObject({ partial: 'two', events: 1 });
  });

  it('ends NDJSON cut inside its last line with HTTP_TRUNCATED_EVENT', async () => {
    httpTool('ndjson_truncated', '/ndjson-truncated');
    const events = await call('ndjson_truncated');
    expect(deltas(events)).toEqual([{ a: 1 }]);
    expect(expectToolError(events, 'HTTP_TRUNCATED_EVENT').details.details).toMatchObject({ partial: '{"b":' });
  });

  it('ends a server that never answers with HTTP_TIMEOUT after timeoutMs, and closes the connection', async () => {
    httpTool('hang', '/hang', { timeoutMs: 300 });
    const arrived = main.nextRequest();
    const started = Date.now();
    const events = await call('hang');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(types(events)).toEqual(['start', 'error']);
    expectToolError(events, 'HTTP_TIMEOUT');
    expect(await within((await arrived).closed, 2000)).toBe(true);
  });

  it('ends a stream that goes silent with HTTP_TIMEOUT after idleTimeoutMs, keeping the events before', async () => {
    httpTool('silent', '/two-then-wait', { idleTimeoutMs: 250 });
    const arrived = main.nextRequest();
    const events = await call('silent');
    expect(deltas(events)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(expectToolError(events, 'HTTP_TIMEOUT').details.details).toMatchObject({ phase: 'body', events: 2 });
    expect(await within((await arrived).closed, 2000)).toBe(true);
  });

  it('ends a refused connection with HTTP_CONNECT', async () => {
    registry.register(createHttpStreamingTool({
      name: 'refused',
      description: 'Nobody listens.',
      url: `http://127.0.0.1:${closedPort}/x`,
      grant: { network: 'EGRESS_RESTRICTED', egressAllow: [`127.0.0.1:${closedPort}`] },
      defaultPolicy: { network_policy: 'EGRESS_RESTRICTED' },
    }));
    const events = await call('refused');
    expect(types(events)).toEqual(['start', 'error']);
    expect(expectToolError(events, 'HTTP_CONNECT').details.details).toMatchObject({ egress: 'connection-refused', phase: 'request' });
  });

  it('ends a body past maxBodyBytes with HTTP_TOO_LARGE', async () => {
    httpTool('big', '/big', { maxBodyBytes: 300 });
    const events = await call('big');
    expectToolError(events, 'HTTP_TOO_LARGE');
    expect(deltas(events).length).toBeLessThanOrEqual(1);
  });

  it('refuses a bad spec when the tool is made (INVALID_INPUT)', () => {
    const base: HttpStreamingToolSpec = { name: 'bad', description: 'x', url: 'http://127.0.0.1:1/' };
    const bad: Array<Partial<HttpStreamingToolSpec>> = [
      { url: 'not a url' },
      { url: 'ftp://127.0.0.1/x' },
      { url: 'http://user:pass@127.0.0.1/x' },
      { method: 'TRACE' as never },
      { headers: { Host: 'elsewhere' } },
      { headers: { 'Proxy-Authorization': 'Basic eDp5' } },
      { headers: { 'x-bad': 'a\r\nInjected: 1' } },
      { headers: { 'bad name': 'x' } },
      { timeoutMs: 0 },
      { maxRedirects: -1 },
      { grant: { network: 'EGRESS_RESTRICTED', egressAllow: ['http://not-an-entry'] } },
    ];
    for (const change of bad) {
      expect(() => createHttpStreamingTool({ ...base, ...change }), JSON.stringify(change)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    }
    const tool = createHttpStreamingTool(base);
    expect(tool).toMatchObject({ executionMode: 'native', streaming: true, idempotent: false, inputSchema: { type: 'object' } });
  });
});

describe('the HTTP streaming tool: cancellation', () => {
  it('cancel after the second delta closes the connection and ends with CANCELLED, partial', async () => {
    httpTool('cancel_me', '/two-then-wait');
    const arrived = main.nextRequest();
    const stream = registry.stream('cancel_me', {});
    const events: ToolEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (deltas(events).length === 2 && event.type === 'delta') expect(stream.cancel()).toBe('CANCELLED');
    }
    expect(types(events)).toEqual(['start', 'delta', 'delta', 'error']);
    expect(terminalCount(events)).toBe(1);
    expect(deltas(events)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'CANCELLED', details: { partial: true, deltas: 2 } });
    expect(await within((await arrived).closed, 2000)).toBe(true);
  });

  it('registry.cancel while waiting for the response ends with CANCELLED, not partial, and closes the connection', async () => {
    httpTool('cancel_early', '/hang');
    const arrived = main.nextRequest();
    const pending = collect(registry.stream('cancel_early', {}, { callId: 'early-1' }));
    const request = await arrived;
    expect(registry.cancel('early-1')).toBe('CANCELLED');
    const events = await pending;
    expect(types(events)).toEqual(['start', 'error']);
    expect(terminal(events)).toMatchObject({ code: 'CANCELLED', details: { partial: false, deltas: 0 } });
    expect(await within(request.closed, 2000)).toBe(true);
  });

  it('a caller AbortSignal cancels too', async () => {
    httpTool('cancel_signal', '/hang');
    const arrived = main.nextRequest();
    const controller = new AbortController();
    const pending = call('cancel_signal', {}, { signal: controller.signal });
    const request = await arrived;
    controller.abort();
    expect(terminal(await pending)).toMatchObject({ code: 'CANCELLED' });
    expect(await within(request.closed, 2000)).toBe(true);
  });

  it('the call\'s own timeout ends it with TOOL_TIMEOUT and closes the connection', async () => {
    httpTool('wall', '/two-then-wait');
    const arrived = main.nextRequest();
    const events = await call('wall', {}, { policy: { timeout: '0.4s' } });
    expect(deltas(events)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'TOOL_TIMEOUT' });
    expect(await within((await arrived).closed, 2000)).toBe(true);
  });
});

describe('the HTTP streaming tool: network policy', () => {
  it('DENY_ALL ends with NETWORK_DENIED without any connection', async () => {
    httpTool('denied', '/json');
    const before = main.connections;
    const events = await call('denied', {}, { policy: { network_policy: 'DENY_ALL' } });
    expect(types(events)).toEqual(['start', 'error']);
    const error = terminal(events) as ErrorEvent;
    expect(error).toMatchObject({ code: 'NETWORK_DENIED', stage: 'run', details: { code: 'denied', denial: 'label' } });
    expect(error.accounting.networkDenied).toEqual([{ url: `${main.base}/json`, reason: expect.any(String) }]);
    expect(main.connections).toBe(before);
  });

  it('a tool without a grant gets the host default, DENY_ALL', async () => {
    registry.register(createHttpStreamingTool({ name: 'ungranted', description: 'x', url: `${main.base}/json` }));
    const before = main.connections;
    expect(terminal(await call('ungranted'))).toMatchObject({ code: 'NETWORK_DENIED' });
    expect(main.connections).toBe(before);
  });

  it('EGRESS_RESTRICTED refuses a port that is not allowlisted, without connecting', async () => {
    registry.register(createHttpStreamingTool({
      name: 'other_port',
      description: 'x',
      url: `${other.base}/json`,
      grant: { network: 'EGRESS_RESTRICTED', egressAllow: [`127.0.0.1:${main.port}`] },
      defaultPolicy: { network_policy: 'EGRESS_RESTRICTED' },
    }));
    const before = other.connections;
    const events = await call('other_port');
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'NETWORK_DENIED', details: { denial: 'not-allowlisted' } });
    expect(other.connections).toBe(before);
  });

  it('checks every redirect hop: a redirect to a non-allowlisted port is NETWORK_DENIED', async () => {
    httpTool('redirect_away', '/redirect-away');
    const before = other.connections;
    const events = await call('redirect_away');
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'NETWORK_DENIED' });
    expect(other.connections).toBe(before);
  });

  it('a call cannot ask for more than the grant (PERMISSION_DENIED before the tool runs)', async () => {
    httpTool('narrow', '/json');
    const events = await collect(registry.stream('narrow', {}, { policy: { network_policy: 'EGRESS_UNRESTRICTED' } }));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'error', code: 'PERMISSION_DENIED', stage: 'rejected' });
  });
});
