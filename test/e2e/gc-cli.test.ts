/**
 * `toolhost gc` (issue 37): removes the chunks no recipe of the cache or the store names once older than the
 * grace, prints what it removed and kept (a line, or JSON), and refuses a grace that is not a number (exit 2).
 * Before that it removes what pins chunks for nothing: variants an older pipeline made (a loaded cache entry's
 * own variants stay) and, with --old-formats, the cache directories of other cache formats; their chunks then
 * go with the orphans.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChunkStore } from '../../host/base/chunk-store.js';
import { runCli } from '../cli-runner.js';
import { ComponentCache } from '../../host/sandbox/load/component-cache.js';
import { examplesDir } from '../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-gc-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function ageAll(at: string): void {
  const past = new Date(Date.now() - 2 * 3600_000);
  for (const entry of readdirSync(at, { withFileTypes: true })) {
    const path = join(at, entry.name);
    if (entry.isDirectory()) ageAll(path);
    else utimesSync(path, past, past);
  }
}

describe('toolhost gc', () => {
  it('removes the unnamed old chunks of the cache, keeps the named ones and prints the summary', async () => {
    const chunks = new ChunkStore(join(dir, 'chunks-v1'));
    const named = await chunks.put(new Uint8Array(randomBytes(1024 * 1024)));
    const orphan = await chunks.put(new Uint8Array(randomBytes(1024 * 1024)));
    writeFileSync(join(dir, 'kept.core.wasm.chunks'), JSON.stringify(named));
    ageAll(join(dir, 'chunks-v1'));
    const env = { TOOLHOST_CACHE_DIR: dir };
    const json = await runCli(['gc', '--json'], 90_000, { env });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { stores: Array<{ removed: number; kept: number; recipes: number }> };
    expect(report.stores[0]).toMatchObject({ removed: orphan.chunks.length, kept: named.chunks.length, recipes: 1 });
    const hex = orphan.chunks[0]![0];
    expect(existsSync(join(dir, 'chunks-v1', 'sha256', hex.slice(0, 2), hex))).toBe(false);
    expect(await chunks.get(named)).toBeDefined();
    const text = await runCli(['gc'], 90_000, { env });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('removed 0 chunks');
    const bad = await runCli(['gc', '--grace', 'soon'], 90_000, { env });
    expect(bad.code).toBe(2);
  }, 120_000);

  it('removes variants an older pipeline made and, with --old-formats, other cache formats, whose chunks then go', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'toolhost-gc-stale-'));
    try {
      // A real entry with its variants, as a host that served text.wasm leaves them (the CLI: the pipeline's
      // digest is of the code that runs, and gc runs the built code).
      const env = { TOOLHOST_CACHE_DIR: cacheDir };
      const call = (): Promise<{ code: number | null; stdout: string; stderr: string }> => runCli(['call', 'js_echo', '--load', join(examplesDir, 'text.wasm'), '--args', '{"text":"still here"}'], 90_000, { env });
      const served = await call();
      expect(served.code, served.stderr).toBe(0);
      const formatDir = new ComponentCache(cacheDir).formatDir;
      const [entry] = readdirSync(formatDir).filter((name) => existsSync(join(formatDir, name, 'variants')));
      expect(entry, 'the load kept variants').toBeDefined();
      const variants = join(formatDir, entry!, 'variants');
      const [current] = readdirSync(variants);
      // An older pipeline's variant (a recipe naming chunks of its own) and an older cache format's entry.
      const chunks = new ChunkStore(join(cacheDir, 'chunks-v1'));
      const stale = await chunks.put(new Uint8Array(randomBytes(1024 * 1024)));
      mkdirSync(join(variants, '0123456789abcdef', '64-0-whole'), { recursive: true });
      writeFileSync(join(variants, '0123456789abcdef', '64-0-whole', 'core.wasm.chunks'), JSON.stringify(stale));
      const old = await chunks.put(new Uint8Array(randomBytes(1024 * 1024)));
      mkdirSync(join(cacheDir, 'v3-jco-transpile-0.1.0', 'abc'), { recursive: true });
      writeFileSync(join(cacheDir, 'v3-jco-transpile-0.1.0', 'abc', 'core.wasm.chunks'), JSON.stringify(old));
      ageAll(join(cacheDir, 'chunks-v1'));

      const kept = await runCli(['gc', '--json'], 90_000, { env });
      expect(kept.code, kept.stderr).toBe(0);
      const first = JSON.parse(kept.stdout) as { cache: { staleVariantsRemoved: number; oldFormats: string[]; oldFormatsRemoved: boolean } };
      expect(first.cache).toMatchObject({ staleVariantsRemoved: 1, oldFormats: ['v3-jco-transpile-0.1.0'], oldFormatsRemoved: false });
      expect(readdirSync(variants)).toEqual([current]);
      expect(await chunks.get(stale), 'the stale variant\'s chunks went with it').toBeUndefined();
      expect(await chunks.get(old), 'the other format still names its chunks').toBeDefined();

      const swept = await runCli(['gc', '--old-formats'], 90_000, { env });
      expect(swept.code, swept.stderr).toBe(0);
      expect(swept.stdout).toContain('removed 1 cache directory of other cache formats (v3-jco-transpile-0.1.0)');
      expect(existsSync(join(cacheDir, 'v3-jco-transpile-0.1.0'))).toBe(false);
      expect(await chunks.get(old)).toBeUndefined();
      // The current entry and its variant stay, and still load.
      expect(readdirSync(variants)).toEqual([current]);
      const again = await call();
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('still here');
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 180_000);
});
