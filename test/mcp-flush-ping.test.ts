/**
 * The ping sent after a call's last progress notification (so an SDK 1.x
 * client reads its progress before the response, typescript-sdk #2580) must
 * not cost a client that does not answer pings a wait on every call (issue 38:
 * up to 1 s per call): once one such ping timed out, the session is not pinged
 * again. Control: a client that answers is pinged after every call.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { serveMcpStdio } from '../host/servers/mcp-stdio.js';
import { makeRegistry } from './helpers.js';
import { StreamPairTransport } from './mcp-stdio-pair.js';

describe('the flush ping after a call\'s progress', () => {
  let registry: ToolRegistry;
  beforeAll(() => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'tick',
      description: 'One progress event.',
      inputSchema: { type: 'object' },
      run: (_args, _ctx, events) => {
        events.progress(100, 'done');
        return { ok: true };
      },
    }));
  });
  afterAll(async () => {
    await registry?.close();
  });

  it('a client that lets a ping time out is not pinged again in its session', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false, progressFlushMs: 300 });
    const wire = new StreamPairTransport(stdout, stdin);
    const pings: unknown[] = [];
    const answers = new Map<unknown, (message: JSONRPCMessage) => void>();
    wire.onmessage = (message) => {
      const { id, method } = message as { id?: unknown; method?: string };
      if (method === 'ping') pings.push(id); // never answered
      else if (id !== undefined && method === undefined) answers.get(id)?.(message);
    };
    await wire.start();
    const request = (id: number, method: string, params: Record<string, unknown>): Promise<JSONRPCMessage> => new Promise((resolve) => {
      answers.set(id, resolve);
      void wire.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    });
    await request(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mute', version: '1' } });
    await wire.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
    for (let id = 2; id <= 4; id += 1) {
      const answer = await request(id, 'tools/call', { name: 'tick', arguments: {}, _meta: { progressToken: `t${id}` } });
      expect(answer).toMatchObject({ result: { structuredContent: { ok: true } } });
    }
    // Old code: one ping (and one wait) per call.
    expect(pings).toHaveLength(1);
    await served.close();
  });

  it('control: a client that answers pings is pinged after each call with progress', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false, progressFlushMs: 5000 });
    const client = new Client({ name: 'answers', version: '1' });
    let pings = 0;
    const transport = new StreamPairTransport(stdout, stdin);
    await client.connect(transport);
    const handler = transport.onmessage!;
    transport.onmessage = (message) => {
      if ((message as { method?: string }).method === 'ping') pings += 1;
      handler(message);
    };
    for (let i = 0; i < 3; i += 1) await client.callTool({ name: 'tick', arguments: {} }, undefined, { onprogress: () => undefined });
    expect(pings).toBe(3);
    await client.close();
    await served.close();
  });
});
