/**
 * The gRPC server under hostile or unusual clients: call ids bounded, invalid
 * UTF-8 refused, exact uint64 budgets, message limits, health and reflection
 * (as grpcurl and load balancers use them), bearer authentication, and Cancel
 * scoped to the client that started the call.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { makeRegistry, root } from './helpers.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer; call_id: string }>): grpc.ClientUnaryCall;
  CallStream(request: Record<string, unknown>, metadata: grpc.Metadata): grpc.ClientReadableStream<{ final: boolean }>;
  Cancel(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ error_code: string }>): grpc.ClientUnaryCall;
}

const loaderOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), loaderOptions)) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};
const healthPackage = grpc.loadPackageDefinition(loadSync(healthProtoPath, loaderOptions)) as unknown as {
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
};
const reflectionPackage = grpc.loadPackageDefinition(
  loadSync(join(root, 'node_modules', '@grpc', 'reflection', 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto'), loaderOptions),
) as unknown as { grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } } };

function toolClient(address: string, options: grpc.ClientOptions = {}): ToolServiceClient {
  return new toolPackage.sw4rm.tool.ToolService(address, grpc.credentials.createInsecure(), options) as unknown as ToolServiceClient;
}

function metadata(token?: string): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  return md;
}

function call(client: ToolServiceClient, request: Record<string, unknown>, token?: string): Promise<{ data: Buffer; call_id: string }> {
  return new Promise((resolve, reject) => {
    client.Call(request, metadata(token), (error, value) => (error ? reject(error) : resolve(value!)));
  });
}

function cancel(client: ToolServiceClient, callId: string, token?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.Cancel({ call_id: callId }, metadata(token), (error, value) => (error ? reject(error) : resolve(value!.error_code)));
  });
}

const rejection = (promise: Promise<unknown>): Promise<grpc.ServiceError> => promise.then(() => { throw new Error('expected a refusal'); }, (error: grpc.ServiceError) => error);
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

describe('gRPC hardening', () => {
  let registry: ToolRegistry;
  let server: GrpcServerHandle;
  let client: ToolServiceClient;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'size',
      description: 'Reports the length of its text.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      run: (args) => ({ length: ((args as { text?: string }).text ?? '').length }),
    }));
    registry.register(defineNativeTool({
      name: 'held',
      description: 'Runs until released or cancelled.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => new Promise((resolve, reject) => {
        release = () => resolve({ released: true });
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      }),
    }));
    server = await startGrpcServer(registry, { port: 0, maxReceiveMessageBytes: 6 * 1024 * 1024, shutdownTimeoutMs: 200 });
    client = toolClient(server.address, { 'grpc.max_send_message_length': 8 * 1024 * 1024 });
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await registry?.close();
  });

  it('refuses call ids that are too long or not visible ASCII (INVALID_ARGUMENT, not echoed back)', async () => {
    for (const callId of ['x'.repeat(129), 'has space', 'ünïcode']) {
      const error = await rejection(call(client, { call_id: callId, tool_name: 'size', args: json({}) }));
      expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error.metadata.get('toolhost-error-code')).toEqual(['INVALID_INPUT']);
      expect(error.metadata.get('toolhost-call-id')).toEqual([]);
    }
    expect((await call(client, { call_id: 'x'.repeat(128), tool_name: 'size', args: json({}) })).call_id).toBe('x'.repeat(128));
    expect(await rejection(cancel(client, 'y'.repeat(10_000)))).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
  });

  it('refuses args that are not valid UTF-8 with INVALID_INPUT instead of replacing bytes', async () => {
    const args = Buffer.concat([Buffer.from('{"text":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const error = await rejection(call(client, { tool_name: 'size', content_type: 'application/json', args }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/^INVALID_INPUT: args are not valid UTF-8/);
  });

  it('reads uint64 budgets exactly: above 2^53 is refused with a message naming the value', async () => {
    const error = await rejection(call(client, { tool_name: 'size', args: json({}), policy: { budget_cpu_ms: '18446744073709551615' } }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toContain('policy.budget_cpu_ms is 18446744073709551615 ms, above the largest accepted value 9007199254740991');
  });

  it('accepts a 5 MiB request when configured (6 MiB here), and refuses one above the limit', async () => {
    const text = 'a'.repeat(5 * 1024 * 1024);
    const frame = await call(client, { tool_name: 'size', content_type: 'application/json', args: json({ text }) });
    expect(JSON.parse(frame.data.toString('utf8'))).toEqual({ length: text.length });
    const tooBig = await rejection(call(client, { tool_name: 'size', args: json({ text: 'b'.repeat(7 * 1024 * 1024) }) }));
    expect(tooBig.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });

  it('answers grpc.health.v1 Check (SERVING) for the server and for ToolService', async () => {
    const health = new healthPackage.grpc.health.v1.Health(server.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Check(request: { service: string }, callback: Callback<{ status: string }>): void;
    };
    try {
      for (const service of ['', 'sw4rm.tool.ToolService']) {
        const answer = await new Promise<{ status: string }>((resolve, reject) => health.Check({ service }, (error, value) => (error ? reject(error) : resolve(value!))));
        expect(answer.status).toBe('SERVING');
      }
      const unknown = await new Promise<grpc.ServiceError>((resolve) => health.Check({ service: 'nope.Service' }, (error) => resolve(error!)));
      expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    } finally {
      health.close();
    }
  });

  it('lists its services over server reflection, as grpcurl does', async () => {
    const reflection = new reflectionPackage.grpc.reflection.v1.ServerReflection(server.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      ServerReflectionInfo(): grpc.ClientDuplexStream<Record<string, unknown>, { list_services_response?: { service: Array<{ name: string }> }; file_descriptor_response?: { file_descriptor_proto: Buffer[] } }>;
    };
    try {
      const stream = reflection.ServerReflectionInfo();
      const answers: Array<Record<string, unknown>> = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on('data', (answer: Record<string, unknown>) => answers.push(answer));
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      stream.write({ list_services: '*' });
      stream.write({ file_containing_symbol: 'sw4rm.tool.ToolService' });
      stream.end();
      await done;
      const names = (answers[0] as { list_services_response: { service: Array<{ name: string }> } }).list_services_response.service.map((entry) => entry.name);
      expect(names).toEqual(expect.arrayContaining(['sw4rm.tool.ToolService', 'grpc.health.v1.Health']));
      const files = (answers[1] as { file_descriptor_response: { file_descriptor_proto: Buffer[] } }).file_descriptor_response.file_descriptor_proto;
      expect(files.length).toBeGreaterThan(0);
    } finally {
      reflection.close();
    }
  });

  it('lets a client cancel its own calls only: another client\'s call in flight is NOT_FOUND', async () => {
    const stream = registry.stream('held', {}, { callId: 'library-call' });
    expect(await cancel(client, 'library-call')).toBe('NOT_FOUND');
    release();
    for await (const event of stream) if (event.type === 'result' || event.type === 'error') break;
    expect(await cancel(client, 'library-call')).toBe('ALREADY_COMPLETED');
  });
});

describe('gRPC with a bearer token', () => {
  let registry: ToolRegistry;
  let server: GrpcServerHandle;
  let client: ToolServiceClient;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object' }, run: () => ({ pong: true }) }));
    server = await startGrpcServer(registry, { port: 0, bearerToken: 's3cret', shutdownTimeoutMs: 200 });
    client = toolClient(server.address);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await registry?.close();
  });

  it('refuses an unauthenticated client (UNAUTHENTICATED) on Call, CallStream and Cancel', async () => {
    for (const token of [undefined, 'wrong']) {
      const error = await rejection(call(client, { tool_name: 'ping' }, token));
      expect(error.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(error.metadata.get('toolhost-error-code')).toEqual(['PERMISSION_DENIED']);
      expect((await rejection(cancel(client, 'any', token))).code).toBe(grpc.status.UNAUTHENTICATED);
    }
    const stream = client.CallStream({ tool_name: 'ping' }, metadata());
    const error = await new Promise<grpc.ServiceError>((resolve) => {
      stream.on('data', () => undefined);
      stream.on('error', resolve);
    });
    expect(error.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(registry.inFlight).toBe(0);
  });

  it('serves a client that sends the token', async () => {
    const frame = await call(client, { tool_name: 'ping' }, 's3cret');
    expect(JSON.parse(frame.data.toString('utf8'))).toEqual({ pong: true });
  });
});
