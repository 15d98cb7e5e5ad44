import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport, type CallToolResult, type Progress } from '@modelcontextprotocol/client';
import { defineNativeTool, type TerminalEvent, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { callWithProgress } from './fixtures/mcp/progress.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

/** The SDK v2 client, negotiating the version as the spec says (`server/discover`, then `initialize` if the server is older). */
async function modernClient(url: string, headers?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'v2-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined));
  // Every test of this file is about the 2026-07-28 leg (a 2025 fallback would pass the interop ones).
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

async function legacyClient(url: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'v1-client', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(url)));
  return client;
}

describe('one MCP endpoint serves 2026-07-28 (SDK v2) and 2025-11-25 (SDK 1.x) clients', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const finished: Array<{ tool: string; event: TerminalEvent }> = [];
  const closers: Array<() => Promise<void>> = [];
  let slowStarted: () => void = () => undefined;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.onCallFinished((tool, event) => finished.push({ tool, event }));
    registry.register(defineNativeTool({
      name: 'echo_native',
      description: 'Returns its text.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      run: (args) => ({ text: (args as { text: string }).text }),
    }));
    registry.register(defineNativeTool({
      name: 'steps',
      description: 'Reports progress and deltas.',
      inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
      streaming: true,
      run: async (args, _ctx, events) => {
        const { n } = args as { n: number };
        events.log('warn', 'steps started');
        for (let i = 1; i <= n; i += 1) {
          await sleep(5);
          events.progress((i / n) * 100, `step ${i} of ${n}`);
        }
        return { done: n };
      },
    }));
    registry.register(defineNativeTool({
      name: 'slow',
      description: 'Waits for its signal.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => {
        slowStarted();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        throw ctx.signal.reason;
      },
    }));
    if (hasCGuests) await registry.registerWasmTools(example('ctools'));
    server = await startMcpHttpServer(registry);
  });

  afterAll(async () => {
    for (const close of closers) await close();
    await server?.close();
    await registry?.close();
  });

  it('the v2 client negotiates 2026-07-28 and holds no session; the 1.x client gets a 2025 session', async () => {
    const modern = await modernClient(server.url);
    closers.push(() => modern.close());
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const legacy = await legacyClient(server.url);
    closers.push(() => legacy.close());
    expect(server.sessions).toBe(1);
    const modernTools = (await modern.listTools()).tools.map((tool) => tool.name).sort();
    const legacyTools = (await legacy.listTools()).tools.map((tool) => tool.name).sort();
    expect(modernTools).toEqual(legacyTools);
    expect(modernTools).toContain('echo_native');
    expect(server.sessions).toBe(1);
  });

  it('both call a tool through the one call path, with the same result shape', async () => {
    const modern = await modernClient(server.url);
    const legacy = await legacyClient(server.url);
    closers.push(() => modern.close(), () => legacy.close());
    const a = await modern.callTool({ name: 'echo_native', arguments: { text: 'new' } });
    const b = (await legacy.callTool({ name: 'echo_native', arguments: { text: 'old' } })) as CallToolResult;
    expect(text(a)).toContain('new');
    expect(text(b)).toContain('old');
    expect(Object.keys(a._meta ?? {})).toEqual(expect.arrayContaining(['toolhost/callId', 'toolhost/accounting']));
    expect(Object.keys(b._meta ?? {})).toEqual(expect.arrayContaining(['toolhost/callId', 'toolhost/accounting']));
    const bad = await modern.callTool({ name: 'echo_native', arguments: { text: 1 } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/^INVALID_INPUT/);
  });

  it.runIf(hasCGuests)('both call a sandboxed C tool', async () => {
    const modern = await modernClient(server.url);
    closers.push(() => modern.close());
    const result = await modern.callTool({ name: 'sha256', arguments: { text: 'abc' } });
    expect(JSON.stringify(result)).toContain('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('an unknown tool is a protocol error (-32602) with TOOL_NOT_FOUND in both versions', async () => {
    const modern = await modernClient(server.url);
    closers.push(() => modern.close());
    await expect(modern.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/TOOL_NOT_FOUND/);
  });

  it('the v2 client gets progress on its request\'s stream, the 1.x client on its session', async () => {
    const modern = await modernClient(server.url);
    closers.push(() => modern.close());
    const seen: Progress[] = [];
    const result = await modern.callTool({ name: 'steps', arguments: { n: 4 } }, { onprogress: (progress) => seen.push(progress) });
    expect(result.isError).toBeFalsy();
    expect(seen.map((p) => p.progress)).toEqual([25, 50, 75, 100]);
    expect(seen[3]?.message).toBe('step 4 of 4');
    const legacy = await legacyClient(server.url);
    closers.push(() => legacy.close());
    const old = await callWithProgress(legacy, 'steps', { n: 4 });
    expect(old.progress.map((p) => p.progress)).toEqual([25, 50, 75, 100]);
  });

  it('a v2 client that aborts its request cancels the call (CANCELLED)', async () => {
    const modern = await modernClient(server.url);
    closers.push(() => modern.close());
    const started = new Promise<void>((resolve) => (slowStarted = resolve));
    const controller = new AbortController();
    const pending = modern.callTool({ name: 'slow', arguments: {} }, { signal: controller.signal });
    await started;
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(() => finished.filter((entry) => entry.tool === 'slow').map((entry) => entry.event.type === 'error' && entry.event.code)).toContain('CANCELLED');
  });
});

describe('2026-07-28 requests pass the same authentication as 2025 ones', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'whoami',
      description: 'Reports its principal.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => ({ principal: ctx.principal ?? null }),
    }));
    server = await startMcpHttpServer(registry, { tokens: [{ principal: 'alice', token: 'alice-token-0123456789' }] });
  });

  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  it('a request without a token is refused before it reaches either SDK; with one, calls carry its principal', async () => {
    await expect(modernClient(server.url)).rejects.toThrow();
    const client = await modernClient(server.url, { Authorization: 'Bearer alice-token-0123456789' });
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.structuredContent).toEqual({ principal: 'alice' });
    await client.close();
    expect(server.sessions).toBe(0);
  });
});
