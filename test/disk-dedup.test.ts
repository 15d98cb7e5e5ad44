/**
 * Dedup on disk (issue 37, D5): the component store and the transpile cache
 * keep large files as content-addressed chunks (base/chunk-store.ts) in one
 * chunk store, so the engine every componentize-js tool carries is on disk
 * once; what is read back is the original bytes, and a chunk that was written
 * to is never used.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChunkStore, MAX_CHUNK } from '../host/base/chunk-store.js';
import { diskBytes, distinctBytes } from '../host/bench/disk-usage.js';
import { ComponentStore } from '../host/distribution/store.js';
import { CHUNKS_DIR } from '../host/sandbox/load/cache-location.js';
import { ComponentCache } from '../host/sandbox/load/component-cache.js';
import { example, freshCacheDir, makeRegistry } from './helpers.js';

const hasJs = existsSync(example('text')) && existsSync(example('json'));
const digestOf = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Every chunk file under a chunk store's root. */
function chunkFiles(root: string): string[] {
  const dir = join(root, 'sha256');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((prefix) => readdirSync(join(dir, prefix)).filter((name) => !name.startsWith('.')).map((name) => join(dir, prefix, name)));
}

describe('content-addressed chunks', () => {
  it('cuts a run of bytes the same way wherever it sits, so two files that share it keep it once', async () => {
    const chunks = new ChunkStore(await mkdtemp(join(tmpdir(), 'toolhost-chunks-')));
    const shared = randomBytes(3 * 1024 * 1024);
    const a = Buffer.concat([randomBytes(100_000), shared]);
    const b = Buffer.concat([randomBytes(37_777), shared, randomBytes(200_000)]);
    const ra = await chunks.put(a);
    const rb = await chunks.put(b);
    const stored = chunkFiles(chunks.root).reduce((sum, file) => sum + statSync(file).size, 0);
    // Each file's own bytes, the shared run once, and at most a chunk or two around each edge again.
    expect(stored).toBeLessThan(shared.length + 100_000 + 37_777 + 200_000 + 4 * MAX_CHUNK);
    expect(Buffer.compare((await chunks.get(ra))!, a)).toBe(0);
    expect(Buffer.compare((await chunks.get(rb))!, b)).toBe(0);
  });

  it('never answers with a chunk that was written to, and writes it again when the bytes are kept anew', async () => {
    const chunks = new ChunkStore(await mkdtemp(join(tmpdir(), 'toolhost-chunks-')));
    const bytes = randomBytes(2 * 1024 * 1024);
    const recipe = await chunks.put(bytes);
    const victim = chunkFiles(chunks.root)[0]!;
    const tampered = readFileSync(victim);
    tampered[0] = tampered[0]! ^ 0xff;
    writeFileSync(victim, tampered);
    expect(await chunks.get(recipe)).toBeUndefined();
    await chunks.put(bytes);
    expect(Buffer.compare((await chunks.get(recipe))!, bytes)).toBe(0);
  });

  it('never answers with a chunk cut short, grown, or missing, nor a recipe whose lengths do not add up', async () => {
    const chunks = new ChunkStore(await mkdtemp(join(tmpdir(), 'toolhost-chunks-')));
    const bytes = randomBytes(2 * 1024 * 1024);
    const recipe = await chunks.put(bytes);
    const [first, second] = chunkFiles(chunks.root);
    const original = readFileSync(first!);
    writeFileSync(first!, original.subarray(0, original.length - 1));
    expect(await chunks.get(recipe)).toBeUndefined();
    // Grown: the bytes read are the chunk's length, and those still hash right; what follows is never read.
    writeFileSync(first!, Buffer.concat([original, Buffer.from('trailing')]));
    expect(Buffer.compare((await chunks.get(recipe))!, bytes)).toBe(0);
    writeFileSync(first!, original);
    rmSync(second!);
    expect(await chunks.get(recipe)).toBeUndefined();
    await chunks.put(bytes);
    expect(await chunks.get({ ...recipe, size: recipe.size - 1 })).toBeUndefined();
    expect(await chunks.get({ ...recipe, size: recipe.size + 1 })).toBeUndefined();
  });
});

describe.runIf(hasJs)('the store and the transpile cache share chunks', () => {
  it('keeps two distinct componentize-js tools, pulled and transpiled, within 2x their distinct bytes', async () => {
    const cacheDir = freshCacheDir();
    const cache = new ComponentCache(cacheDir);
    const store = new ComponentStore(join(cacheDir, 'store-v1'), new ChunkStore(join(cacheDir, CHUNKS_DIR)));
    const files = [example('text'), example('json')];
    for (const file of files) {
      const bytes = new Uint8Array(await readFile(file));
      await store.put(digestOf(bytes), bytes);
      await cache.prepare(digestOf(bytes).slice(7), bytes, file);
    }
    const parts = await distinctBytes(files);
    // The two share the engine's code section (9.2 MB): their distinct bytes are well under their sum.
    expect(parts.engine.carriers).toBe(2);
    expect(parts.distinctBytes).toBeLessThan(parts.totalBytes * 0.7);
    // Before: each blob whole in the store and each core module whole in the cache (~4x the distinct bytes).
    expect(await diskBytes(cacheDir)).toBeLessThanOrEqual(2 * parts.distinctBytes);
    // What the store hands back is the published component, byte for byte.
    const text = new Uint8Array(await readFile(files[0]!));
    expect(Buffer.compare(Buffer.from((await store.get(digestOf(text)))!), Buffer.from(text))).toBe(0);
  });

  it('serves calls from a chunked entry in a later registry, and never compiles a chunk that was written to', async () => {
    const cacheDir = freshCacheDir();
    const first = makeRegistry({ sandbox: { cacheDir, threads: 1 } });
    try {
      expect((await first.registerWasmTools(example('text'))).components[0]!.cache).toBe('miss');
      expect((await first.execute('js_echo', { text: 'one' })).isError).toBe(false);
    } finally {
      await first.close();
    }
    const second = makeRegistry({ sandbox: { cacheDir, threads: 1 } });
    try {
      expect((await second.registerWasmTools(example('text'))).components[0]!.cache).toBe('hit');
      const echoed = await second.execute('js_echo', { text: 'two' });
      expect(echoed.error).toBeUndefined();
      expect(JSON.stringify(echoed.structuredContent ?? echoed.content)).toContain('two');
    } finally {
      await second.close();
    }
    // Every chunk of the cache written to: the entry's recipes still match, its chunks do not.
    for (const file of chunkFiles(join(cacheDir, CHUNKS_DIR))) {
      const bytes = readFileSync(file);
      bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0x5a;
      writeFileSync(file, bytes);
    }
    const third = makeRegistry({ sandbox: { cacheDir, threads: 1 } });
    try {
      const outcome = await third.registerWasmTools(example('text')).then(async () => third.execute('js_echo', { text: 'three' }), (error: unknown) => ({ error, isError: true }));
      expect(outcome.isError).toBe(true);
      expect(JSON.stringify(outcome.error)).toMatch(/COMPONENT_INVALID.*no longer matches its hash|no longer matches its hash/s);
    } finally {
      await third.close();
    }
  });
});
