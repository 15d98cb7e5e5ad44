/**
 * `tools/list` annotations come from the grant (host/policy/annotations.ts),
 * seen by the official SDK client: every example tool of toolhost.example.yaml
 * with what its grant allows, and a 0.2.0 tool that declares `readOnlyHint:
 * true` listed `false` once its grant holds a writable worktree or a network.
 * The derivation's rules (author caution kept, native and imported tools) are
 * checked on the function itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { createRegistry, silentLogger, type ToolGrant, type ToolRegistry } from '../host/index.js';
import { registryOptions } from '../host/compose/registry.js';
import { loadConfig } from '../host/config/index.js';
import { deriveAnnotations, type AnnotatedTool } from '../host/policy/annotations.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { createMcpServer } from '../host/servers/mcp-server.js';
import { startMcpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests, makeRegistry, root, sharedCacheDir } from './helpers.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

/** The tools an SDK client lists from `registry`, by name (in-memory transport pair). */
async function listedInMemory(registry: ToolRegistry): Promise<Map<string, McpTool>> {
  const server = createMcpServer(registry);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'annotations-test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(() => client.close());
  const { tools } = await client.listTools();
  return new Map(tools.map((tool) => [tool.name, tool]));
}

/** The same over Streamable HTTP. */
async function listedOverHttp(registry: ToolRegistry): Promise<Map<string, McpTool>> {
  const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  closers.push(() => server.close());
  const client = new Client({ name: 'annotations-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  closers.push(() => client.close());
  const { tools } = await client.listTools();
  return new Map(tools.map((tool) => [tool.name, tool]));
}

const SAFE = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };

describe.skipIf(!hasCGuests)('annotations derived from the grant, over MCP', () => {
  it('every example tool of toolhost.example.yaml is listed with what its grant allows', async () => {
    const { resolved } = await loadConfig(join(root, 'toolhost.example.yaml'), { env: {} });
    const registry = createRegistry(registryOptions(resolved, {
      logger: silentLogger,
      audit: new MemoryAuditLog(),
      sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 1 },
    }));
    closers.push(() => registry.close());
    for (const load of resolved.tools) await registry.registerWasmTools(load.path, load.options);
    const tools = await listedInMemory(registry);
    expect(tools.size).toBeGreaterThanOrEqual(10);
    for (const [name, tool] of tools) {
      // All four hints, always: a client's defaults (readOnly false, destructive true, openWorld true) never stand in for the host's.
      expect(Object.keys(tool.annotations ?? {}).sort(), name).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
      expect(tool.annotations?.idempotentHint, name).toBe(registry.get(name)!.idempotent);
    }
    // DENY_ALL, MINIMAL and no state (json, ctools), and DEFAULT's read-only worktree (files): nothing outside can change.
    for (const name of ['json_query', 'json_pointer', 'echo', 'sha256', 'read_file', 'list_dir']) {
      expect(tools.get(name)?.annotations, name).toMatchObject(SAFE);
    }
    // text's grant leaves conversation state writable (word_count keeps a total there): not read-only.
    for (const name of ['word_count', 'regex_search']) {
      expect(tools.get(name)?.annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: false });
    }
    // json.wasm is a 0.2.0 component (guest-tools/js-sdk/mcp.js): its author's title and icon are listed too.
    expect(tools.get('json_query')).toMatchObject({ title: 'JSON query', icons: [{ mimeType: 'image/svg+xml', sizes: ['any'] }] });
    // net.wasm's grant allows EGRESS_UNRESTRICTED, even though its default policy is deny_all: a call may ask for it.
    expect(tools.get('http_get')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
  });

  it('a tool that declares readOnlyHint: true but holds a writable worktree is listed readOnlyHint: false', async () => {
    const worktree = mkdtempSync(join(tmpdir(), 'toolhost-annotations-'));
    closers.push(async () => rmSync(worktree, { recursive: true, force: true }));
    const listed = async (grant: ToolGrant): Promise<Map<string, McpTool>> => {
      const registry = makeRegistry();
      closers.push(() => registry.close());
      await registry.registerWasmTools(fixture('mcp_rich'), { grant });
      return listedOverHttp(registry);
    };
    // The author's words (rich: readOnly, not destructive, idempotent, closed world; ask_model: readOnly).
    const confined = await listed({ state: { access: 'read' } });
    expect(confined.get('rich')?.annotations).toEqual({ ...SAFE, idempotentHint: true });
    expect(confined.get('ask_model')?.annotations).toEqual({ ...SAFE, idempotentHint: false });

    const writable = await listed({ privilege: 'ELEVATED', worktree, state: { access: 'read' } });
    expect(writable.get('rich')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    expect(writable.get('ask_model')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });

    // A read-only worktree (DEFAULT) keeps the claim; any network ends it and opens the world.
    expect((await listed({ privilege: 'DEFAULT', worktree, state: { access: 'read' } })).get('rich')?.annotations).toMatchObject(SAFE);
    // Conversation state it may write (the default) ends the claim too.
    expect((await listed({})).get('rich')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    const networked = await listed({ network: 'EGRESS_RESTRICTED', egressAllow: ['example.com'], state: { access: 'read' } });
    expect(networked.get('rich')?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true });
  });
});

