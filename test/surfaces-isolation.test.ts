/**
 * One component's failing or slow listing never fails the others' prompts and
 * resources (issue 36, M10): test/fixtures/guests/c-v0.2-mcp/mcp_broken_surface.c
 * traps in list-resources and list-templates and never returns from
 * list-prompts; loaded before mcp_surface, it made resources/list, read and
 * subscribe fail for every component. Now it is left out (logged, counted,
 * backed off: not asked again on every request), and the healthy component's
 * prompts and resources list and read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.skipIf(!hasCGuests)('surfaces isolated per component', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let client: Client;
  const limits: string[] = [];
  const calls: string[] = [];

  beforeAll(async () => {
    // Two workers: the broken component's endless listing holds one until its wall budget ends it.
    registry = makeRegistry({ surfaceListingWaitMs: 1000, sandbox: { threads: 2 } });
    registry.onLimitHit((tool, limit) => limits.push(`${tool} ${limit}`));
    registry.onCallFinished((tool) => calls.push(tool));
    await registry.registerWasmTools(fixture('mcp_broken_surface'), { defaultPolicy: { budget_wall_ms: 3000 } });
    await registry.registerWasmTools(fixture('mcp_surface'));
    await registry.warm();
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
    client = new Client({ name: 'surfaces-isolation-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('lists, reads and subscribes to the healthy component\'s resources while another\'s listings trap', async () => {
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(['test://static/text', 'test://static/blob']);
    expect((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual(['test://items/{id}']);
    expect((await client.readResource({ uri: 'test://static/text' })).contents).toEqual([{ uri: 'test://static/text', mimeType: 'text/plain', text: 'static text' }]);
    expect((await client.readResource({ uri: 'test://items/42' })).contents).toEqual([{ uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' }]);
    expect(await client.subscribeResource({ uri: 'test://static/blob' })).toEqual({});
    expect(limits).toContain('surface:mcp_broken_surface surface_listing');
  });

  it('does not ask a failing component again on every request (backoff)', async () => {
    const asked = (): number => calls.filter((tool) => tool === 'surface:mcp_broken_surface').length;
    await client.listResources();
    await client.listResourceTemplates();
    const before = asked();
    await client.listResources();
    await client.listResourceTemplates();
    await client.readResource({ uri: 'test://static/blob' });
    expect(asked()).toBe(before);
  });

  it('answers prompts/list without a component whose listing never ends, within the wait', async () => {
    const started = performance.now();
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['greeting', 'picture', 'failing']);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(limits).toContain('surface:mcp_broken_surface surface_listing_wait_ms');
    expect((await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })).messages).toHaveLength(1);
  });
});
