import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, toolError, type TerminalEvent, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { callWithProgress } from './fixtures/mcp/progress.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A raw HTTP request, so tests can send any Host or Authorization header. */
function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

describe('MCP over Streamable HTTP', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let metrics: HostMetrics;
  const clients: Client[] = [];
  const finished: Array<{ tool: string; event: TerminalEvent }> = [];
  const slowStarted = deferred();
  const slowSawAbort = deferred<unknown>();

  async function connect(url = server.url, headers?: Record<string, string>): Promise<Client> {
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    registry = makeRegistry();
    registry.onCallFinished((tool, event) => finished.push({ tool, event }));
    registry.register(defineNativeTool({
      name: 'echo_native',
      description: 'Returns its text.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      idempotent: true,
      readOnly: true,
      run: (args) => ({ text: (args as { text: string }).text }),
    }));
    registry.register(defineNativeTool({
      name: 'steps',
      description: 'Reports progress, deltas and a log line, with small sleeps.',
      inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
      streaming: true,
      run: async (args, _ctx, events) => {
        const { n } = args as { n: number };
        events.log('info', 'steps started');
        for (let i = 1; i <= n; i += 1) {
          await sleep(10);
          events.progress((i / n) * 100, `step ${i} of ${n}`);
          events.delta({ step: i });
        }
        return { done: n };
      },
    }));
    registry.register(defineNativeTool({
      name: 'slow',
      description: 'Waits for its signal.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => {
        slowStarted.resolve();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        slowSawAbort.resolve(ctx.signal.reason);
        throw ctx.signal.reason;
      },
    }));
    registry.register(defineNativeTool({
      name: 'broken',
      description: 'Always fails with a code of its own.',
      inputSchema: { type: 'object' },
      run: () => {
        throw toolError('BROKEN', 'it broke', { part: 'gear' });
      },
    }));
    registry.register(defineNativeTool({
      name: 'whoami',
      description: 'Reports the call context it was given.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => ({
        conversationId: ctx.conversationId ?? null,
        sessionId: ctx.sessionId ?? null,
        agentName: ctx.agentName ?? null,
        timeoutMs: ctx.policy.timeoutMs ?? null,
      }),
    }));
    if (hasCGuests) await registry.registerWasmTools(example('ctools'));
    metrics = createMetrics(registry);
    server = await startMcpHttpServer(registry, { metrics, listChangedDebounceMs: 10 });
  });

  afterAll(async () => {
    for (const client of clients) await client.close();
    await server?.close();
    metrics?.close();
    await registry?.close();
  });

  it('serves on an ephemeral loopback port at /mcp', () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/mcp`);
    expect(server.port).toBeGreaterThan(0);
  });

  it('lists the registry\'s tools with their schemas and annotations', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['broken', 'echo_native', 'slow', 'steps', 'whoami']));
    const echo = tools.find((tool) => tool.name === 'echo_native');
    expect(echo).toMatchObject({
      description: 'Returns its text.',
      inputSchema: { type: 'object', required: ['text'] },
      outputSchema: { type: 'object', required: ['text'] },
      annotations: { readOnlyHint: true, idempotentHint: true },
    });
    if (hasCGuests) expect(names).toEqual(expect.arrayContaining(['echo', 'sha256']));
  });

  it('calls a native tool and returns its JSON as text and structuredContent', async () => {
    const client = await connect();
    await client.listTools();
    const result = (await client.callTool({ name: 'echo_native', arguments: { text: 'hi' } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ text: 'hi' });
    expect(JSON.parse(text(result))).toEqual({ text: 'hi' });
    expect(result._meta?.['toolhost/callId']).toEqual(expect.any(String));
    expect(result._meta?.['toolhost/accounting']).toMatchObject({ attempts: 1 });
  });

  it.runIf(hasCGuests)('calls a sandboxed component tool', async () => {
    const client = await connect();
    await client.listTools();
    const result = (await client.callTool({ name: 'sha256', arguments: { text: 'abc' } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
  });

  it('sends progress and deltas as progress notifications before the result', async () => {
    const client = await connect();
    const { result, progress } = await callWithProgress(client, 'steps', { n: 3 });
    expect(result.structuredContent).toEqual({ done: 3 });
    const messages = progress.map((entry) => entry.message);
    expect(messages).toEqual(['step 1 of 3', '{"step":1}', 'step 2 of 3', '{"step":2}', 'step 3 of 3', '{"step":3}']);
    // The total is 100, or the progress itself past it (a delta after 100% reads 100.001 of 100.001): never more than its total.
    expect(progress.every((entry) => entry.total === Math.max(100, entry.progress) && entry.progress <= entry.total && !entry.afterResult)).toBe(true);
    expect(progress.map((entry) => Math.round(entry.progress))).toEqual([33, 33, 67, 67, 100, 100]);
    // Deltas are marked, so a client can tell them from progress messages.
    expect(progress.map((entry) => entry._meta?.['toolhost/delta'] === true)).toEqual([false, true, false, true, false, true]);
  });

  it('sends a tool\'s log events as notifications/message', async () => {
    const client = await connect();
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      logs.push(notification.params);
    });
    await client.callTool({ name: 'steps', arguments: { n: 1 } });
    expect(logs).toContainEqual({ level: 'info', logger: 'steps', data: expect.objectContaining({ message: 'steps started', source: 'native' }) });
  });

  it('cancels the call when the client aborts its request: the tool sees its signal, the call ends CANCELLED', async () => {
    const client = await connect();
    const controller = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: controller.signal });
    await slowStarted.promise;
    controller.abort(new Error('the agent changed its mind'));
    await expect(pending).rejects.toThrow();
    await expect(slowSawAbort.promise).resolves.toMatchObject({ code: 'CANCELLED' });
    await expect.poll(() => finished.find((entry) => entry.tool === 'slow')?.event).toMatchObject({ type: 'error', code: 'CANCELLED', stage: 'run' });
    expect(registry.inFlight).toBe(0);
  });

  it('returns a failing tool\'s error as an isError result with its code', async () => {
    const client = await connect();
    const result = (await client.callTool({ name: 'broken', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('TOOL_ERROR: it broke');
    expect(result.structuredContent).toEqual({ error: { code: 'TOOL_ERROR', message: 'it broke', details: { code: 'BROKEN', details: { part: 'gear' } } } });
  });

  it('answers an unknown tool with JSON-RPC -32602 (TOOL_NOT_FOUND in data), and invalid input as an isError result', async () => {
    const client = await connect();
    await client.listTools();
    const missing = await client.callTool({ name: 'no_such_tool', arguments: {} }).then(() => undefined, (error: unknown) => error);
    expect(missing).toMatchObject({ code: -32602, data: { code: 'TOOL_NOT_FOUND', details: { name: 'no_such_tool' } } });
    expect((missing as Error).message).toMatch(/TOOL_NOT_FOUND: no tool named "no_such_tool"/);

    // echo_native has an output schema: the error is in the text and _meta, not in structuredContent.
    const invalid = (await client.callTool({ name: 'echo_native', arguments: { text: 42 } })) as CallToolResult;
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^INVALID_INPUT: invalid input for "echo_native": args\/text must be string/);
    expect(invalid.structuredContent).toBeUndefined();
    expect(invalid._meta?.['toolhost/error']).toMatchObject({ code: 'INVALID_INPUT', details: { errors: [expect.objectContaining({ path: '/text' })] } });
  });

  it('maps _meta ids and policy into the call; a policy wider than the grant is refused', async () => {
    const client = await connect();
    const transport = client.transport as StreamableHTTPClientTransport;
    const ok = (await client.callTool({
      name: 'whoami',
      arguments: {},
      _meta: { 'toolhost/conversationId': 'conv-1', 'toolhost/agentName': 'planner', 'toolhost/policy': { timeout: '5s' } },
    })) as CallToolResult;
    expect(ok.structuredContent).toEqual({ conversationId: 'conv-1', sessionId: transport.sessionId, agentName: 'planner', timeoutMs: 5000 });

    const wider = (await client.callTool({ name: 'whoami', arguments: {}, _meta: { 'toolhost/policy': { network_policy: 'EGRESS_UNRESTRICTED' } } })) as CallToolResult;
    expect(wider.isError).toBe(true);
    expect(text(wider)).toMatch(/^PERMISSION_DENIED: /);

    const bad = (await client.callTool({ name: 'whoami', arguments: {}, _meta: { 'toolhost/conversationId': 7 } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/^INVALID_INPUT: _meta\["toolhost\/conversationId"\]/);
  });

  it('sends tools/list_changed when a tool is registered at runtime', async () => {
    const client = await connect();
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes += 1;
    });
    // The notification goes on the session's GET stream, which the client opens after initializing; retry until it is up.
    for (let attempt = 0; attempt < 20 && changes === 0; attempt += 1) {
      registry.register(defineNativeTool({ name: `late_${attempt}`, description: 'Registered later.', inputSchema: { type: 'object' }, run: () => 'late' }));
      await expect.poll(() => changes, { timeout: 500 }).toBeGreaterThan(0).catch(() => undefined);
    }
    expect(changes).toBeGreaterThan(0);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('late_0');
  });

  it('refuses a request whose Host header is not allowed (403)', async () => {
    const refused = await raw(server.url, { method: 'POST', headers: { ...MCP_HEADERS, Host: 'evil.example' }, body: INIT });
    expect(refused.status).toBe(403);
    const health = await raw(`http://127.0.0.1:${server.port}/healthz`, { headers: { Host: `evil.example:${server.port}` } });
    expect(health.status).toBe(403);
    const allowed = await raw(`http://127.0.0.1:${server.port}/healthz`, { headers: { Host: `localhost:${server.port}` } });
    expect(allowed.status).toBe(200);
  });

  it('answers 400 without a session and 404 for an unknown session', async () => {
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await raw(server.url, { method: 'POST', headers: MCP_HEADERS, body: list })).status).toBe(400);
    expect((await raw(server.url, { method: 'POST', headers: { ...MCP_HEADERS, 'Mcp-Session-Id': 'nope' }, body: list })).status).toBe(404);
    expect((await raw(server.url, { method: 'POST', headers: MCP_HEADERS, body: '{not json' })).status).toBe(400);
  });

  it('serves /healthz with the tool count and calls in flight', async () => {
    const health = await raw(`http://127.0.0.1:${server.port}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', tools: registry.names().length, inFlight: 0 });
  });

  it('serves /metrics from the metrics source', async () => {
    const response = await raw(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toMatch(/toolhost_calls_total\{tool="echo_native",outcome="ok",stage="run"\} \d+/);
  });

  it('ends its sessions when a client closes, and answers 404 for unknown paths', async () => {
    const client = await connect();
    const before = server.sessions;
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    await client.close();
    await expect.poll(() => server.sessions).toBe(before - 1);
    expect((await raw(`http://127.0.0.1:${server.port}/nothing`)).status).toBe(404);
  });
});

