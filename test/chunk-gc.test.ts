/**
 * Garbage collection of the chunk store (issue 37; base/chunk-gc.ts, `ChunkStore.collect`, `toolhost gc`): the
 * chunks no recipe of the store or the transpile cache names are removed, only those, and never one younger than
 * the grace, so a writer between its chunks and its recipe keeps them. Two componentize-js tools share the engine's
 * chunks: removing one frees only its own, and the survivor still loads, verifies and runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { copyFile, cp, mkdir, readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChunkStore, parseRecipe } from '../host/base/chunk-store.js';
import { collectChunks } from '../host/base/chunk-gc.js';
import { ComponentStore } from '../host/distribution/store.js';
import { ComponentCache } from '../host/sandbox/load/component-cache.js';
import { CHUNKS_DIR } from '../host/sandbox/load/cache-location.js';
import { sourceFromFile } from '../host/sandbox/load/component-file.js';
import { example, freshCacheDir, makeRegistry, sharedCacheDir } from './helpers.js';

const hasJs = existsSync(example('text')) && existsSync(example('json'));
const digestOf = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Every chunk file of a chunk store, by hash. */
function chunkFiles(root: string): Set<string> {
  const found = new Set<string>();
  const top = join(root, 'sha256');
  if (!existsSync(top)) return found;
  for (const prefix of readdirSync(top)) for (const name of readdirSync(join(top, prefix))) if (/^[0-9a-f]{64}$/.test(name)) found.add(name);
  return found;
}

/** The chunks named by every `*.chunks` recipe under `dir`. */
function named(dir: string): Set<string> {
  const found = new Set<string>();
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.chunks')) for (const [hex] of parseRecipe(readFileSync(path, 'utf8'))!.chunks) found.add(hex);
    }
  };
  walk(dir);
  return found;
}

/** Age every file under `dir` by an hour (what the grace looks at). */
function age(dir: string): void {
  const past = new Date(Date.now() - 2 * 3600_000);
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else utimesSync(path, past, past);
    }
  };
  walk(dir);
}

/** The shared cache's entry of `file` (transpiled there if it is not), copied into the cache at `dir` with the chunks it names. */
async function copiedEntry(file: string, dir: string): Promise<string> {
  const shared = new ComponentCache(sharedCacheDir);
  const source = await sourceFromFile(file, shared.ids);
  const entry = await shared.prepare(source.id, source.bytes, file);
  const to = join(dir, relative(sharedCacheDir, entry.dir));
  await cp(entry.dir, to, { recursive: true });
  for (const hex of named(entry.dir)) {
    const at = join(CHUNKS_DIR, 'sha256', hex.slice(0, 2), hex);
    await mkdir(join(dir, at, '..'), { recursive: true });
    await copyFile(join(sharedCacheDir, at), join(dir, at));
  }
  return to;
}

