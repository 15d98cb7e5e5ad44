/**
 * Conversations belong to a principal (issue 11, "Found" 11): with named
 * tokens, each client is its own principal on MCP HTTP and on gRPC alike; the
 * same conversation id names different state (and conversation-isolated
 * instances) for two principals; a session and a call are only their
 * principal's to use and cancel. gRPC health stays open without a token,
 * reflection needs one.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFleetTools } from '../host/tools/fleet-tools.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { TokenTable } from '../host/servers/principals.js';
import { fixture, hasCGuests, makeRegistry, root } from './helpers.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
  Cancel(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ error_code: string }>): grpc.ClientUnaryCall;
}
type ReflectionClient = grpc.Client & { ServerReflectionInfo(metadata?: grpc.Metadata): grpc.ClientDuplexStream<Record<string, unknown>, Record<string, unknown>> };
const loaderOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), loaderOptions)) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } };
const healthPackage = grpc.loadPackageDefinition(loadSync(healthProtoPath, loaderOptions)) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } };
const reflectionPackage = grpc.loadPackageDefinition(
  loadSync(join(root, 'node_modules', '@grpc', 'reflection', 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto'), loaderOptions),
) as unknown as { grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } } };

const TOKENS = [{ principal: 'alice', token: 'alice-token' }, { principal: 'bob', token: 'bob-token' }];
const bearer = (token: string | undefined): grpc.Metadata => {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
};

describe('principals on MCP HTTP and gRPC', () => {
  let registry: ToolRegistry;
  let mcpServer: McpHttpServer;
  let grpcServer: GrpcServerHandle;
  let grpcClient: ToolServiceClient;
  let alice: Client;
  let bob: Client;
  let aliceTransport: StreamableHTTPClientTransport;

  const connect = async (token: string): Promise<[Client, StreamableHTTPClientTransport]> => {
    const client = new Client({ name: `principals-${token}`, version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(mcpServer.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    return [client, transport];
  };
  const grpcCall = (tool: string, args: unknown, token: string, conversationId?: string): Promise<unknown> => new Promise((resolve, reject) => {
    const metadata = bearer(token);
    if (conversationId !== undefined) metadata.set('toolhost-conversation-id', conversationId);
    grpcClient.Call({ tool_name: tool, args: Buffer.from(JSON.stringify(args)) }, metadata, (error, frame) => (error ? reject(error) : resolve(JSON.parse(frame!.data.toString('utf8')))));
  });
  const grpcCancel = (callId: string, token: string): Promise<string> => new Promise((resolve, reject) => {
    grpcClient.Cancel({ call_id: callId }, bearer(token), (error, value) => (error ? reject(error) : resolve(value!.error_code)));
  });
  const remember = async (client: Client, value: string, conversationId = 'shared-name'): Promise<unknown> =>
    ((await client.callTool({ name: 'remember', arguments: { value }, _meta: { 'toolhost/conversationId': conversationId } })) as CallToolResult).structuredContent;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'remember',
      description: 'Answers the value the conversation held, and stores its own.',
      inputSchema: { type: 'object', properties: { value: { type: 'string' } } },
      run: async (args, ctx) => {
        const before = await ctx.getState<string | null>('value', null);
        await ctx.setState('value', (args as { value: string }).value);
        return { before };
      },
    }));
    registry.register(defineNativeTool({
      name: 'held',
      description: 'Runs until cancelled.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true })),
    }));
    registerFleetTools(registry);
    mcpServer = await startMcpHttpServer(registry, { tokens: TOKENS, progressFlushMs: 0 });
    grpcServer = await startGrpcServer(registry, { port: 0, tokens: TOKENS, shutdownTimeoutMs: 200 });
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    [alice, aliceTransport] = await connect('alice-token');
    [bob] = await connect('bob-token');
  });
  afterAll(async () => {
    await Promise.allSettled([alice?.close(), bob?.close()]);
    grpcClient?.close();
    await grpcServer?.close();
    await mcpServer?.close();
    await registry?.close();
  });

  it('keeps two principals\' conversations of the same name apart, and one principal\'s the same over MCP and gRPC', async () => {
    expect(await remember(alice, 'alice-1')).toEqual({ before: null });
    // Bob names the same conversation and sees nothing of Alice's.
    expect(await remember(bob, 'bob-1')).toEqual({ before: null });
    expect(await remember(alice, 'alice-2')).toEqual({ before: 'alice-1' });
    // Alice's token over gRPC is Alice: the same conversation.
    expect(await grpcCall('remember', { value: 'alice-3' }, 'alice-token', 'shared-name')).toEqual({ before: 'alice-2' });
    expect(await grpcCall('remember', { value: 'bob-2' }, 'bob-token', 'shared-name')).toEqual({ before: 'bob-1' });
  });

  it('answers another principal\'s session id with 404, as if it did not exist', async () => {
    const sessionId = aliceTransport.sessionId!;
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
    const asBob = await fetch(mcpServer.url, { method: 'POST', headers: { ...headers, Authorization: 'Bearer bob-token' }, body });
    expect(asBob.status).toBe(404);
    const asAlice = await fetch(mcpServer.url, { method: 'POST', headers: { ...headers, Authorization: 'Bearer alice-token' }, body });
    expect(asAlice.status).toBe(200);
    await asAlice.text();
    const none = await fetch(mcpServer.url, { method: 'POST', headers, body });
    expect(none.status).toBe(401);
  });

  it('lets a principal cancel only its own calls, over MCP (toolhost_cancel) and gRPC', async () => {
    const pending = alice.callTool({ name: 'held', arguments: {}, _meta: { 'toolhost/callId': 'alice-held' } });
    await expect.poll(() => registry.callState('alice-held', 'alice')).toBe('in_flight');
    const cancelAs = async (client: Client): Promise<unknown> =>
      ((await client.callTool({ name: 'toolhost_cancel', arguments: { call_id: 'alice-held' } })) as CallToolResult).structuredContent;
    expect(await cancelAs(bob)).toEqual({ call_id: 'alice-held', outcome: 'NOT_FOUND' });
    expect(await grpcCancel('alice-held', 'bob-token')).toBe('NOT_FOUND');
    expect(registry.callState('alice-held', 'alice')).toBe('in_flight');
    expect(await cancelAs(alice)).toEqual({ call_id: 'alice-held', outcome: 'CANCELLED' });
    expect(await pending).toMatchObject({ isError: true, structuredContent: { error: { code: 'CANCELLED' } } });
  });

  it('keeps gRPC health open without a token, and asks reflection for one', async () => {
    const health = new healthPackage.grpc.health.v1.Health(grpcServer.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & { Check(request: { service: string }, callback: Callback<{ status: string }>): void };
    const reflection = new reflectionPackage.grpc.reflection.v1.ServerReflection(grpcServer.address, grpc.credentials.createInsecure()) as unknown as ReflectionClient;
    const listServices = (metadata: grpc.Metadata): Promise<unknown> => new Promise((resolve, reject) => {
      const stream = reflection.ServerReflectionInfo(metadata);
      const answers: unknown[] = [];
      stream.on('data', (answer: unknown) => answers.push(answer));
      stream.on('error', reject);
      stream.on('end', () => resolve(answers[0]));
      stream.write({ list_services: '*' });
      stream.end();
    });
    try {
      const status = await new Promise<string>((resolve, reject) => health.Check({ service: '' }, (error, value) => (error ? reject(error) : resolve(value!.status))));
      expect(status).toBe('SERVING');
      for (const token of [undefined, 'wrong']) {
        expect(await listServices(bearer(token)).catch((error: grpc.ServiceError) => error)).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      }
      expect(await listServices(bearer('bob-token'))).toMatchObject({ list_services_response: { service: expect.arrayContaining([{ name: 'sw4rm.tool.ToolService' }]) } });
    } finally {
      health.close();
      reflection.close();
    }
  });
});

describe.runIf(hasCGuests)('conversation-isolated instances and principals', () => {
  it('gives two principals naming one conversation two instances', async () => {
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(fixture('counter'), { isolation: 'conversation' });
      const count = async (principal: string): Promise<unknown> => (await registry.execute('counter', {}, { conversationId: 'c', principal })).structuredContent;
      expect(await count('alice')).toEqual({ count: 1 });
      expect(await count('alice')).toEqual({ count: 2 });
      expect(await count('bob')).toEqual({ count: 1 });
    } finally {
      await registry.close();
    }
  });
});

describe('the token table', () => {
  it('refuses bad or clashing tokens, naming the option', () => {
    expect(TokenTable.from({})).toBeUndefined();
    expect(() => TokenTable.from({ tokens: [{ principal: 'has space', token: 't' }] })).toThrow('options.tokens[0].principal must match');
    expect(() => TokenTable.from({ bearerToken: 't', tokens: [{ principal: 'bearer', token: 'u' }] })).toThrow('is taken (by the shared bearer token)');
    expect(() => TokenTable.from({ tokens: [{ principal: 'a', token: 't' }, { principal: 'b', token: 't' }] })).toThrow('the same token is given twice');
    const table = TokenTable.from({ bearerToken: 'shared', tokens: TOKENS })!;
    expect(table.principalOf('Bearer shared')).toBe('bearer');
    expect(table.principalOf('bearer bob-token')).toBe('bob');
    expect(table.principalOf('Bearer nope')).toBeUndefined();
    expect(table.principalOf(undefined)).toBeUndefined();
  });
});
