/**
 * Admin tools need an authenticated principal on a network server and load
 * only from configured places (issue 35, T13): with `admin_tools: true` and no
 * tokens, any caller of the MCP HTTP or gRPC server loaded a component from
 * any path of the host. Now such a config is refused at load (at the
 * `admin_tools` line), a call without a principal is PERMISSION_DENIED, and
 * `toolhost_load` loads local files only inside `admin.load_dirs` (real paths:
 * no `..`, no symlink out). Controls: an authenticated admin loads a component
 * from an allowed directory over MCP HTTP; a config with tokens, or with the
 * network servers off (stdio and CLI only), loads.
 */
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHost, type Host } from '../host/compose/host.js';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { silentLogger } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { registerAdminTools } from '../host/tools/admin-tools.js';
import { example, hasCGuests, makeRegistry, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-admin-'));
const TOKEN = 'admin-token-0123456789abcdef';

/** A toolhost.yaml in a fresh directory with `lines`; returns its path. */
function config(lines: string[]): string {
  const dir = mkdtempSync(join(scratch, 'config-'));
  const file = join(dir, 'toolhost.yaml');
  writeFileSync(file, ['host:', '  pool:', `    cache_dir: ${sharedCacheDir}`, '    threads: 1', '    containment: thread', ...lines, ''].join('\n'));
  return file;
}

async function configError(file: string): Promise<ConfigError> {
  const error = await loadConfig(file, { env: {} }).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('admin_tools beside a network server without authentication is refused at config load', () => {
  it('the default servers (MCP HTTP and gRPC on loopback), no tokens: an error at the admin_tools line naming both', async () => {
    const error = await configError(config(['admin_tools: true']));
    expect(error.message).toMatch(/toolhost\.yaml:6:\d+: admin_tools needs authenticated callers on a network server, and MCP over HTTP \(127\.0\.0\.1:3000\) and gRPC \(127\.0\.0\.1:50063\) would serve toolhost_load/);
  });

  it('gRPC alone, without a token', async () => {
    const error = await configError(config(['servers:', '  mcp:', '    http:', '      enabled: false', 'admin_tools: true']));
    expect(error.message).toMatch(/admin_tools needs authenticated callers .* gRPC \(127\.0\.0\.1:50063\)/);
    expect(error.message).not.toMatch(/MCP over HTTP/);
  });

  it('control: named tokens, OAuth, or no network server at all (stdio and CLI only) load', async () => {
    const tokens = config(['servers:', '  auth:', '    tokens:', '      - { principal: ops, token_env: ADMIN_TOKEN }', 'admin_tools: true']);
    await expect(loadConfig(tokens, { env: {} })).resolves.toBeDefined();
    const local = config(['servers:', '  mcp:', '    http:', '      enabled: false', '  grpc:', '    enabled: false', 'admin_tools: true']);
    await expect(loadConfig(local, { env: {} })).resolves.toBeDefined();
  });

  it('admin.load_dirs must name directories', async () => {
    const file = config(['servers:', '  mcp: { http: { enabled: false } }', '  grpc: { enabled: false }', 'admin_tools: true', 'admin:', '  load_dirs: [nowhere]']);
    expect((await configError(file)).message).toMatch(/toolhost\.yaml:11:\d+: admin\.load_dirs\[0\] is not a directory/);
  });
});

describe.runIf(hasCGuests)('toolhost_load loads local files only from admin.load_dirs', () => {
  const allowed = mkdtempSync(join(scratch, 'allowed-'));
  const outside = mkdtempSync(join(scratch, 'outside-'));
  const registry = makeRegistry();
  registerAdminTools(registry, { callers: 'any', loadDirs: [allowed] });

  beforeAll(() => {
    copyFileSync(example('ctools'), join(outside, 'ctools.wasm'));
    symlinkSync(join(outside, 'ctools.wasm'), join(allowed, 'linked.wasm'));
    mkdirSync(join(allowed, 'sub'));
    symlinkSync(outside, join(allowed, 'sub', 'out'));
  });
  afterAll(async () => {
    await registry.close();
  });

  const refused = async (path: string): Promise<void> => {
    await expect(registry.execute('toolhost_load', { path })).resolves.toMatchObject({ isError: true, error: { code: 'PERMISSION_DENIED', details: { reason: 'admin-load-dir' } } });
  };

  it('refuses a path outside every load directory (/etc/passwd, the file beside it)', async () => {
    await refused('/etc/passwd');
    await refused(join(outside, 'ctools.wasm'));
  });

  it('refuses .. and symlinks that lead out of a load directory', async () => {
    await refused(join(allowed, '..', outside.split('/').pop()!, 'ctools.wasm'));
    await refused(join(allowed, 'linked.wasm'));
    await refused(join(allowed, 'sub', 'out', 'ctools.wasm'));
    // A directory whose .wasm files include a link out.
    await refused(allowed);
    expect(registry.resolveName('sha256')).toBeUndefined();
  });

  it('refuses every local file when no load directory is configured', async () => {
    const bare = makeRegistry();
    registerAdminTools(bare, { callers: 'any' });
    try {
      await expect(bare.execute('toolhost_load', { path: example('ctools') })).resolves.toMatchObject({ isError: true, error: { code: 'PERMISSION_DENIED', message: expect.stringMatching(/admin\.load_dirs is not set/) } });
    } finally {
      await bare.close();
    }
  });
});

describe.runIf(hasCGuests)('a host with a network server: only an authenticated admin loads', () => {
  let host: Host;
  let server: McpHttpServer;
  const components = mkdtempSync(join(scratch, 'components-'));

  beforeAll(async () => {
    copyFileSync(example('ctools'), join(components, 'ctools.wasm'));
    const file = config(['servers:', '  auth:', '    tokens:', '      - { principal: ops, token_env: ADMIN_TOKEN }', 'admin_tools: true', 'admin:', `  load_dirs: [${components}]`, 'tools: []']);
    ({ host } = await openHost({ configPath: file, overrides: { logger: silentLogger } }));
    server = await startMcpHttpServer(host.registry, { tokens: [{ principal: 'ops', token: TOKEN }] });
  });
  afterAll(async () => {
    await server?.close();
    await host?.close();
  });

  it('refuses a call without a principal (PERMISSION_DENIED), load and unload alike', async () => {
    await expect(host.registry.execute('toolhost_load', { path: join(components, 'ctools.wasm') }, { callId: 'anon-load' })).resolves.toMatchObject({
      isError: true,
      error: { code: 'PERMISSION_DENIED', callId: 'anon-load', details: { reason: 'admin-unauthenticated' } },
    });
    await expect(host.registry.execute('toolhost_unload', { component: 'ctools' })).resolves.toMatchObject({ isError: true, error: { code: 'PERMISSION_DENIED' } });
    expect(host.registry.resolveName('sha256')).toBeUndefined();
  });

  it('control: an authenticated admin loads a component from an allowed directory over MCP HTTP, and calls it', async () => {
    const client = new Client({ name: 'admin', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    try {
      const loaded = (await client.callTool({ name: 'toolhost_load', arguments: { path: join(components, 'ctools.wasm') } })) as CallToolResult;
      expect(loaded.isError, JSON.stringify(loaded.content)).toBeFalsy();
      const digest = (await client.callTool({ name: 'sha256', arguments: { text: 'abc' } })) as CallToolResult;
      expect(JSON.stringify(digest.content)).toContain('ba7816bf');
      // The same admin is still refused a path outside the load directories.
      const outside = (await client.callTool({ name: 'toolhost_load', arguments: { path: '/etc/passwd' } })) as CallToolResult;
      expect(outside.isError).toBe(true);
      expect(JSON.stringify(outside.content)).toContain('admin.load_dirs');
    } finally {
      await client.close();
    }
  });
});

describe.runIf(hasCGuests)("an embedder's registry served over MCP HTTP without tokens", () => {
  it('answers an unauthenticated toolhost_load with PERMISSION_DENIED (admin tools default to authenticated callers)', async () => {
    const components = mkdtempSync(join(scratch, 'embedder-'));
    copyFileSync(example('ctools'), join(components, 'ctools.wasm'));
    const registry = makeRegistry();
    registerAdminTools(registry, { loadDirs: [components] });
    const server = await startMcpHttpServer(registry, {});
    const client = new Client({ name: 'anyone', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      const loaded = (await client.callTool({ name: 'toolhost_load', arguments: { path: join(components, 'ctools.wasm') } })) as CallToolResult;
      expect(loaded.isError).toBe(true);
      expect(JSON.stringify(loaded.content)).toContain('PERMISSION_DENIED');
      expect(registry.resolveName('sha256')).toBeUndefined();
    } finally {
      await client.close();
      await server.close();
      await registry.close();
    }
  });
});
