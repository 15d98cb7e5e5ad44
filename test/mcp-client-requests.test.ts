/**
 * A 0.2.0 guest (test/fixtures/guests/c-v0.2/mcp_rich.c) through real MCP
 * clients: its content items and metadata, and its `sample` and `elicit`
 * answered by the official SDK client's handlers over Streamable HTTP and
 * stdio; refused without the grant, past the grant's caps, for a client
 * without the capability and over gRPC (CLIENT_UNSUPPORTED); a client that
 * never answers ends the call at its wall budget, and the wait is not charged
 * to the CPU budget.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult, type CreateMessageRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRegistry } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { fixture, hasCGuests, makeRegistry, root, sharedCacheDir } from './helpers.js';
import { RICH_CONTENT } from './rich-content.js';

const wasm = fixture('mcp_rich');
type Structured = { replies?: string[]; model?: string; error?: { code: string; message: string }; action?: string; content?: unknown };
const structured = (result: CallToolResult): Structured => result.structuredContent as Structured;

/** An SDK client with the given handlers (a capability is declared only for a handler given). */
function sdkClient(handlers: { sample?: (request: CreateMessageRequest) => Promise<unknown>; elicit?: () => Promise<unknown> }): Client {
  const capabilities: Record<string, unknown> = {};
  if (handlers.sample) capabilities.sampling = {};
  if (handlers.elicit) capabilities.elicitation = { form: {} };
  const client = new Client({ name: 'client-requests-test', version: '1.0.0' }, { capabilities });
  if (handlers.sample) client.setRequestHandler(CreateMessageRequestSchema, handlers.sample as never);
  if (handlers.elicit) client.setRequestHandler(ElicitRequestSchema, handlers.elicit as never);
  return client;
}

const modelAnswer = async (request: CreateMessageRequest) => ({
  role: 'assistant' as const,
  content: { type: 'text' as const, text: `four, in ${request.params.maxTokens} tokens or less` },
  model: 'test-model',
  stopReason: 'endTurn',
});