describe('stopping the MCP HTTP server gracefully', () => {
  it('lets calls in flight finish within drainMs, refusing new calls and sessions meanwhile', async () => {
    const registry = makeRegistry();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    registry.register(defineNativeTool({
      name: 'finish_later',
      description: 'Finishes when the test lets it.',
      inputSchema: { type: 'object' },
      run: async () => {
        started();
        await gate;
        return { finished: true };
      },
    }));
    const server = await startMcpHttpServer(registry);
    const first = new Client({ name: 'first', version: '1.0.0' });
    const second = new Client({ name: 'second', version: '1.0.0' });
    try {
      await first.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      await second.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      const pending = first.callTool({ name: 'finish_later', arguments: {} });
      await running;
      const closing = server.close({ drainMs: 10_000 });
      // While draining: a new call is refused as OVERLOADED, and so is a new session.
      const refused = (await second.callTool({ name: 'finish_later', arguments: {} })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/^OVERLOADED: /);
      expect((await raw(server.url, { method: 'POST', headers: MCP_HEADERS, body: INIT })).status).toBe(503);
      release();
      expect(((await pending) as CallToolResult).structuredContent).toEqual({ finished: true });
      await closing;
      expect(server.sessions).toBe(0);
    } finally {
      release();
      await first.close();
      await second.close();
      await server.close();
      await registry.close();
    }
  });
});