describe('deriveAnnotations', () => {
  const sandboxed = (grant: ToolGrant, annotations?: AnnotatedTool['annotations'], idempotent = false): AnnotatedTool => ({
    executionMode: 'sandboxed',
    idempotent,
    grant,
    ...(annotations === undefined ? {} : { annotations }),
  });

  it('claims read-only and closed-world exactly when the grant has no writable worktree, no network and no state writes', () => {
    const none = { access: 'none' } as const;
    const cases: Array<[ToolGrant, { readOnlyHint: boolean; openWorldHint: boolean }]> = [
      [{}, { readOnlyHint: false, openWorldHint: false }],
      [{ state: none }, { readOnlyHint: true, openWorldHint: false }],
      [{ state: { access: 'read' } }, { readOnlyHint: true, openWorldHint: false }],
      [{ privilege: 'DEFAULT', state: none }, { readOnlyHint: true, openWorldHint: false }],
      [{ privilege: 'ELEVATED', state: none }, { readOnlyHint: false, openWorldHint: false }],
      [{ privilege: 'PRIVILEGED', state: none }, { readOnlyHint: false, openWorldHint: false }],
      [{ network: 'EGRESS_RESTRICTED', state: none }, { readOnlyHint: false, openWorldHint: true }],
      [{ network: 'FULL_ACCESS', privilege: 'DEFAULT', state: none }, { readOnlyHint: false, openWorldHint: true }],
    ];
    for (const [grant, expected] of cases) {
      const hints = deriveAnnotations(sandboxed(grant));
      expect(hints, JSON.stringify(grant)).toEqual({ ...expected, destructiveHint: !expected.readOnlyHint, idempotentHint: false });
    }
  });

  it('keeps an author\'s more cautious hints, and never its safer ones the grant does not guarantee', () => {
    const none = { state: { access: 'none' } } as const;
    expect(deriveAnnotations(sandboxed(none, { readOnlyHint: false }, true))).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    expect(deriveAnnotations(sandboxed(none, { destructiveHint: true }))).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(deriveAnnotations(sandboxed(none, { openWorldHint: true }))).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect(deriveAnnotations(sandboxed({}, { idempotentHint: false }, true))).toMatchObject({ idempotentHint: false });
    // Safe words on a tool that can write or reach out: not listed.
    expect(deriveAnnotations(sandboxed({ privilege: 'ELEVATED', network: 'EGRESS_UNRESTRICTED' }, { readOnlyHint: true, destructiveHint: false, openWorldHint: false }))).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    // idempotentHint is the tool's idempotent (what retries act on), never the author's hint alone.
    expect(deriveAnnotations(sandboxed({}, { idempotentHint: true }, false))).toMatchObject({ idempotentHint: false });
  });

  it('takes a native tool\'s own readOnly as the fact, and the network from its grant', () => {
    expect(deriveAnnotations({ executionMode: 'native', idempotent: true, readOnly: true })).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(deriveAnnotations({ executionMode: 'native', idempotent: false })).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
    expect(deriveAnnotations({ executionMode: 'native', idempotent: false, readOnly: true, grant: { network: 'EGRESS_RESTRICTED' } })).toMatchObject({ readOnlyHint: true, openWorldHint: true });
  });

  it('keeps an imported MCP tool\'s annotations as its server gives them', () => {
    const remote = { readOnlyHint: true, destructiveHint: false, openWorldHint: false, idempotentHint: true };
    expect(deriveAnnotations({ executionMode: 'native', idempotent: true, source: 'mcp:remote', annotations: remote, grant: { privilege: 'ELEVATED' } })).toEqual(remote);
  });
});
