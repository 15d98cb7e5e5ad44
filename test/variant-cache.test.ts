/**
 * Stored variants (host/sandbox/load/variant-cache.ts, issue 37 D1/D3): a component's capped, rewritten and split
 * core modules are kept beside its cache entry once made, read back by later loads, and compiled once per process
 * by their hash, so distinct componentize-js tools share one compiled engine without reading it again. A stored
 * file that no longer matches is never compiled: the variant is made again from the entry. A variant made by
 * another pipeline (the instance-state model changed, say) is neither read nor kept.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ComponentCache, type CachedComponent } from '../host/sandbox/load/component-cache.js';
import { sourceFromFile } from '../host/sandbox/load/component-file.js';
import { IMAGE_SUFFIX } from '../host/sandbox/load/engine-split.js';
import { DEFAULT_TABLE_ELEMENTS } from '../host/sandbox/load/memory-cap.js';
import { modulesPerCap } from '../host/sandbox/load/module-variants.js';
import { VariantCache } from '../host/sandbox/load/variant-cache.js';
import type { CoreModuleBytes } from '../host/sandbox/process/messages.js';
import { example, hasCGuests, sharedCacheDir } from './helpers.js';

const hasJs = existsSync(example('text')) && existsSync(example('json'));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const temporaryDirs: string[] = [];
afterAll(async () => {
  await Promise.all(temporaryDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function entryOf(cache: ComponentCache, path: string, what: string): Promise<CachedComponent> {
  const source = await sourceFromFile(path, cache.ids);
  return cache.prepare(source.id, source.bytes, what);
}

/** The variant `key` once a background write has kept it. */
async function storedVariant(stored: VariantCache, entry: CachedComponent, key: string): Promise<NonNullable<Awaited<ReturnType<VariantCache['read']>>>> {
  for (let i = 0; i < 200; i += 1) {
    const found = await stored.read(entry, key);
    if (found !== undefined) return found;
    await sleep(25);
  }
  throw new Error(`variant ${key} was never stored`);
}

const keyOf = (memoryMb: number): string => `${memoryMb}-${DEFAULT_TABLE_ELEMENTS}-split`;

describe.runIf(hasJs)('stored variants of componentize-js tools', () => {
  it('are read back by a later load, and two distinct tools then share one compiled engine', async () => {
    const cache = new ComponentCache(sharedCacheDir);
    const stored = new VariantCache(cache);
    const text = await entryOf(cache, example('text'), 'text');
    const json = await entryOf(cache, example('json'), 'json');
    // First loads: made (or read, if another test kept them already) and kept.
    for (const entry of [text, json]) await modulesPerCap(entry, entry.dir, DEFAULT_TABLE_ELEMENTS, cache, new Map(), 0, stored).modulesFor(256);
    for (const entry of [text, json]) await storedVariant(stored, entry, keyOf(256));
    // Later loads (fresh tables, as a new process has): read back.
    const [textModules, jsonModules] = await Promise.all([text, json].map((entry) => modulesPerCap(entry, entry.dir, DEFAULT_TABLE_ELEMENTS, cache, new Map(), 0, stored).modulesFor(256)));
    const engineOf = (modules: ReadonlyArray<[string, WebAssembly.Module]>): WebAssembly.Module => {
      const names = new Set(modules.map(([name]) => name));
      const engine = modules.find(([name]) => names.has(`${name}${IMAGE_SUFFIX}`));
      if (engine === undefined) throw new Error('no split engine');
      return engine[1];
    };
    expect(engineOf(textModules as Array<[string, WebAssembly.Module]>)).toBe(engineOf(jsonModules as Array<[string, WebAssembly.Module]>));
    // Each keeps its own image.
    const imageOf = (modules: ReadonlyArray<[string, WebAssembly.Module]>): WebAssembly.Module => modules.find(([name]) => name.endsWith(IMAGE_SUFFIX))![1];
    expect(imageOf(textModules as Array<[string, WebAssembly.Module]>)).not.toBe(imageOf(jsonModules as Array<[string, WebAssembly.Module]>));
  });
});

