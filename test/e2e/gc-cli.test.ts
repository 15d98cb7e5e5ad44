/**
 * `toolhost gc` (issue 37): removes the chunks no recipe of the cache or the store names once older than the
 * grace, prints what it removed and kept (a line, or JSON), and refuses a grace that is not a number (exit 2).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChunkStore } from '../../host/base/chunk-store.js';
import { runCli } from '../cli-runner.js';

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
});
