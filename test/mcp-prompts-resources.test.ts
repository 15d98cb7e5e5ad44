/**
 * Prompts and resources from a component (test/fixtures/guests/c-v0.2-mcp/mcp_surface.c,
 * the 0.2.0 world's optional exports) through the official SDK client over
 * Streamable HTTP: prompts/list and get (text, image and embedded resource
 * messages), resources/list, templates, read (text, bytes, by template),
 * completion/complete for a prompt argument and a template variable, the
 * errors, list_changed when a component loads or unloads, the surface_items
 * limit, and each operation as a call of the call path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const wasm = fixture('mcp_surface');

describe.skipIf(!hasCGuests)('prompts and resources from a component, over MCP', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let client: Client;
  const finished: string[] = [];
  const limits: Array<{ tool: string; limit: string }> = [];

  beforeAll(async () => {
    registry = makeRegistry();
    registry.onCallFinished((tool) => finished.push(tool));
    registry.onLimitHit((tool, limit) => limits.push({ tool, limit }));
    await registry.registerWasmTools(wasm);
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
    client = new Client({ name: 'surfaces-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('declares the prompts, resources and completions capabilities', () => {
    expect(client.getServerCapabilities()).toMatchObject({ prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {} });
  });

  it('lists the component\'s prompts with their arguments, and not its surface as a tool', async () => {
    const { prompts } = await client.listPrompts();
    expect(prompts).toEqual([
      { name: 'greeting', title: 'Greeting', description: 'Greets someone by name.', arguments: [{ name: 'name', description: 'Who to greet', required: true }] },
      { name: 'picture', description: 'A picture and a document.', arguments: [] },
      { name: 'failing', arguments: [] },
    ]);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['surface_echo']);
  });

  it('gets a prompt with its arguments: text, image and embedded resource messages', async () => {
    expect(await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })).toEqual({ description: 'A greeting', messages: [{ role: 'user', content: { type: 'text', text: 'Hello, Ada!' } }] });
    const picture = await client.getPrompt({ name: 'picture' });
    expect(picture.messages).toEqual([
      { role: 'user', content: { type: 'image', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64'), mimeType: 'image/png' } },
      { role: 'assistant', content: { type: 'resource', resource: { uri: 'test://static/text', mimeType: 'text/plain', text: 'static text' } } },
    ]);
    expect(finished).toContain('surface:mcp_surface');
  });

  it('answers an unknown prompt or a missing argument with Invalid params, and a guest\'s error with Internal error and its code', async () => {
    await expect(client.getPrompt({ name: 'nope' })).rejects.toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT' } });
    await expect(client.getPrompt({ name: 'greeting' })).rejects.toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'missing-argument' } } });
    const failing = await client.getPrompt({ name: 'failing' }).catch((error: unknown) => error);
    expect(failing).toBeInstanceOf(McpError);
    expect(failing).toMatchObject({ code: -32603, data: { code: 'TOOL_ERROR', details: { code: 'BROKEN_PROMPT' } } });
  });

  it('lists resources and templates, and reads text, bytes and a templated URI', async () => {
    expect((await client.listResources()).resources).toEqual([
      { uri: 'test://static/text', name: 'static-text', title: 'Static text', description: 'A text resource.', mimeType: 'text/plain' },
      { uri: 'test://static/blob', name: 'static-blob', mimeType: 'application/octet-stream' },
    ]);
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([{ uriTemplate: 'test://items/{id}', name: 'item', title: 'An item', mimeType: 'text/plain' }]);
    expect((await client.readResource({ uri: 'test://static/text' })).contents).toEqual([{ uri: 'test://static/text', mimeType: 'text/plain', text: 'static text' }]);
    expect((await client.readResource({ uri: 'test://static/blob' })).contents).toEqual([{ uri: 'test://static/blob', mimeType: 'application/octet-stream', blob: 'AQID' }]);
    expect((await client.readResource({ uri: 'test://items/42' })).contents).toEqual([{ uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' }]);
    await expect(client.readResource({ uri: 'test://elsewhere' })).rejects.toMatchObject({ code: -32002, data: { code: 'INVALID_INPUT', details: { reason: 'unknown-resource' } } });
  });

  it('completes a prompt\'s argument and a template\'s variable', async () => {
    expect((await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'A' } })).completion).toEqual({ values: ['Ada', 'Alan'], total: 2, hasMore: false });
    expect((await client.complete({ ref: { type: 'ref/resource', uri: 'test://items/{id}' }, argument: { name: 'id', value: '1' } })).completion).toEqual({ values: ['1', '10'], total: 2, hasMore: false });
    await expect(client.complete({ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'x', value: '' } })).rejects.toMatchObject({ code: -32602 });
  });

  it('takes subscriptions to URIs a component offers, and tells a subscriber when the component is loaded again', async () => {
    expect(await client.subscribeResource({ uri: 'test://static/text' })).toEqual({});
    expect(await client.subscribeResource({ uri: 'test://items/7' })).toEqual({});
    await expect(client.subscribeResource({ uri: 'test://nowhere' })).rejects.toMatchObject({ code: -32002 });
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => { updated.push(notification.params.uri); });
    expect(await client.unsubscribeResource({ uri: 'test://items/7' })).toEqual({});
    await registry.registerWasmTools(wasm);
    await expect.poll(() => updated, { timeout: 3000 }).toEqual(['test://static/text']);
    await client.unsubscribeResource({ uri: 'test://static/text' });
  });

  it('sends prompts and resources list_changed when a component with them unloads and loads', async () => {
    const heard: string[] = [];
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => { heard.push('prompts'); });
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { heard.push('resources'); });
    registry.unloadComponent('mcp_surface');
    await expect.poll(() => heard.slice().sort(), { timeout: 3000 }).toEqual(['prompts', 'resources']);
    expect((await client.listPrompts()).prompts).toEqual([]);
    heard.length = 0;
    await registry.registerWasmTools(wasm);
    await expect.poll(() => heard.slice().sort(), { timeout: 3000 }).toEqual(['prompts', 'resources']);
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['greeting', 'picture', 'failing']);
  });

  it('drops a component\'s prompts and resources with a direct retain() that drops the component, not with one that keeps it', async () => {
    const heard: string[] = [];
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => { heard.push('prompts'); });
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { heard.push('resources'); });
    // Dropping a tool by name keeps the component's surface (its surface tool is `surface:mcp_surface`).
    expect(registry.retain((tool) => tool.name !== 'no_such_tool')).toEqual([]);
    expect((await client.listPrompts()).prompts).toHaveLength(3);
    expect(heard).toEqual([]);
    // Dropping every tool of the component drops its prompts and resources, and says so.
    expect(registry.retain((tool) => tool.source !== 'mcp_surface')).toEqual(['surface_echo']);
    await expect.poll(() => heard.slice().sort(), { timeout: 3000 }).toEqual(['prompts', 'resources']);
    expect(registry.surfaces.offers).toEqual({ prompts: false, resources: false });
    expect((await client.listPrompts()).prompts).toEqual([]);
    expect((await client.listResources()).resources).toEqual([]);
    await registry.registerWasmTools(wasm);
    expect((await client.listPrompts()).prompts).toHaveLength(3);
  });

  it('leaves a listing past surface_items out, as a limit hit', async () => {
    const small = makeRegistry({ surfaceItems: 1 });
    try {
      await small.registerWasmTools(wasm);
      expect(limits).toEqual([]);
      const hits: string[] = [];
      small.onLimitHit((_tool, limit) => hits.push(limit));
      expect(await small.surfaces.listResources()).toEqual([]);
      expect(await small.surfaces.listPrompts()).toEqual([]);
      expect(hits).toEqual(['surface_items', 'surface_items']);
    } finally {
      await small.close();
    }
  });
});
