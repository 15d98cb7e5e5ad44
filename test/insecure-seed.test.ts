/**
 * `wasi:random/insecure-seed` is one value per instance, from the CSPRNG
 * (issue 36, M12): the shim's was one module-scope value per worker thread,
 * the same 128 bits for every instance, fresh or restored, and every
 * principal. A hand-written component (fixtures/wat/seed-reader.ts) reads it
 * in two calls: new instances differ, restored instances differ; one instance
 * reused (`worker` isolation) keeps its seed, as the interface intends; the
 * seed is 128 bits, not zero.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { seedReaderComponent } from './fixtures/wat/seed-reader.js';
import { freshCacheDir, makeRegistry } from './helpers.js';

const dir = freshCacheDir();

async function seedOf(registry: ToolRegistry, tool: string): Promise<string> {
  const result = await registry.execute(tool, {});
  return (result.structuredContent as { seed: string }).seed;
}

describe('insecure-seed per instance', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { cacheDir: dir } });
    const restored = join(dir, 'seed_restored.wasm');
    const fresh = join(dir, 'seed_fresh.wasm');
    const reused = join(dir, 'seed_reused.wasm');
    await writeFile(restored, await seedReaderComponent());
    await writeFile(fresh, await seedReaderComponent({ fresh: true }));
    await writeFile(reused, await seedReaderComponent());
    await registry.registerWasmTools(restored); // registered as `seed`; the others as COMPONENT.seed
    await registry.registerWasmTools(fresh);
    await registry.registerWasmTools(reused, { isolation: 'worker' });
  });
  afterAll(async () => {
    await registry?.close();
  });

  it('gives a restored instance a fresh seed at every call', async () => {
    const seeds = [await seedOf(registry, 'seed'), await seedOf(registry, 'seed'), await seedOf(registry, 'seed')];
    expect(new Set(seeds).size).toBe(3);
  });

  it('gives each new instance a seed of its own, and differs from other components\' instances', async () => {
    const seeds = [await seedOf(registry, 'seed_fresh.seed'), await seedOf(registry, 'seed_fresh.seed'), await seedOf(registry, 'seed')];
    expect(new Set(seeds).size).toBe(3);
  });

  it('keeps one instance\'s seed while the instance lives, and it is 128 bits, not zero', async () => {
    const first = await seedOf(registry, 'seed_reused.seed');
    expect(await seedOf(registry, 'seed_reused.seed')).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(first).not.toBe('0'.repeat(32));
  });
});
