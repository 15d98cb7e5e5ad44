/**
 * conformance.yaml serves guest-tools/conformance (a JS component of the 0.2.0 world mcp-provider, written
 * with the toolkit's defineMcpComponent): through the official SDK client its tools answer with MCP content
 * items, and its prompts and resources are served. (`npm run conformance` runs the official suite against it.)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHost, silentLogger, type Host } from '../host/index.js';
import { loadConfig } from '../host/config/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { createMcpServer } from '../host/servers/mcp-server.js';
import { examplesDir, root, sharedCacheDir } from './helpers.js';

const built = existsSync(join(examplesDir, 'conformance', 'conformance.wasm'));

describe.skipIf(!built)('the conformance component, as conformance.yaml serves it', () => {
  let host: Host;
  let client: Client;

  beforeAll(async () => {
    const { resolved } = await loadConfig(join(root, 'conformance.yaml'), { env: {} });
    host = await createHost({ ...resolved, sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 1 } }, { overrides: { logger: silentLogger, audit: new MemoryAuditLog() } });
    const server = createMcpServer(host.registry);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    client = new Client({ name: 'conformance-component-test', version: '1.0.0' });
    await client.connect(clientSide);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await host?.close();
  });

  it('lists the suite\'s tools, and answers with content items', async () => {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource', 'test_multiple_content_types', 'test_sampling', 'test_elicitation', 'json_schema_2020_12_tool']));
    const mixed = (await client.callTool({ name: 'test_multiple_content_types', arguments: {} })) as CallToolResult;
    expect(mixed.content.map((item) => item.type)).toEqual(['text', 'image', 'resource']);
    expect(mixed.content[2]).toEqual({ type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } });
    const failing = (await client.callTool({ name: 'test_error_handling', arguments: {} })) as CallToolResult;
    expect(failing.isError).toBe(true);
  });

  it('serves its prompts and resources', async () => {
    const prompt = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'hello', arg2: 'world' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Prompt with arguments: arg1=\'hello\', arg2=\'world\'' } }]);
    const read = await client.readResource({ uri: 'test://template/123/data' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ id: '123', templateTest: true, data: 'Data for ID: 123' });
  });
});