describe.runIf(hasCGuests)('stored variants', () => {
  async function privateCache(): Promise<{ cache: ComponentCache; stored: VariantCache; entry: CachedComponent; made: CoreModuleBytes }> {
    const dir = await mkdtemp(join(tmpdir(), 'toolhost-variants-'));
    temporaryDirs.push(dir);
    const cache = new ComponentCache(dir);
    const stored = new VariantCache(cache);
    const entry = await entryOf(cache, example('ctools'), 'ctools');
    // Made from the entry (nothing stored yet), and kept.
    const made = await modulesPerCap(entry, 'ctools', DEFAULT_TABLE_ELEMENTS, cache, new Map(), 0, stored).bytesFor(16);
    await storedVariant(stored, entry, keyOf(16));
    return { cache, stored, entry, made };
  }

  it('hold the bytes that were made, read back whole by a later load', async () => {
    const { cache, stored, entry, made } = await privateCache();
    const again = await modulesPerCap(entry, 'ctools', DEFAULT_TABLE_ELEMENTS, cache, new Map(), 0, stored).bytesFor(16);
    expect(again.map(([name, bytes]) => [name, sha256(bytes)])).toEqual(made.map(([name, bytes]) => [name, sha256(bytes)]));
    // Another cap is another variant.
    expect(await stored.read(entry, keyOf(32))).toBeUndefined();
  });

  it('are made again from the entry when a stored file no longer matches its hash: the changed bytes are never compiled', async () => {
    const { cache, stored, entry, made } = await privateCache();
    const variant = await storedVariant(stored, entry, keyOf(16));
    const target = variant.modules[0]!;
    expect(target.recipe).toBeUndefined();
    // A valid module with nothing in it, in place of the stored one: compiled, it would export nothing.
    const dir = join(entry.dir, 'variants');
    const [pipeline] = await readdir(dir);
    await writeFile(join(dir, pipeline!, keyOf(16), target.name), Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0));
    await expect(variant.load(target)).rejects.toThrow(/does not match/);
    const modules = await modulesPerCap(entry, 'ctools', DEFAULT_TABLE_ELEMENTS, cache, new Map(), 0, stored).modulesFor(16);
    const original = await WebAssembly.compile(made.find(([name]) => name === target.name)![1]);
    const compiled = modules.find(([name]) => name === target.name)![1];
    expect(WebAssembly.Module.exports(compiled)).toEqual(WebAssembly.Module.exports(original));
    expect(WebAssembly.Module.exports(compiled).length).toBeGreaterThan(0);
  });

  it('of another pipeline are neither read nor kept', async () => {
    const { stored, entry } = await privateCache();
    const root = join(entry.dir, 'variants');
    const other = join(root, '0123456789abcdef', keyOf(64));
    await mkdir(other, { recursive: true });
    await writeFile(join(other, 'meta.json'), JSON.stringify({ format: 1, pipeline: '0123456789abcdef', modules: [] }));
    const [ours] = (await readdir(root)).filter((name) => name !== '0123456789abcdef');
    // Renamed under our pipeline's name, a meta.json of another pipeline is still not ours.
    await mkdir(join(root, ours!, keyOf(64)), { recursive: true });
    await writeFile(join(root, ours!, keyOf(64), 'meta.json'), JSON.stringify({ format: 1, pipeline: '0123456789abcdef', modules: [] }));
    expect(await stored.read(entry, keyOf(64))).toBeUndefined();
    // The next variant written removes the other pipeline's.
    await stored.write(entry, keyOf(128), [['m.wasm', Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0)]]);
    expect((await readdir(root)).sort()).toEqual([ours]);
    expect(await stored.read(entry, keyOf(128))).toMatchObject({ modules: [{ name: 'm.wasm', size: 8 }] });
  });
});