describe.runIf(hasJs)('collecting the chunks two componentize-js tools share', () => {
  it('frees only the removed tool\'s own chunks; the survivor loads, verifies its hash and runs', async () => {
    const dir = freshCacheDir();
    dirs.push(dir);
    const chunks = new ChunkStore(join(dir, CHUNKS_DIR));
    const store = new ComponentStore(join(dir, 'store-v1'), chunks);
    const kept = new Uint8Array(await readFile(example('text')));
    const gone = new Uint8Array(await readFile(example('json')));
    // Pulled (into the store) and transpiled (into the cache), as a host does. The transpiles are the shared
    // cache's (a componentize-js transpile takes minutes on a loaded machine), copied with their chunks.
    await store.put(digestOf(kept), kept);
    await store.put(digestOf(gone), gone);
    const goneEntry = { dir: await copiedEntry(example('json'), dir) };
    await copiedEntry(example('text'), dir);
    const before = chunkFiles(chunks.root);
    const keptNames = named(join(dir, 'store-v1'));
    // What only the removed tool names: its store recipe's and its cache entry's chunks, less the survivor's.
    const goneNames = new Set([...named(goneEntry.dir), ...parseRecipe(await readFile(join(dir, 'store-v1', 'blobs', 'sha256', `${digestOf(gone).slice(7)}.chunks`), 'utf8'))!.chunks.map(([hex]) => hex)]);
    await store.remove(digestOf(gone));
    await rm(goneEntry.dir, { recursive: true, force: true });
    const survivorNames = named(dir);
    const unique = [...goneNames].filter((hex) => !survivorNames.has(hex));
    const shared = [...goneNames].filter((hex) => survivorNames.has(hex));
    expect(unique.length).toBeGreaterThan(0);
    // The engine: most of what the removed tool named is the survivor's too.
    expect(shared.length).toBeGreaterThan(unique.length);
    expect(keptNames.size).toBeGreaterThan(0);

    const uniqueBytes = unique.reduce((sum, hex) => sum + statSync(join(chunks.root, 'sha256', hex.slice(0, 2), hex)).size, 0);
    // Within the grace nothing goes (a writer may be about to name them).
    const young = await collectChunks(chunks, [dir]);
    expect(young.removed).toBe(0);
    expect(young.young).toBe(unique.length);
    expect(chunkFiles(chunks.root)).toEqual(before);

    age(chunks.root);
    const summary = await collectChunks(chunks, [dir]);
    expect(summary.removed).toBe(unique.length);
    expect(summary.removedBytes).toBe(uniqueBytes);
    expect(summary.unreadable).toBe(0);
    const after = chunkFiles(chunks.root);
    expect([...before].filter((hex) => !after.has(hex)).sort()).toEqual([...unique].sort());
    for (const hex of survivorNames) expect(after.has(hex)).toBe(true);

    // The survivor: its blob reads back with its digest, its cache entry verifies, and it runs.
    // (Compared by digest: a deep equality of 12 MB takes minutes.)
    const back = await store.get(digestOf(kept));
    expect(back && digestOf(back)).toBe(digestOf(kept));
    expect(await store.get(digestOf(gone))).toBeUndefined();
    const registry = makeRegistry({ sandbox: { cacheDir: dir } });
    try {
      const report = await registry.registerWasmTools(example('text'));
      // Read from the cache (its chunked core module hashed chunk by chunk), not transpiled again.
      expect(report.components[0]?.cache).toBe('hit');
      const result = await registry.execute('js_echo', { text: 'after gc' });
      expect(result.isError).toBe(false);
      expect(JSON.stringify(result.structuredContent ?? result.content)).toContain('after gc');
    } finally {
      await registry.close();
    }
    // A second collection finds nothing more.
    expect((await collectChunks(chunks, [dir])).removed).toBe(0);
  }, 300_000);
});

describe('a writer beside the collection', () => {
  it('makes an old chunk it reuses young again, so a collection before its recipe is written keeps it', async () => {
    const dir = freshCacheDir();
    dirs.push(dir);
    const chunks = new ChunkStore(join(dir, CHUNKS_DIR));
    const bytes = new Uint8Array(randomBytes(3 * 1024 * 1024));
    const first = await chunks.put(bytes);
    age(chunks.root);
    // The same bytes again (another tool carrying them), its recipe not written yet: nothing names the chunks.
    const again = await chunks.put(bytes);
    expect(again.chunks).toEqual(first.chunks);
    const summary = await collectChunks(chunks, [dir], 60_000);
    expect(summary.removed).toBe(0);
    expect(summary.young).toBe(first.chunks.length);
    expect(Buffer.compare((await chunks.get(again))!, bytes)).toBe(0);
  });

  it('removes what no recipe names once old, keeps what one names, and clears old temporary files', async () => {
    const dir = freshCacheDir();
    dirs.push(dir);
    const chunks = new ChunkStore(join(dir, CHUNKS_DIR));
    const named = await chunks.put(new Uint8Array(randomBytes(2 * 1024 * 1024)));
    const orphan = await chunks.put(new Uint8Array(randomBytes(2 * 1024 * 1024)));
    writeFileSync(join(dir, 'entry.core.wasm.chunks'), JSON.stringify(named));
    const leftover = join(chunks.root, 'sha256', named.chunks[0]![0].slice(0, 2), '.tmp-deadbeef0000');
    writeFileSync(leftover, 'half a chunk');
    age(chunks.root);
    const summary = await collectChunks(chunks, [dir], 60_000);
    expect(summary.recipes).toBe(1);
    expect(summary.removed).toBe(new Set(orphan.chunks.map(([hex]) => hex)).size + 1);
    expect(existsSync(leftover)).toBe(false);
    expect(await chunks.get(named)).toBeDefined();
    expect(await chunks.get(orphan)).toBeUndefined();
  });
});