describe.skipIf(!hasCGuests)('a 0.2.0 tool through MCP clients', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const audit = new MemoryAuditLog();
  const limits: Array<{ tool: string; limit: string }> = [];
  const clients: Client[] = [];

  async function connect(handlers: Parameters<typeof sdkClient>[0]): Promise<Client> {
    const client = sdkClient(handlers);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    registry = makeRegistry({ audit, defaults: { wallMs: 10_000 } });
    await registry.registerWasmTools(wasm, { grant: { sampling: { maxRequests: 2, maxTokens: 1000 }, elicitation: { maxRequests: 1 }, state: { access: 'read' } } });
    registry.onLimitHit((tool, limit) => limits.push({ tool, limit }));
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('lists the author\'s title, annotations and icons', async () => {
    const client = await connect({});
    const { tools } = await client.listTools();
    const rich = tools.find((tool) => tool.name === 'rich')!;
    expect(rich.title).toBe('Rich content');
    expect(rich.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(rich.icons).toEqual([{ src: 'data:image/png;base64,iVBORw0KGgo=', mimeType: 'image/png', sizes: ['48x48'] }]);
    expect(rich.outputSchema).toMatchObject({ required: ['ok'] });
  });

  it('returns content items of every kind beside the value, which stays the structured content', async () => {
    const client = await connect({});
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
  });

  it('sends sample to the calling client\'s sampling handler, which answers the guest', async () => {
    const seen: CreateMessageRequest[] = [];
    const client = await connect({ sample: async (request) => { seen.push(request); return modelAnswer(request); } });
    const result = (await client.callTool({ name: 'ask_model', arguments: { max_tokens: 64 } })) as CallToolResult;
    expect(structured(result)).toEqual({ replies: ['four, in 64 tokens or less'], model: 'test-model' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.params).toMatchObject({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }],
      systemPrompt: 'Answer briefly.',
      maxTokens: 64,
      modelPreferences: { hints: [{ name: 'claude' }], intelligencePriority: 0.5 },
    });
    expect(audit.entries.some((entry) => entry.tool === 'ask_model' && entry.decision === 'allowed' && (entry.grants as { clientRequest?: string }).clientRequest === 'sampling')).toBe(true);
  });

  it('refuses requests past the grant\'s caps, and counts each as a limit hit', async () => {
    const client = await connect({ sample: modelAnswer });
    const many = structured((await client.callTool({ name: 'ask_model', arguments: { n: 3 } })) as CallToolResult);
    expect(many.replies).toHaveLength(2);
    expect(many.error).toMatchObject({ code: 'PERMISSION_DENIED' });
    const greedy = structured((await client.callTool({ name: 'ask_model', arguments: { max_tokens: 5000 } })) as CallToolResult);
    expect(greedy.error).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(greedy.error!.message).toContain('at most 1000');
    expect(limits).toEqual(expect.arrayContaining([{ tool: 'ask_model', limit: 'sampling_requests_per_call' }, { tool: 'ask_model', limit: 'sampling_max_tokens' }]));
  });

  it('tells the guest CLIENT_UNSUPPORTED when the client did not declare sampling or elicitation', async () => {
    const client = await connect({});
    expect(structured((await client.callTool({ name: 'ask_model', arguments: {} })) as CallToolResult).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
    expect(structured((await client.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
  });

  it('sends elicit to the client\'s elicitation handler: accept with content, decline', async () => {
    const accepting = await connect({ elicit: async () => ({ action: 'accept', content: { name: 'Ada' } }) });
    expect(structured((await accepting.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'accept', content: { name: 'Ada' } });
    const declining = await connect({ elicit: async () => ({ action: 'decline' }) });
    expect(structured((await declining.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'decline', content: null });
    expect(structured((await declining.callTool({ name: 'ask_user', arguments: { n: 2 } })) as CallToolResult).error).toMatchObject({ code: 'PERMISSION_DENIED' });
  });

  it('ends a call whose client never answers at its wall budget, and does not charge the wait to its CPU budget', async () => {
    const never = await connect({ sample: () => new Promise(() => {}) });
    const started = Date.now();
    const stuck = (await never.callTool({ name: 'ask_model', arguments: {}, _meta: { 'toolhost/policy': { budget_wall_ms: 500 } } })) as CallToolResult;
    expect(stuck.isError).toBe(true);
    expect((stuck._meta?.['toolhost/error'] as { code: string }).code).toBe('WALL_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(5_000);
    const slow = await connect({ sample: async (request) => { await new Promise((resolve) => setTimeout(resolve, 400)); return modelAnswer(request); } });
    const answered = (await slow.callTool({ name: 'ask_model', arguments: {}, _meta: { 'toolhost/policy': { budget_cpu_ms: 100 } } })) as CallToolResult;
    expect(answered.isError).toBeFalsy();
    expect(structured(answered).replies).toHaveLength(1);
  });

  it('refuses a tool whose grant does not allow sampling', async () => {
    const bare = makeRegistry();
    try {
      await bare.registerWasmTools(wasm);
      const result = await bare.execute('ask_model', {}, { client: { sample: async () => ({ role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' }) } });
      expect((result.structuredContent as Structured).error).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect((result.structuredContent as Structured).error!.message).toContain('grant.sampling');
    } finally {
      await bare.close();
    }
  });

  it('tells a gRPC caller\'s guest CLIENT_UNSUPPORTED (gRPC has no way to ask back)', async () => {
    const grpcServer: GrpcServerHandle = await startGrpcServer(registry, { host: '127.0.0.1', port: 0 });
    const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
    const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;
    const client = new ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as { Call: (request: object, callback: (error: grpc.ServiceError | null, frame?: { data: Buffer }) => void) => void; close(): void };
    try {
      const frame = await new Promise<{ data: Buffer }>((resolve, reject) => client.Call({ tool_name: 'ask_model', args: Buffer.from('{}') }, (error, value) => (error ? reject(error) : resolve(value!))));
      expect((JSON.parse(frame.data.toString()) as Structured).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
    } finally {
      client.close();
      await grpcServer.close();
    }
  });
});

describe.skipIf(!hasCGuests)('a 0.2.0 tool over MCP stdio', () => {
  let client: Client;
  beforeAll(async () => {
    client = sdkClient({ sample: modelAnswer, elicit: async () => ({ action: 'accept', content: { name: 'Grace' } }) });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [join(root, 'test', 'fixtures', 'mcp', 'toolhost-stdio-v2.mjs'), wasm, sharedCacheDir], cwd: root, stderr: 'pipe' }));
  });
  afterAll(async () => {
    await client?.close();
  });

  it('answers sample and elicit through the client\'s handlers', async () => {
    expect(structured((await client.callTool({ name: 'ask_model', arguments: { max_tokens: 7 } })) as CallToolResult)).toEqual({ replies: ['four, in 7 tokens or less'], model: 'test-model' });
    expect(structured((await client.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'accept', content: { name: 'Grace' } });
  });
});
