/**
 * A host opened for one call (`toolhost call NAME`, compose/tool-scope.ts)
 * loads only the component carrying NAME when the transpile cache can tell,
 * and everything when it cannot or when that could change the answer: an
 * unknown or dotted name, a tool name used twice, a component the cache has
 * not described.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../host/compose/host.js';
import { scopeToTool } from '../host/compose/tool-scope.js';
import { embeddedConfig } from '../host/config/defaults.js';
import type { HttpToolSpec, ResolvedConfig } from '../host/config/resolve.js';
import { silentLogger } from '../host/base/logger.js';
import { ComponentIds } from '../host/sandbox/load/component-ids.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { example, examplesDir, hasCGuests, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-tool-scope-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The embedded defaults (the example tools) on the tests' cache, with `change` applied. */
function config(change: Partial<ResolvedConfig> = {}): ResolvedConfig {
  const { resolved } = embeddedConfig({ examplesDir });
  return { ...resolved, sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 1 }, ...change };
}

function httpTool(name: string): HttpToolSpec {
  return { name, description: 'an HTTP tool', url: 'http://127.0.0.1:9/stream', headers: {}, inputSchema: { type: 'object' }, grant: {} };
}

describe.runIf(hasCGuests)('what a one-call host loads', () => {
  beforeAll(async () => {
    // The global setup described every example in the cache; remember their ids as a settled file's would be.
    const ids = new ComponentIds(sharedCacheDir, () => Date.now() + 10_000);
    for (const name of ['ctools', 'files', 'json', 'net', 'text']) await ids.read(example(name));
  });

  it('only the component that carries the tool, with its config entry', async () => {
    const scope = await scopeToTool('sha256', config(), []);
    expect(scope).toBeDefined();
    expect(scope!.tools.map((load) => load.files)).toEqual([[example('ctools')]]);
    expect(scope!.tools[0]!.path).toBe(example('ctools'));
    expect(scope!.load).toEqual([]);
    expect(scope!.httpTools).toEqual([]);
    // A --load file the same way (the embedded defaults are replaced by --load, so the config names none).
    expect(await scopeToTool('sha256', config({ tools: [] }), [examplesDir])).toMatchObject({ tools: [], load: [example('ctools')] });
  });

  it('only the HTTP tool named, when no component carries the name', async () => {
    const scope = await scopeToTool('stream_it', config({ httpTools: [httpTool('stream_it'), httpTool('other')] }), []);
    expect(scope).toEqual({ tools: [], load: [], httpTools: [expect.objectContaining({ name: 'stream_it' })] });
  });

  it('everything for an unknown name, a dotted name, or a tool name used twice', async () => {
    expect(await scopeToTool('no_such_tool', config(), [])).toBeUndefined();
    expect(await scopeToTool('remote.divide', config(), [])).toBeUndefined();
    expect(await scopeToTool('ctools.sha256', config(), [])).toBeUndefined();
    // ctools twice (the directory and the file): its second copy's tools would be renamed.
    expect(await scopeToTool('sha256', config(), [example('ctools')])).toBeUndefined();
    // An HTTP tool named like a component's tool, or like an admin tool when those are on: registering them collides.
    expect(await scopeToTool('sha256', config({ httpTools: [httpTool('echo')] }), [])).toBeUndefined();
    expect(await scopeToTool('sha256', config({ httpTools: [httpTool('toolhost_load')], adminTools: true }), [])).toBeUndefined();
  });

  it('everything when the cache has not described a component (or cannot tell its id)', async () => {
    const copy = join(mkdtempSync(join(scratch, 'copy-')), 'ctools.wasm');
    copyFileSync(example('ctools'), copy);
    // A new file: its id is not remembered (it is too young to be), so the cache cannot tell what it carries.
    expect(await scopeToTool('sha256', config({ tools: [] }), [copy])).toBeUndefined();
    expect(await scopeToTool('sha256', config({ tools: [] }), [join(scratch, 'missing.wasm')])).toBeUndefined();
  });

  it('a scoped host answers the call as the full one does, with only the carrier\'s tools registered', async () => {
    const options = { overrides: { logger: silentLogger, audit: new MemoryAuditLog() } };
    const scoped = await createHost(config(), { ...options, forTool: 'sha256' });
    const full = await createHost(config(), options);
    try {
      expect(scoped.registry.names()).toEqual(['echo', 'sha256']);
      expect(full.registry.names()).toEqual(expect.arrayContaining([...scoped.registry.names(), 'list_dir', 'json_query', 'word_count']));
      const [fromScoped, fromFull] = await Promise.all([scoped.registry.execute('sha256', { text: 'abc' }), full.registry.execute('sha256', { text: 'abc' })]);
      expect(fromScoped.structuredContent).toEqual(fromFull.structuredContent);
      expect(scoped.registry.get('sha256')?.grant).toEqual(full.registry.get('sha256')?.grant);
    } finally {
      await Promise.all([scoped.close(), full.close()]);
    }
  });
});
