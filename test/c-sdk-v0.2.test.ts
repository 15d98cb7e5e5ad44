/**
 * The C SDK's 0.2.0 world (guest-tools/c/sdk with TOOLHOST_WORLD_0_2), seen by
 * the official SDK client over Streamable HTTP: test/fixtures/guests/c-v0.2-sdk/sdk_rich.c
 * declares title, annotations and icons, returns content items, and calls
 * th_sample and th_elicit; its results must match those of the hand-written
 * ABI of test/fixtures/guests/c-v0.2/mcp_rich.c. The example `ctools` (built
 * with the SDK for 0.2.0) keeps its 0.1.0 results and gains its metadata.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult, type CreateMessageRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { example, fixture, hasCGuests, makeRegistry } from './helpers.js';
import { RICH_CONTENT } from './rich-content.js';

type Structured = { replies?: unknown[]; model?: string; stop_reason?: string | null; error?: { code: string; message: string }; action?: string; content?: unknown };
const structured = (result: CallToolResult): Structured => result.structuredContent as Structured;

describe.skipIf(!hasCGuests)('a 0.2.0 tool written with the C SDK', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const clients: Client[] = [];

  async function connect(handlers: { sample?: (request: CreateMessageRequest) => Promise<unknown>; elicit?: () => Promise<unknown> } = {}): Promise<Client> {
    const capabilities: Record<string, unknown> = {};
    if (handlers.sample) capabilities.sampling = {};
    if (handlers.elicit) capabilities.elicitation = { form: {} };
    const client = new Client({ name: 'c-sdk-test', version: '1.0.0' }, { capabilities });
    if (handlers.sample) client.setRequestHandler(CreateMessageRequestSchema, handlers.sample as never);
    if (handlers.elicit) client.setRequestHandler(ElicitRequestSchema, handlers.elicit as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 10_000 } });
    await registry.registerWasmTools(fixture('sdk_rich'), { grant: { sampling: { maxRequests: 2, maxTokens: 1000 }, elicitation: { maxRequests: 1 }, state: { access: 'read' } } });
    await registry.registerWasmTools(example('ctools'));
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('lists the title, annotations and icons the th_tool table declares', async () => {
    const { tools } = await (await connect()).listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('rich')).toMatchObject({
      title: 'Rich content',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      icons: [{ src: 'data:image/png;base64,iVBORw0KGgo=', mimeType: 'image/png', sizes: ['48x48'] }],
      outputSchema: { required: ['ok'] },
    });
    expect(byName.get('ask_model')?.title).toBe('Ask the model');
    expect(byName.get('content_only')?.title).toBeUndefined();
    expect(byName.get('content_only')?.icons ?? []).toEqual([]);
    // ctools: the SDK's 0.2.0 build of an example tool.
    expect(byName.get('sha256')).toMatchObject({ title: 'SHA-256', icons: [{ mimeType: 'image/svg+xml', sizes: ['any'] }] });
    expect(byName.get('echo')?.title).toBe('Echo');
  });

  it('returns content items of every kind beside the value; content alone has no structured content', async () => {
    const client = await connect();
    const result = (await client.callTool({ name: 'rich', arguments: {} })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ ok: true });
    expect(result.content).toEqual(RICH_CONTENT);
    const only = (await client.callTool({ name: 'content_only', arguments: {} })) as CallToolResult;
    expect(only.content).toEqual([{ type: 'text', text: 'only content' }]);
    expect(only.structuredContent).toBeUndefined();
    const value = (await client.callTool({ name: 'value_only', arguments: {} })) as CallToolResult;
    expect(value.content).toEqual([{ type: 'text', text: '{"n":1}' }]);
    expect(value.structuredContent).toEqual({ n: 1 });
    // A failure drops the items added before it; the next call starts with none.
    const failed = (await client.callTool({ name: 'fails', arguments: {} })) as CallToolResult;
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([{ type: 'text', text: 'TOOL_ERROR: it broke' }]);
    expect((await registry.execute('fails', {})).error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'BROKEN', details: { why: 'test' } } });
    expect(((await client.callTool({ name: 'value_only', arguments: {} })) as CallToolResult).content).toHaveLength(1);
    // ctools' results are those of 0.1.0.
    const digest = (await client.callTool({ name: 'sha256', arguments: { text: 'abc' } })) as CallToolResult;
    expect(digest.structuredContent).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
    expect(((await client.callTool({ name: 'echo', arguments: { a: [1, 'x'] } })) as CallToolResult).structuredContent).toEqual({ a: [1, 'x'] });
  });

  it('th_sample reaches the client\'s sampling handler with every field, and returns its text or image answer', async () => {
    const seen: CreateMessageRequest[] = [];
    let image = false;
    const client = await connect({
      sample: async (request) => {
        seen.push(request);
        return image
          ? { role: 'assistant', content: { type: 'image', data: Buffer.from([1, 2, 3, 4]).toString('base64'), mimeType: 'image/png' }, model: 'pic-model' }
          : { role: 'assistant', content: { type: 'text', text: `four, in ${request.params.maxTokens} tokens` }, model: 'test-model', stopReason: 'endTurn' };
      },
    });
    expect(structured((await client.callTool({ name: 'ask_model', arguments: { max_tokens: 64 } })) as CallToolResult)).toEqual({ replies: ['four, in 64 tokens'], model: 'test-model', stop_reason: 'endTurn' });
    expect(seen[0]!.params).toMatchObject({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }],
      systemPrompt: 'Answer briefly.',
      maxTokens: 64,
      modelPreferences: { hints: [{ name: 'claude' }], intelligencePriority: 0.5 },
    });
    expect(seen[0]!.params.modelPreferences).not.toHaveProperty('costPriority');
    image = true;
    expect(structured((await client.callTool({ name: 'ask_model', arguments: {} })) as CallToolResult)).toEqual({ replies: [{ mime: 'image/png', bytes: 4 }], model: 'pic-model', stop_reason: null });
    // The grant's caps reach the guest as the host's error codes.
    const many = structured((await client.callTool({ name: 'ask_model', arguments: { n: 3 } })) as CallToolResult);
    expect(many.replies).toHaveLength(2);
    expect(many.error).toMatchObject({ code: 'PERMISSION_DENIED' });
  });

  it('a handler can fail with th_sample\'s error: CLIENT_UNSUPPORTED for a client without sampling', async () => {
    const client = await connect();
    const result = (await client.callTool({ name: 'must_sample', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('did not declare the sampling capability');
    // The library without a sampling hook: the host's code reaches the guest, and the tool that fails with it ends
    // the call with the host's refusal (its code, message and details), not TOOL_ERROR (issue 41).
    expect((await registry.execute('must_sample', {})).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED', message: expect.stringContaining('cannot answer sampling requests'), details: { reason: 'sampling', relayedBy: 'must_sample' } });
    expect(structured((await client.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
  });

  it('th_elicit returns the user\'s action and answer', async () => {
    const accepting = await connect({ elicit: async () => ({ action: 'accept', content: { name: 'Ada' } }) });
    expect(structured((await accepting.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'accept', content: { name: 'Ada' } });
    const cancelling = await connect({ elicit: async () => ({ action: 'cancel' }) });
    expect(structured((await cancelling.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'cancel', content: null });
    expect(structured((await cancelling.callTool({ name: 'ask_user', arguments: { n: 2 } })) as CallToolResult).error).toMatchObject({ code: 'PERMISSION_DENIED' });
  });
});
