/**
 * resources/read against a guest's backtracking URI template (issue 36, M4):
 * test/fixtures/guests/c-v0.2-mcp/mcp_hostile_template.c lists
 * test://h/{a}{b}...{l}/end, twelve adjacent expressions. Matched with the MCP
 * SDK's UriTemplate (a backtracking RegExp on the main thread) a 56-character
 * URI that no component offers held `toolhost serve` for minutes; the host's
 * own matcher (host/core/uri-template-match.ts) answers not-found at once.
 * Controls: templates still match ordinary URIs (the hostile component's own,
 * and mcp_surface's test://items/{id}).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ToolRegistry } from '../host/index.js';
import { URI_TEMPLATE_LIMITS } from '../host/core/uri-template-match.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.skipIf(!hasCGuests)('resource templates a guest lists, matched without backtracking', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let client: Client;
  const limits: string[] = [];

  beforeAll(async () => {
    registry = makeRegistry();
    registry.onLimitHit((tool, limit) => limits.push(`${tool} ${limit}`));
    await registry.registerWasmTools([fixture('mcp_hostile_template'), fixture('mcp_surface')]);
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
    client = new Client({ name: 'template-stall-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('answers a 56-character URI that backtracks in the SDK with resource-not-found, in well under a second', async () => {
    const uri = `test://h/${'x'.repeat(42)},/end`;
    expect(uri).toHaveLength(56);
    await client.listResourceTemplates(); // the listings are asked (and the components compiled) once, before the clock starts
    const started = performance.now();
    await expect(client.readResource({ uri })).rejects.toMatchObject({ code: -32002, data: { details: { reason: 'unknown-resource' } } });
    await expect(client.subscribeResource({ uri })).rejects.toMatchObject({ code: -32002 });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('still matches ordinary URIs against templates, the hostile component\'s and another\'s', async () => {
    expect((await client.readResource({ uri: 'test://h/abcdefghijkl/end' })).contents).toEqual([{ uri: 'test://h/abcdefghijkl/end', mimeType: 'text/plain', text: 'hostile URI' }]);
    expect((await client.readResource({ uri: 'test://items/42' })).contents).toEqual([{ uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' }]);
    expect(await client.subscribeResource({ uri: 'test://items/7' })).toEqual({});
  });

  it('leaves out a template past the caps, as a limit hit, and refuses an over-long URI before matching', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.name)).toEqual(['backtracking', 'item']);
    expect(limits).toContain('surface:mcp_hostile_template uri_template');
    const long = `test://h/${'x'.repeat(URI_TEMPLATE_LIMITS.uriLength)}/end`;
    await expect(client.readResource({ uri: long })).rejects.toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'uri-too-long' } } });
  });
});
