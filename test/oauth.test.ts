/**
 * The OAuth 2.1 resource server (issue 27, item 1): access tokens of a local
 * authorization server (keys made here, RFC 8414 metadata and a JWKS on
 * loopback) on MCP HTTP and gRPC. A valid token is served; expired, wrong
 * audience, wrong issuer, unknown key, `alg: none` and HS256 signed with the
 * JWKS's public key are all refused (401 / UNAUTHENTICATED); a token's scopes
 * cap the labels its calls may use; a key rotation is picked up; static tokens
 * keep working beside it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../host/config/index.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { createAuthenticator, createOAuthVerifier } from '../host/servers/auth/authenticator.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry, root } from './helpers.js';
import { INTROSPECTION_CLIENT, makeKey, startAuthorizationServer, type SigningKey, type TestAuthorizationServer } from './oauth-server.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};

const AUDIENCE = 'https://tools.example.test/mcp';
const SCOPE_LABELS = {
  'tools:read': { privilege: 'DEFAULT' },
  'tools:write': { privilege: 'ELEVATED', network: 'EGRESS_RESTRICTED' },
  'tools:privileged': { privilege: 'PRIVILEGED', network: 'FULL_ACCESS' },
};
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

describe('OAuth access tokens on MCP HTTP and gRPC', () => {
  let as: TestAuthorizationServer;
  let rsa: SigningKey;
  let registry: ToolRegistry;
  let mcp: McpHttpServer;
  let grpcServer: GrpcServerHandle;
  let grpcClient: ToolServiceClient;
  const now = (): number => Math.floor(Date.now() / 1000);

  const postInitialize = (token: string | undefined): Promise<Response> => fetch(mcp.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }) },
    body: INITIALIZE,
  });
  const grpcCall = (token: string, tool: string, policy?: Record<string, unknown>): Promise<unknown> => new Promise((resolve, reject) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    grpcClient.Call({ tool_name: tool, args: Buffer.from('{}'), ...(policy === undefined ? {} : { policy }) }, metadata, (error, frame) => (error ? reject(error) : resolve(JSON.parse(frame!.data.toString('utf8')))));
  });
  const mcpClient = async (token: string): Promise<Client> => {
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  };

  beforeAll(async () => {
    rsa = await makeKey('k1', 'RS256');
    as = await startAuthorizationServer({ audience: AUDIENCE, keys: [rsa] });
    registry = makeRegistry({ approve: () => true });
    registry.register(defineNativeTool({
      name: 'whoami',
      description: 'Answers the caller\'s principal and the labels the call got.',
      inputSchema: { type: 'object' },
      grant: { privilege: 'PRIVILEGED', network: 'FULL_ACCESS' },
      run: async (_args, ctx) => ({ principal: ctx.principal ?? null }),
    }));
    registry.register(defineNativeTool({
      name: 'reader',
      description: 'Runs at DEFAULT unless asked otherwise.',
      inputSchema: { type: 'object' },
      grant: { privilege: 'DEFAULT' },
      defaultPolicy: { privilege_level: 'DEFAULT' },
      run: async () => ({ ok: true }),
    }));
    // jwks_uri left out: found through the issuer's RFC 8414 metadata. No cooldown, so a rotation is seen at once.
    const oauth = { issuer: as.issuer, audience: AUDIENCE, scopeLabels: SCOPE_LABELS, jwksCooldownMs: 0 };
    const tokens = [{ principal: 'ci', token: 'static-ci-token' }];
    mcp = await startMcpHttpServer(registry, { oauth, tokens, progressFlushMs: 0 });
    grpcServer = await startGrpcServer(registry, { port: 0, oauth, tokens, shutdownTimeoutMs: 200 });
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  });
  afterAll(async () => {
    grpcClient?.close();
    await grpcServer?.close();
    await mcp?.close();
    await registry?.close();
    await as?.close();
  });

  it('serves a valid token over MCP HTTP and gRPC, as its subject', async () => {
    const token = await as.token({ scope: 'tools:read' });
    const client = await mcpClient(token);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['whoami', 'reader']));
      expect(((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult).structuredContent).toEqual({ principal: 'alice' });
    } finally {
      await client.close();
    }
    expect(await grpcCall(token, 'whoami')).toEqual({ principal: 'alice' });
    // Discovered once per server (MCP and gRPC each hold their own key cache), not once per token.
    expect(as.metadataFetches).toBe(2);
  });

  it('refuses expired, wrong-audience, wrong-issuer, unknown-key, alg none and HS256-with-the-public-key tokens: 401 and UNAUTHENTICATED', async () => {
    const stranger = await makeKey('k-unknown', 'ES256');
    const bad: Record<string, string> = {
      expired: await as.token({ iat: now() - 7200, exp: now() - 3600 }),
      audience: await as.token({ aud: 'https://other.example.test/mcp' }),
      issuer: await as.token({ iss: 'http://127.0.0.1:9/' }),
      'unknown key': await as.token({}, stranger),
      'alg none': as.unsigned({}),
      // The classic confusion: the JWKS's RSA public key (PEM) used as an HMAC secret, with the real key's kid.
      'HS256 with the public key': await new SignJWT({ iss: as.issuer, aud: AUDIENCE, sub: 'alice', exp: now() + 300 })
        .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
        .sign(new TextEncoder().encode(rsa.publicPem)),
      'no exp': await as.token({ exp: undefined }),
      'not yet valid': await as.token({ nbf: now() + 3600 }),
      'static principal': await as.token({ sub: 'ci' }),
      garbage: 'not-a-jwt',
    };
    for (const [name, token] of Object.entries(bad)) {
      const response = await postInitialize(token);
      expect({ name, status: response.status }).toEqual({ name, status: 401 });
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge).toContain(`resource_metadata="https://tools.example.test/.well-known/oauth-protected-resource/mcp"`);
      expect(challenge).toContain('error="invalid_token"');
      await response.text();
      const refused = await grpcCall(token, 'whoami').then(() => undefined, (error: grpc.ServiceError) => error.code);
      expect({ name, code: refused }).toEqual({ name, code: grpc.status.UNAUTHENTICATED });
    }
    const none = await postInitialize(undefined);
    expect(none.status).toBe(401);
    // The entry scope of scope_labels (step-up: oauth-step-up.test.ts).
    expect(none.headers.get('www-authenticate')).toBe('Bearer resource_metadata="https://tools.example.test/.well-known/oauth-protected-resource/mcp", scope="tools:read"');
  });

  it('maps a subject outside the principal alphabet one-to-one (Auth0\'s auth0|id), and refuses an empty or huge one', async () => {
    const whoami = async (sub: string): Promise<unknown> => {
      const client = await mcpClient(await as.token({ sub }));
      try {
        return ((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult).structuredContent;
      } finally {
        await client.close();
      }
    };
    expect(await whoami('auth0|5f3a9c')).toEqual({ principal: 'auth0%7C5f3a9c' });
    // The encoded form as a literal subject is another principal: % is encoded too.
    expect(await whoami('auth0%7C5f3a9c')).toEqual({ principal: 'auth0%257C5f3a9c' });
    expect(await whoami('ünïcode user')).toEqual({ principal: '%C3%BCn%C3%AFcode%20user' });
    expect(await grpcCall(await as.token({ sub: 'google-oauth2|1234' }), 'whoami')).toEqual({ principal: 'google-oauth2%7C1234' });
    for (const sub of ['', '|'.repeat(43)]) {
      const response = await postInitialize(await as.token({ sub }));
      expect({ sub, status: response.status }).toEqual({ sub, status: 401 });
      await response.text();
    }
  });

  it('ends a session\'s event stream (GET) when the token that opened it expires', async () => {
    const token = await as.token({ exp: now() + 2 });
    const opened = await postInitialize(token);
    expect(opened.status).toBe(200);
    await opened.text();
    const session = opened.headers.get('mcp-session-id')!;
    const headers = { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session, Accept: 'text/event-stream' };
    const initialized = await fetch(mcp.url, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect(initialized.status).toBe(202);
    const started = Date.now();
    const stream = await fetch(mcp.url, { headers });
    expect(stream.status).toBe(200);
    // Read to its end: it ends at the token's expiry (it never did before).
    await stream.text();
    const lived = Date.now() - started;
    expect(lived).toBeGreaterThan(500);
    expect(lived).toBeLessThan(4_000);
  });

  it('serves RFC 9728 protected-resource metadata without a token', async () => {
    const base = mcp.url.replace(/\/mcp$/, '');
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const response = await fetch(`${base}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource: AUDIENCE,
        authorization_servers: [as.issuer],
        bearer_methods_supported: ['header'],
        scopes_supported: ['tools:read', 'tools:write', 'tools:privileged'],
      });
    }
  });

  it('caps a call\'s labels at its token\'s scopes, over MCP and gRPC, whatever the grant allows', async () => {
    const write = await as.token({ scope: 'tools:read tools:write' });
    const none = await as.token({ scope: 'profile' });
    const privileged = await as.token({ scope: 'tools:privileged' });
    const codeOf = async (token: string, tool: string, policy: Record<string, unknown>): Promise<string> => {
      const client = await mcpClient(token);
      try {
        const result = (await client.callTool({ name: tool, arguments: {}, _meta: { 'toolhost/policy': policy } })) as CallToolResult;
        return result.isError ? (result._meta?.['toolhost/error'] as { code: string }).code : 'ok';
      } catch (error) {
        // Above the token's ceiling: HTTP 403 insufficient_scope (step-up), toolhost's code in the JSON-RPC error's data.
        return /"data":\{"code":"([A-Z_]+)"/.exec((error as Error).message)?.[1] ?? String(error);
      } finally {
        await client.close();
      }
    };
    const grpcCode = (token: string, tool: string, policy: Record<string, unknown>): Promise<string> =>
      grpcCall(token, tool, policy).then(() => 'ok', (error: grpc.ServiceError) => error.metadata.get('toolhost-error-code')[0] as string);
    const hits: string[] = [];
    const unsubscribe = registry.onLimitHit((tool, limit) => hits.push(`${tool}:${limit}`));
    for (const ask of [codeOf, grpcCode]) {
      expect(await ask(write, 'whoami', { privilege_level: 'ELEVATED' })).toBe('ok');
      expect(await ask(write, 'whoami', { privilege_level: 'PRIVILEGED' })).toBe('TOOL_PRIVILEGE_ESCALATION');
      expect(await ask(write, 'whoami', { network_policy: 'FULL_ACCESS' })).toBe('PERMISSION_DENIED');
      expect(await ask(privileged, 'whoami', { privilege_level: 'PRIVILEGED', network_policy: 'FULL_ACCESS' })).toBe('ok');
      // No mapped scope: MINIMAL and DENY_ALL; a tool whose default is DEFAULT is refused, not lowered in silence.
      expect(await ask(none, 'whoami', {})).toBe('ok');
      expect(await ask(none, 'reader', {})).toBe('TOOL_PRIVILEGE_ESCALATION');
    }
    unsubscribe();
    // Each refusal is a hit of the scope_labels limit (toolhost_limit_hits_total{tool, limit="scope_labels"}).
    expect(hits).toEqual(['whoami:scope_labels', 'whoami:scope_labels', 'reader:scope_labels', 'whoami:scope_labels', 'whoami:scope_labels', 'reader:scope_labels']);
  });

  it('picks up a key rotation, and refuses the retired key afterwards', async () => {
    const next = await makeKey('k2', 'ES256');
    const old = await as.token({ scope: 'tools:read' });
    expect(await grpcCall(old, 'whoami')).toEqual({ principal: 'alice' });
    as.rotate([next]);
    const fresh = await as.token({ sub: 'bob' }, next);
    expect(await grpcCall(fresh, 'whoami')).toEqual({ principal: 'bob' });
    expect((await postInitialize(fresh)).status).toBe(200);
    expect(await grpcCall(old, 'whoami').then(() => 'served', (error: grpc.ServiceError) => error.code)).toBe(grpc.status.UNAUTHENTICATED);
    as.rotate([rsa]);
  });

  it('keeps static tokens working beside OAuth', async () => {
    expect(await grpcCall('static-ci-token', 'whoami')).toEqual({ principal: 'ci' });
    expect((await postInitialize('static-ci-token')).status).toBe(200);
  });
});

describe('OAuth options', () => {
  it('takes http issuers and key sets only on loopback, and an absolute audience', () => {
    expect(() => createAuthenticator({ oauth: { issuer: 'http://auth.example.test', audience: AUDIENCE } })).toThrow('options.oauth.issuer must be an https URL (http only on a loopback address)');
    expect(() => createAuthenticator({ oauth: { issuer: 'https://auth.example.test', jwksUri: 'http://10.0.0.5/jwks', audience: AUDIENCE } })).toThrow('options.oauth.jwksUri must be an https URL');
    expect(() => createAuthenticator({ oauth: { issuer: 'https://auth.example.test', audience: 'mcp' } })).toThrow('options.oauth.audience must be an absolute URL');
    expect(() => createAuthenticator({ oauth: { issuer: 'https://auth.example.test', audience: AUDIENCE, scopeLabels: { x: { privilege: 'ROOT' } } } })).toThrow('options.oauth.scopeLabels["x"].privilege must be one of');
    for (const issuer of ['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080', 'https://auth.example.test']) {
      expect(createAuthenticator({ oauth: { issuer, audience: AUDIENCE } })?.protectedResource?.url).toBe('https://tools.example.test/.well-known/oauth-protected-resource/mcp');
    }
  });

  it('answers 503, not 401, while the authorization server cannot be reached, and never serves the token', async () => {
    const auth = createAuthenticator({ oauth: { issuer: 'http://127.0.0.1:9', audience: AUDIENCE, fetchTimeoutMs: 500 } })!;
    const key = await makeKey('k', 'ES256');
    const token = await new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'ES256', kid: 'k' }).setIssuer('http://127.0.0.1:9').setAudience(AUDIENCE).setExpirationTime('5m').sign(key.privateKey);
    expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ ok: false, status: 503, reason: 'unavailable' });
  });
});

describe('one OAuth verifier for MCP HTTP and gRPC', () => {
  it('fetches the issuer\'s metadata and key set once for both servers', async () => {
    const key = await makeKey('shared', 'ES256');
    const as = await startAuthorizationServer({ audience: AUDIENCE, keys: [key] });
    const registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'whoami', description: 'principal', inputSchema: { type: 'object' }, run: (_args, ctx) => ({ principal: ctx.principal ?? null }) }));
    const tokens = [{ principal: 'ci', token: 'static-ci-token' }];
    const oauthVerifier = createOAuthVerifier({ issuer: as.issuer, audience: AUDIENCE }, ['ci', 'bearer']);
    const mcp = await startMcpHttpServer(registry, { oauthVerifier, tokens });
    const server = await startGrpcServer(registry, { port: 0, oauthVerifier, tokens, shutdownTimeoutMs: 200 });
    const client = new toolPackage.sw4rm.tool.ToolService(server.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    try {
      const token = await as.token({ sub: 'carol' });
      const response = await fetch(mcp.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` }, body: INITIALIZE });
      expect(response.status).toBe(200);
      await response.text();
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      const answer = await new Promise<unknown>((resolve, reject) => client.Call({ tool_name: 'whoami', args: Buffer.from('{}') }, metadata, (error, frame) => (error ? reject(error) : resolve(JSON.parse(frame!.data.toString('utf8'))))));
      expect(answer).toEqual({ principal: 'carol' });
      expect({ metadata: as.metadataFetches, jwks: as.jwksFetches }).toEqual({ metadata: 1, jwks: 1 });
      // A server whose static principals the shared verifier does not reserve is refused at start.
      await expect(startMcpHttpServer(registry, { oauthVerifier, tokens: [{ principal: 'dave', token: 'dave-token-0123' }] })).rejects.toThrow(/reserve/);
    } finally {
      client.close();
      await server.close();
      await mcp.close();
      await registry.close();
      await as.close();
    }
  });
});

describe('opaque access tokens by RFC 7662 introspection', () => {
  it('serves an active token as its subject (the answer cached), and refuses inactive, expired, foreign ones; a bad client secret is 503', async () => {
    const key = await makeKey('k', 'ES256');
    const as = await startAuthorizationServer({ audience: AUDIENCE, keys: [key] });
    const introspection = { endpoint: `${as.issuer}/introspect`, ...INTROSPECTION_CLIENT };
    try {
      const auth = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection, scopeLabels: SCOPE_LABELS } })!;
      const token = as.opaque({ sub: 'auth0|erin', scope: 'tools:read' });
      for (let i = 0; i < 3; i += 1) {
        expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ ok: true, caller: { principal: 'auth0%7Cerin', kind: 'oauth', labelCeiling: { privilege: 'DEFAULT' } } });
      }
      expect(as.introspections).toBe(1);
      const refused: Record<string, string> = {
        inactive: as.opaque({ active: false }),
        unknown: 'never-issued',
        expired: as.opaque({ exp: Math.floor(Date.now() / 1000) - 60 }),
        audience: as.opaque({ aud: 'https://other.example.test/mcp' }),
        issuer: as.opaque({ iss: 'https://other-issuer.example.test' }),
        'no exp': as.opaque({ exp: undefined }),
        'static principal': as.opaque({ sub: 'ci' }),
      };
      const strict = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection }, tokens: [{ principal: 'ci', token: 'static-ci-token' }] })!;
      for (const [name, opaque] of Object.entries(refused)) {
        expect({ name, answer: await strict.authenticate(`Bearer ${opaque}`) }).toMatchObject({ name, answer: { ok: false, status: 401, error: 'invalid_token' } });
      }
      // JWTs still go to the key set, not to the endpoint.
      const before = as.introspections;
      expect(await strict.authenticate(`Bearer ${await as.token({ sub: 'frank' })}`)).toMatchObject({ ok: true, caller: { principal: 'frank' } });
      expect(as.introspections).toBe(before);
      const wrongSecret = createAuthenticator({ oauth: { issuer: as.issuer, audience: AUDIENCE, introspection: { ...introspection, clientSecret: 'nope' } } })!;
      expect(await wrongSecret.authenticate(`Bearer ${as.opaque({})}`)).toMatchObject({ ok: false, status: 503 });
    } finally {
      await as.close();
    }
  });
});

describe('the key set is read up to max_jwks_bytes', () => {
  it('refuses to check tokens (503) while the key set is larger than the cap, and checks them once it fits', async () => {
    const keys = await Promise.all([1, 2, 3, 4].map((n) => makeKey(`big-${n}`, 'RS256')));
    const as = await startAuthorizationServer({ audience: AUDIENCE, keys });
    try {
      const auth = createAuthenticator({ oauth: { issuer: as.issuer, jwksUri: `${as.issuer}/jwks`, audience: AUDIENCE, maxJwksBytes: 1024, jwksCooldownMs: 0 } })!;
      const token = await as.token({});
      expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ ok: false, status: 503, reason: 'unavailable' });
      expect(as.jwksFetches).toBe(1);
      as.rotate([keys[0]!]);
      expect(await auth.authenticate(`Bearer ${token}`)).toMatchObject({ ok: true, caller: { principal: 'alice' } });
    } finally {
      await as.close();
    }
  });
});

describe('servers.auth.oauth in toolhost.yaml', () => {
  const load = async (oauth: string[]): Promise<Awaited<ReturnType<typeof loadConfig>>> => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-oauth-'));
    try {
      const file = join(dir, 'toolhost.yaml');
      writeFileSync(file, ['tools: []', 'servers:', '  auth:', '    oauth:', ...oauth.map((line) => `      ${line}`), ''].join('\n'));
      return await loadConfig(file, { env: {} });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('resolves to the servers\' oauth options', async () => {
    const { resolved } = await load(['issuer: https://auth.example.test', `audience: ${AUDIENCE}`, 'tenant_claim: org', 'scope_labels: { "tools:privileged": { privilege: PRIVILEGED } }']);
    expect(resolved.servers.oauth).toEqual({ issuer: 'https://auth.example.test', audience: AUDIENCE, tenantClaim: 'org', scopeLabels: { 'tools:privileged': { privilege: 'PRIVILEGED' } } });
  });

  it('refuses an http issuer off loopback, a missing audience and an unknown label', async () => {
    await expect(load(['issuer: http://auth.example.test', `audience: ${AUDIENCE}`])).rejects.toThrow('servers.auth.oauth.issuer');
    await expect(load(['issuer: https://auth.example.test'])).rejects.toThrow('audience');
    await expect(load(['issuer: https://auth.example.test', `audience: ${AUDIENCE}`, 'scope_labels: { x: { privilege: ROOT } }'])).rejects.toThrow('servers.auth.oauth.scope_labels.x.privilege');
    await expect(load(['issuer: http://127.0.0.1:8080', `audience: ${AUDIENCE}`])).resolves.toBeDefined();
  });
});
