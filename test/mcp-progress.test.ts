/**
 * The official SDK client's `callTool(..., { onprogress })` sees every progress
 * notification of a fast tool, over stdio and over Streamable HTTP; progress
 * values strictly increase (a delta never repeats the previous value).
 *
 * The 1.x client retires a request's progress handler when its response
 * arrives but dispatches notifications a microtask later: a notification read
 * in the same chunk as the response is dropped. The server pings the client
 * after the last progress notification and answers only once the pong is
 * back, so the response always arrives in a later read.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry, root } from './helpers.js';

const N = 3;
const ROUNDS = 10;

async function burst(client: Client): Promise<{ result: CallToolResult; progress: Progress[] }> {
  const progress: Progress[] = [];
  const result = (await client.callTool({ name: 'burst', arguments: { n: N } }, undefined, { onprogress: (entry) => progress.push(entry) })) as CallToolResult;
  return { result, progress };
}

function expectEveryNotification(progress: Progress[]): void {
  // N progress events and N deltas.
  expect(progress).toHaveLength(2 * N);
  const values = progress.map((entry) => entry.progress);
  for (let i = 1; i < values.length; i += 1) expect(values[i]!).toBeGreaterThan(values[i - 1]!);
  expect(progress.filter((entry) => entry.message?.startsWith('burst ')).map((entry) => entry.message)).toEqual(['burst 1', 'burst 2', 'burst 3']);
}

describe('progress reaches the official SDK client', () => {
  it('over stdio, for every call of a fast tool', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [join(root, 'test', 'fixtures', 'mcp', 'toolhost-stdio.mjs')], cwd: root, stderr: 'pipe' });
    const client = new Client({ name: 'progress-stdio', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (let round = 0; round < ROUNDS; round += 1) {
        const { result, progress } = await burst(client);
        expect(result.structuredContent).toEqual({ burst: N });
        expectEveryNotification(progress);
      }
    } finally {
      await client.close();
    }
  });

  describe('over Streamable HTTP', () => {
    let registry: ToolRegistry;
    let server: McpHttpServer;

    beforeAll(async () => {
      registry = makeRegistry();
      registry.register(defineNativeTool({
        name: 'burst',
        description: 'Reports n progress events and n deltas at once, then returns.',
        inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
        run: (args, _ctx, events) => {
          const { n } = args as { n: number };
          for (let i = 1; i <= n; i += 1) {
            events.progress((i / n) * 100, `burst ${i}`);
            events.delta({ burst: i });
          }
          return { burst: n };
        },
      }));
      server = await startMcpHttpServer(registry);
    });
    afterAll(async () => {
      await server?.close();
      await registry?.close();
    });

    it('for every call of a fast tool', async () => {
      const client = new Client({ name: 'progress-http', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      try {
        for (let round = 0; round < ROUNDS; round += 1) {
          const { result, progress } = await burst(client);
          expect(result.structuredContent).toEqual({ burst: N });
          expectEveryNotification(progress);
        }
      } finally {
        await client.close();
      }
    });
  });
});
