/**
 * The two protocol eras offer the same things: an SDK v2 client pinned to
 * 2026-07-28 gets a component's prompts, resources, templates, completion,
 * logging and list changes over Streamable HTTP and over stdio, as an SDK 1.x
 * client on 2025-11-25 does (issue 38: 2026-07-28 answered -32601, and stdio
 * spoke only 2025-11-25). Component: test/fixtures/guests/c-v0.2-mcp/mcp_surface.c.
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { serveMcpStdio, type McpStdioServer } from '../host/servers/mcp-stdio.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const wasm = fixture('mcp_surface');

function pinned(): Client {
  return new Client({ name: 'v2-pinned', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
}

/** A client transport over the other ends of serveMcpStdio's stdin and stdout. */
class StreamPairTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  readonly #buffer = new ReadBuffer();
  constructor(private readonly input: Readable, private readonly output: Writable) {}
  async start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message; message = this.#buffer.readMessage()) this.onmessage?.(message as Parameters<NonNullable<Transport['onmessage']>>[0]);
    });
  }
  async send(message: unknown): Promise<void> {
    this.output.write(serializeMessage(message as JSONRPCMessage));
  }
  async close(): Promise<void> {
    this.output.end();
    this.onclose?.();
  }
}

/** The checks both transports must pass, for a connected pinned client. */
async function surfacesOf(client: Client): Promise<void> {
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  expect(client.getServerCapabilities()).toMatchObject({ prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {}, logging: {} });
  expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['greeting', 'picture', 'failing']);
  expect(await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })).toMatchObject({ description: 'A greeting', messages: [{ role: 'user', content: { type: 'text', text: 'Hello, Ada!' } }] });
  expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(['test://static/text', 'test://static/blob']);
  expect((await client.listResourceTemplates()).resourceTemplates).toEqual([{ uriTemplate: 'test://items/{id}', name: 'item', title: 'An item', mimeType: 'text/plain' }]);
  expect((await client.readResource({ uri: 'test://items/42' })).contents).toEqual([{ uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' }]);
  expect((await client.readResource({ uri: 'test://static/blob' })).contents).toEqual([{ uri: 'test://static/blob', mimeType: 'application/octet-stream', blob: 'AQID' }]);
  expect((await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'A' } })).completion).toMatchObject({ values: ['Ada', 'Alan'] });
  expect((await client.complete({ ref: { type: 'ref/resource', uri: 'test://items/{id}' }, argument: { name: 'id', value: '1' } })).completion).toMatchObject({ values: ['1', '10'] });
  // Errors keep toolhost's code in data (resource not found is -32602 on this revision).
  await expect(client.getPrompt({ name: 'greeting' })).rejects.toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'missing-argument' } } });
  await expect(client.readResource({ uri: 'test://elsewhere' })).rejects.toMatchObject({ code: -32602, data: { details: { reason: 'unknown-resource' } } });
}

/** A listen stream hears prompt and resource list changes and the update of a URI it named (only that one), when the component is loaded again. */
async function listensTo(client: Client, registry: ToolRegistry): Promise<void> {
  const heard: string[] = [];
  client.setNotificationHandler('notifications/prompts/list_changed', () => { heard.push('prompts'); });
  client.setNotificationHandler('notifications/resources/list_changed', () => { heard.push('resources'); });
  client.setNotificationHandler('notifications/resources/updated', (notification) => { heard.push(`updated ${notification.params.uri}`); });
  const subscription = await client.listen({ promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['test://static/text'] });
  expect(subscription.honoredFilter).toMatchObject({ promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['test://static/text'] });
  registry.unloadComponent('mcp_surface');
  await registry.registerWasmTools(wasm);
  await expect.poll(() => [...new Set(heard)].sort(), { timeout: 5000 }).toEqual(['prompts', 'resources', 'updated test://static/text']);
  await subscription.close();
}

describe.skipIf(!hasCGuests)('an SDK v2 client pinned to 2026-07-28 gets what a 2025 client gets', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const logs: unknown[] = [];

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(wasm);
    registry.register(defineNativeTool({
      name: 'chatty',
      description: 'Logs a line.',
      inputSchema: { type: 'object' },
      run: (_args, _ctx, events) => {
        events.log('warn', 'chatty says hello');
        return { ok: true };
      },
    }));
    server = await startMcpHttpServer(registry);
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  it('over Streamable HTTP: prompts, resources, templates, reads, completion and their errors', async () => {
    const client = pinned();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      await surfacesOf(client);
      // Control: the 2025 client on the same endpoint sees the same prompts.
      const legacy = new LegacyClient({ name: 'v1', version: '1.0.0' });
      const { StreamableHTTPClientTransport: LegacyTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      await legacy.connect(new LegacyTransport(new URL(server.url)));
      expect((await legacy.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['greeting', 'picture', 'failing']);
      await legacy.close();
    } finally {
      await client.close();
    }
  });

  it('over Streamable HTTP: a tool\'s log line reaches the client, and a listen stream hears list changes and resource updates', async () => {
    const client = pinned();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      client.setNotificationHandler('notifications/message', (notification) => { logs.push(notification.params.data); });
      // On 2026-07-28 the level travels with each request (io.modelcontextprotocol/logLevel), not logging/setLevel.
      expect((await client.callTool({ name: 'chatty', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'info' } })).isError).toBeFalsy();
      expect(logs).toEqual([expect.objectContaining({ message: 'chatty says hello' })]);
      await listensTo(client, registry);
    } finally {
      await client.close();
    }
  });

  it('over stdio: the connection negotiates 2026-07-28 and gets the same, list changes included', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served: McpStdioServer = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false });
    const client = pinned();
    await client.connect(new StreamPairTransport(stdout, stdin) as unknown as Transport);
    try {
      expect(served.era).toBe('modern');
      await surfacesOf(client);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('chatty');
      await listensTo(client, registry);
    } finally {
      await client.close();
      await served.close();
    }
  });

  it('control, over stdio: a 2025 client still gets a 2025-11-25 session with prompts', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false });
    const client = new LegacyClient({ name: 'v1', version: '1.0.0' });
    await client.connect(new StreamPairTransport(stdout, stdin) as never);
    try {
      expect(client.getServerVersion()?.name).toBe('toolhost');
      expect(served.era).toBe('legacy');
      expect(served.server).toBeDefined();
      expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['greeting', 'picture', 'failing']);
    } finally {
      await client.close();
      await served.close();
    }
  });
});
