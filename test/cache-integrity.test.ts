/**
 * The transpile cache cannot hand a guest host code execution (issue 11,
 * "Found" 10): an entry whose files no longer match the hashes recorded when
 * it was written is never imported (it is moved aside and transpiled again),
 * a config whose cache lies inside a granted worktree is refused, and a call
 * whose writable worktree holds the cache is refused. Also: the guest limits
 * are config keys.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registryOptions } from '../host/compose/registry.js';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { fixture, freshCacheDir, hasCGuests, makeRegistry } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-cache-integrity-'));

/** The entries of every format (not the memo of component ids next to them, `ids-v1/`). */
function entryDirs(cacheDir: string): string[] {
  return readdirSync(cacheDir).filter((name) => /^v\d+-/.test(name)).flatMap((format) => readdirSync(join(cacheDir, format)).map((id) => join(cacheDir, format, id)));
}

describe.runIf(hasCGuests)('cache entries are verified before use', () => {
  it('never imports a rewritten component.mjs: the entry is transpiled again', async () => {
    const cacheDir = freshCacheDir();
    const first = makeRegistry({ sandbox: { cacheDir } });
    await first.registerWasmTools(fixture('flood'));
    await first.close();
    const [entry] = entryDirs(cacheDir);
    const marker = join(scratch, 'pwned');
    const glue = join(entry!, 'component.mjs');
    writeFileSync(glue, `import { writeFileSync } from 'node:fs'; writeFileSync(${JSON.stringify(marker)}, 'ran');\n${readFileSync(glue, 'utf8')}`);

    const second = makeRegistry({ sandbox: { cacheDir } });
    try {
      const report = await second.registerWasmTools(fixture('flood'));
      expect(report.components[0]!.cache).toBe('miss');
      expect((await second.execute('honest', {})).structuredContent).toEqual({ ok: true });
      expect(existsSync(marker)).toBe(false);
      expect(readFileSync(glue, 'utf8')).not.toContain('pwned');
      expect(readdirSync(join(entry!, '..')).some((name) => name.includes('.tampered-'))).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('refuses a call whose writable worktree holds the cache', async () => {
    const worktree = mkdtempSync(join(scratch, 'worktree-'));
    const cacheDir = join(worktree, '.toolhost-cache');
    const registry = makeRegistry({ sandbox: { cacheDir } });
    try {
      await registry.registerWasmTools(fixture('flood'), { grant: { privilege: 'ELEVATED', worktree } });
      // Refused at admission (policy/host-owned-paths.ts), before anything runs.
      await expect(registry.execute('honest', {}, { policy: { privilege_level: 'ELEVATED' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned-path', kind: 'cache' } });
      // Read-only, the guest cannot write it: allowed.
      expect((await registry.execute('honest', {}, { policy: { privilege_level: 'DEFAULT' } })).structuredContent).toEqual({ ok: true });
    } finally {
      await registry.close();
    }
  });
});

describe('config', () => {
  function write(lines: string[]): { dir: string; file: string } {
    const dir = mkdtempSync(join(scratch, 'config-'));
    mkdirSync(join(dir, 'work', 'cache'), { recursive: true });
    writeFileSync(join(dir, 'tool.wasm'), '');
    const file = join(dir, 'toolhost.yaml');
    writeFileSync(file, `${lines.join('\n')}\n`);
    return { dir, file };
  }

  it('refuses a cache directory inside a granted worktree, at the cache_dir line', async () => {
    const { file } = write(['host:', '  pool:', '    cache_dir: work/cache', 'tools:', '  - path: tool.wasm', '    grant:', '      privilege: elevated', '      worktree: work']);
    const error = await loadConfig(file).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/toolhost\.yaml:3:\d+: .*worktree .* holds the transpile cache/);
  });

  it('accepts the same worktree with the cache elsewhere', async () => {
    const { file } = write(['host:', '  pool:', `    cache_dir: ${join(scratch, 'elsewhere')}`, 'tools:', '  - path: tool.wasm', '    grant:', '      worktree: work']);
    await expect(loadConfig(file)).resolves.toBeDefined();
  });

  it('resolves host.guest_limits into the registry and sandbox options', async () => {
    const { file } = write([
      'host:',
      '  guest_limits:',
      '    state_value_bytes: 100',
      '    state_keys_per_conversation: 5',
      '    state_bytes_per_conversation: 1000',
      '    host_calls_per_call: 50',
      '    table_elements: 2000',
      '    describe_ms: 1500',
    ]);
    const { resolved } = await loadConfig(file, { env: {} });
    const options = registryOptions(resolved);
    expect(options.stateLimits).toEqual({ maxValueBytes: 100, maxKeysPerConversation: 5, maxBytesPerConversation: 1000 });
    expect(options.sandbox).toMatchObject({ tableElements: 2000, describeTimeoutMs: 1500, outputLimits: { maxHostCalls: 50 } });
  });

  it('refuses a guest limit above its ceiling', async () => {
    const { file } = write(['host:', '  guest_limits:', '    table_elements: 2000000']);
    await expect(loadConfig(file)).rejects.toBeInstanceOf(ConfigError);
  });
});