describe('MCP over Streamable HTTP with a bearer token', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object' }, run: () => ({ pong: true }) }));
    server = await startMcpHttpServer(registry, { bearerToken: 's3cret-token', metrics: { contentType: 'text/plain', metrics: async () => 'x 1\n' } });
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  it('answers 401 without the token, or with a wrong one', async () => {
    const none = await raw(server.url, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    const wrong = await raw(server.url, { method: 'POST', headers: { ...MCP_HEADERS, Authorization: 'Bearer s3cret-tokeN' }, body: INIT });
    expect(wrong.status).toBe(401);
    expect((await raw(`http://127.0.0.1:${server.port}/metrics`)).status).toBe(401);
    // Health probes need no token.
    expect((await raw(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
  });

  it('serves a client that sends the token', async () => {
    const client = new Client({ name: 'authed', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: 'Bearer s3cret-token' } } }));
    try {
      const result = (await client.callTool({ name: 'ping', arguments: {} })) as CallToolResult;
      expect(result.structuredContent).toEqual({ pong: true });
      const metrics = await raw(`http://127.0.0.1:${server.port}/metrics`, { headers: { Authorization: 'bearer s3cret-token' } });
      expect(metrics).toMatchObject({ status: 200, body: 'x 1\n' });
    } finally {
      await client.close();
    }
  });

  it('closes with sessions open, cancelling their calls', async () => {
    const started = deferred();
    const aborted = deferred();
    registry.register(defineNativeTool({
      name: 'hang',
      description: 'Waits for its signal.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => {
        started.resolve();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted.resolve();
        return null;
      },
    }));
    const client = new Client({ name: 'closing', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: 'Bearer s3cret-token' } } }));
    client.onerror = () => undefined;
    const pending = client.callTool({ name: 'hang', arguments: {} }).catch((error: unknown) => error);
    await started.promise;
    await server.close();
    await aborted.promise;
    expect(server.sessions).toBe(0);
    await client.close();
    await pending;
  });
});
