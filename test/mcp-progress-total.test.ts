/**
 * A progress notification never passes its total (issue 38: a delta after 100%
 * read 100.001 of 100), on both protocol eras: the total is 100, or the
 * progress itself once it passed 100. Values still strictly increase.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { Client, StreamableHTTPClientTransport, type Progress } from '@modelcontextprotocol/client';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { serveMcpStdio } from '../host/servers/mcp-stdio.js';
import { makeRegistry } from './helpers.js';
import { StreamPairTransport } from './mcp-stdio-pair.js';

describe('progress and its total', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'finish_then_delta',
      description: 'Reports 50%, 100%, then two deltas.',
      inputSchema: { type: 'object' },
      streaming: true,
      run: async (_args, _ctx, events) => {
        events.progress(50, 'half');
        events.progress(100, 'all');
        events.delta({ late: 1 });
        events.delta({ late: 2 });
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { ok: true };
      },
    }));
    server = await startMcpHttpServer(registry);
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  const check = (seen: Array<{ progress: number; total?: number }>): void => {
    expect(seen.map((entry) => entry.progress)).toEqual([50, 100, 100.001, 100.002]);
    for (const entry of seen) expect(entry.progress).toBeLessThanOrEqual(entry.total ?? Infinity);
    expect(seen[1]?.total).toBe(100);
  };

  it('on 2025-11-25 (SDK 1.x over stdio)', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false });
    const client = new LegacyClient({ name: 'v1', version: '1' });
    await client.connect(new StreamPairTransport(stdout, stdin));
    const seen: Array<{ progress: number; total?: number }> = [];
    await client.callTool({ name: 'finish_then_delta', arguments: {} }, undefined, { onprogress: (progress) => { seen.push(progress); } });
    check(seen);
    await client.close();
    await served.close();
  });

  it('on 2026-07-28 (SDK v2 over HTTP)', async () => {
    const client = new Client({ name: 'v2', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const seen: Progress[] = [];
    await client.callTool({ name: 'finish_then_delta', arguments: {} }, { onprogress: (progress) => { seen.push(progress); } });
    check(seen);
    await client.close();
  });
});
