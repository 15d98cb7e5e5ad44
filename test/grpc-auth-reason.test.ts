/**
 * A gRPC request refused for its credentials says why (issue 38: the refusal
 * said only that a valid token was required): UNAUTHENTICATED with
 * `toolhost-error-details-bin` `{ reason, error }` (expired, missing...), as MCP
 * HTTP's WWW-Authenticate does. Control: a valid token is served.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { makeRegistry, root } from './helpers.js';
import { makeKey, startAuthorizationServer, type TestAuthorizationServer } from './oauth-server.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};
const AUDIENCE = 'https://tools.example.test/mcp';

describe('gRPC OAuth refusals', () => {
  let as: TestAuthorizationServer;
  let registry: ToolRegistry;
  let server: GrpcServerHandle;
  let client: ToolServiceClient;
  beforeAll(async () => {
    as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k1', 'ES256')] });
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'hello', description: 'Says hello.', inputSchema: { type: 'object' }, run: () => ({ hello: true }) }));
    server = await startGrpcServer(registry, { port: 0, oauth: { issuer: as.issuer, audience: AUDIENCE }, shutdownTimeoutMs: 200 });
    client = new toolPackage.sw4rm.tool.ToolService(server.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await registry?.close();
    await as?.close();
  });

  const call = (token: string | undefined): Promise<{ code?: number; details?: unknown }> => new Promise((resolve) => {
    const metadata = new grpc.Metadata();
    if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
    client.Call({ tool_name: 'hello', args: Buffer.from('{}') }, metadata, (error) => {
      const bin = error?.metadata.get('toolhost-error-details-bin')[0];
      resolve({ ...(error === null ? {} : { code: error.code }), ...(bin === undefined ? {} : { details: JSON.parse(Buffer.from(bin as Buffer).toString('utf8')) }) });
    });
  });

  it('an expired token and a missing one are UNAUTHENTICATED with the reason in the details', async () => {
    const expired = await call(await as.token({ exp: Math.floor(Date.now() / 1000) - 600 }));
    expect(expired).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: { reason: 'expired', error: 'invalid_token' } });
    expect(await call(undefined)).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: { reason: 'missing' } });
  });

  it('control: a valid token is served', async () => {
    expect(await call(await as.token({}))).toEqual({});
  });
});
