/**
 * Issue 35, T9: token confusion. An access token is a JWT whose header says
 * `typ: at+jwt` (RFC 9068): an ID token the same issuer signed (typ JWT, its
 * aud naming this resource) is refused, over MCP HTTP (401) and gRPC
 * (UNAUTHENTICATED); `servers.auth.oauth.accept_plain_jwt` lets plain JWTs in
 * for issuers that cannot mint at+jwt. An introspection answer whose
 * `token_type` names a refresh token is refused; access_token, Bearer or none
 * are served.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../host/config/index.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { createAuthenticator } from '../host/servers/auth/authenticator.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry, root } from './helpers.js';
import { INTROSPECTION_CLIENT, makeKey, startAuthorizationServer, type TestAuthorizationServer } from './oauth-server.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};

const AUDIENCE = 'https://tools.example.test/mcp';
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
/** What an OpenID Connect ID token carries besides iss, sub, aud, exp (its aud here names this resource, the worst case). */
const ID_TOKEN_CLAIMS = { nonce: 'n-0S6_WzA2Mj', auth_time: Math.floor(Date.now() / 1000) - 10, azp: 'some-client', email: 'alice@example.test' };

describe('JWT access tokens must say typ at+jwt', () => {
  let as: TestAuthorizationServer;
  let registry: ToolRegistry;
  let mcp: McpHttpServer;
  let grpcServer: GrpcServerHandle;
  let grpcClient: ToolServiceClient;

  const post = (token: string): Promise<Response> => fetch(mcp.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` },
    body: INITIALIZE,
  });
  const grpcCall = (token: string): Promise<unknown> => new Promise((resolve, reject) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    grpcClient.Call({ tool_name: 'whoami', args: Buffer.from('{}') }, metadata, (error, frame) => (error ? reject(error) : resolve(JSON.parse(frame!.data.toString('utf8')))));
  });

  beforeAll(async () => {
    as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k1', 'ES256')] });
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'whoami',
      description: 'Answers the caller\'s principal.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => ({ principal: ctx.principal ?? null }),
    }));
    const oauth = { issuer: as.issuer, audience: AUDIENCE, jwksUri: `${as.issuer}/jwks` };
    mcp = await startMcpHttpServer(registry, { oauth, progressFlushMs: 0 });
    grpcServer = await startGrpcServer(registry, { port: 0, oauth, shutdownTimeoutMs: 200 });
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  });
  afterAll(async () => {
    grpcClient?.close();
    await grpcServer?.close();
    await mcp?.close();
    await registry?.close();
    await as?.close();
  });

  it('refuses an ID-token-shaped JWT with typ JWT: 401 over MCP HTTP, UNAUTHENTICATED over gRPC', async () => {
    const idToken = await as.tokenTyped(ID_TOKEN_CLAIMS, 'JWT');
    const response = await post(idToken);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('invalid_token');
    expect(JSON.stringify(await response.json())).toContain('at+jwt');
    await expect(grpcCall(idToken)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });

  it('refuses a JWT without typ, and one whose typ names another kind of JWT', async () => {
    for (const typ of [undefined, 'dpop+jwt', 'secevent+jwt', 'at+jwt-not']) {
      expect({ typ, status: (await post(await as.tokenTyped({}, typ))).status }).toEqual({ typ, status: 401 });
    }
  });

  it('serves the same claims as an access token (typ at+jwt, application/at+jwt, any case), over MCP HTTP and gRPC', async () => {
    for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT']) {
      const response = await post(await as.tokenTyped(ID_TOKEN_CLAIMS, typ));
      expect({ typ, status: response.status }).toEqual({ typ, status: 200 });
      await response.body?.cancel();
    }
    expect(await grpcCall(await as.tokenTyped(ID_TOKEN_CLAIMS, 'at+jwt'))).toEqual({ principal: 'alice' });
  });
});

describe('accept_plain_jwt', () => {
  it('with the switch on, a plain JWT (typ JWT or none) is served, and other typs are still refused', async () => {
    const as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k1', 'RS256')] });
    try {
      const plain = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, jwksUri: `${as.issuer}/jwks`, acceptPlainJwt: true } })!;
      const strict = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, jwksUri: `${as.issuer}/jwks` } })!;
      const jwt = await as.tokenTyped({ sub: 'bob' }, 'JWT');
      expect(await strict.authenticate(`Bearer ${jwt}`)).toMatchObject({ ok: false, status: 401, reason: 'token_type' });
      expect(await plain.authenticate(`Bearer ${jwt}`)).toMatchObject({ ok: true, caller: { principal: 'bob' } });
      expect(await plain.authenticate(`Bearer ${await as.tokenTyped({ sub: 'bob' }, undefined)}`)).toMatchObject({ ok: true });
      expect(await plain.authenticate(`Bearer ${await as.tokenTyped({ sub: 'bob' }, 'application/jwt')}`)).toMatchObject({ ok: true });
      expect(await plain.authenticate(`Bearer ${await as.token({ sub: 'bob' })}`)).toMatchObject({ ok: true });
      expect(await plain.authenticate(`Bearer ${await as.tokenTyped({ sub: 'bob' }, 'dpop+jwt')}`)).toMatchObject({ ok: false, status: 401, reason: 'token_type' });
      // The other checks still hold for a plain JWT.
      expect(await plain.authenticate(`Bearer ${await as.tokenTyped({ aud: 'some-client' }, 'JWT')}`)).toMatchObject({ ok: false, status: 401, reason: 'audience' });
    } finally {
      await as.close();
    }
  });

  it('is servers.auth.oauth.accept_plain_jwt in toolhost.yaml (a boolean)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-typ-'));
    try {
      const file = join(dir, 'toolhost.yaml');
      const write = (value: string): void => writeFileSync(file, ['tools: []', 'servers:', '  auth:', '    oauth:', '      issuer: https://auth.example.test', `      audience: ${AUDIENCE}`, `      accept_plain_jwt: ${value}`, ''].join('\n'));
      write('true');
      expect((await loadConfig(file, { env: {} })).resolved.servers.oauth).toMatchObject({ acceptPlainJwt: true });
      write('"yes"');
      await expect(loadConfig(file, { env: {} })).rejects.toThrow('accept_plain_jwt');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('introspection answers must be access tokens', () => {
  it('refuses an answer with token_type refresh_token (or id_token), and serves access_token, Bearer or none', async () => {
    const as = await startAuthorizationServer({ audience: AUDIENCE, keys: [await makeKey('k', 'ES256')] });
    try {
      const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: { endpoint: `${as.issuer}/introspect`, ...INTROSPECTION_CLIENT } } })!;
      for (const tokenType of ['refresh_token', 'REFRESH_TOKEN', 'id_token', 'urn:ietf:params:oauth:token-type:refresh_token', 'N_A', 42]) {
        const answer = await auth.authenticate(`Bearer ${as.opaque({ token_type: tokenType })}`);
        expect({ tokenType, answer }).toMatchObject({ tokenType, answer: { ok: false, status: 401, error: 'invalid_token', reason: 'token_type' } });
      }
      for (const tokenType of ['access_token', 'Bearer', 'urn:ietf:params:oauth:token-type:access_token', undefined]) {
        const answer = await auth.authenticate(`Bearer ${as.opaque({ token_type: tokenType, sub: 'carol' })}`);
        expect({ tokenType, answer }).toMatchObject({ tokenType, answer: { ok: true, caller: { principal: 'carol' } } });
      }
    } finally {
      await as.close();
    }
  });
});
