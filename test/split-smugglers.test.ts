/**
 * The fresh-instance guarantee on split components (issue 37, item 1): with
 * every module that can be split made an engine and an image
 * (`TOOLHOST_ENGINE_SPLIT=always`, host/sandbox/load/engine-split.ts), the C
 * smuggler (fixtures/guests/c/smuggler.c, whose main module is then split)
 * plants a secret in every channel it reaches and ends in each way a call can
 * end, and the next call, in either containment, sees what a new instance
 * sees. The same plants on whole modules: fresh-instance-isolation.test.ts;
 * the segment shapes on split modules: test/fuzz/instance-state.fuzz.test.ts;
 * componentize-js tools, split by default: engine-split.test.ts.
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { IMAGE_SUFFIX } from '../host/sandbox/load/engine-split.js';
import { CONTAINMENTS, collect, fixture, freshCacheDir, hasCGuests, makeRegistry } from './helpers.js';

async function probe(on: ToolRegistry): Promise<{ data: unknown; events: ToolEvent[]; instance: string | undefined }> {
  // Without printing: the probe itself then changes nothing a reset could refuse (a stdout handle).
  const events = await collect(on.stream('probe', { print: false }));
  const last = events.at(-1);
  if (last?.type !== 'result') throw new Error(`probe failed: ${JSON.stringify(last)}`);
  return { data: last.data, events, instance: last.accounting?.instance };
}

/** Image modules in the variants stored under `cacheDir` by the `always` setting (variant-cache.ts). */
function splitImages(cacheDir: string): number {
  return readdirSync(cacheDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile() && entry.name.includes(IMAGE_SUFFIX) && entry.parentPath.endsWith('-split-all')).length;
}

describe.runIf(hasCGuests).each(CONTAINMENTS)('a fresh instance for every call of a split component (%s containment)', (containment) => {
  const cacheDir = freshCacheDir();
  const splitBefore = process.env.TOOLHOST_ENGINE_SPLIT;
  let registry: ToolRegistry;
  let pristine: unknown;

  beforeAll(async () => {
    // Read where the host makes the component's modules: at the registration below (module-variants.ts).
    process.env.TOOLHOST_ENGINE_SPLIT = 'always';
    // One worker: the plant and the probe meet the same worker's instances.
    registry = makeRegistry({ sandbox: { cacheDir, threads: 1, containment } });
    await registry.registerWasmTools(fixture('smuggler'));
    pristine = (await probe(registry)).data;
  });
  afterAll(async () => {
    await registry.close();
    if (splitBefore === undefined) delete process.env.TOOLHOST_ENGINE_SPLIT;
    else process.env.TOOLHOST_ENGINE_SPLIT = splitBefore;
  });

  it('runs the smuggler as an engine and an image', async () => {
    expect(pristine).toMatchObject({ static: null, heap: null, env: null, calls: 1 });
    await expect.poll(() => splitImages(cacheDir), { timeout: 10_000, interval: 100 }).toBeGreaterThan(0);
  });

  for (const end of ['return', 'trap', 'exit'] as const) {
    it(`leaks nothing after a call that plants a secret and ends by ${end}`, async () => {
      const secret = `split-${containment}-${end}-secret`;
      // A plant that returns leaves memory its size and no handle: its instance is reset, image and all.
      const planted = await registry.execute('plant', { secret, ...(end === 'return' ? { grow: false, print: false } : { end }) });
      if (end === 'return') expect(planted.isError).toBe(false);
      else expect(planted.error).toMatchObject({ code: 'TOOL_CRASHED' });
      // At least twice (the first probe may use the spare made before the plant), and for a plant that returns
      // until a reset instance served one (bounded: a busy machine can make the reset late).
      const instances: Array<string | undefined> = [];
      for (let i = 0; i < 20 && (i < 2 || (end === 'return' && !instances.includes('restored'))); i += 1) {
        if (i >= 2) await new Promise((resolve) => setTimeout(resolve, 50));
        const seen = await probe(registry);
        expect(seen.data).toEqual(pristine);
        expect(JSON.stringify(seen.events)).not.toContain(secret);
        instances.push(seen.instance);
      }
      if (end === 'return') expect(instances).toContain('restored');
    });
  }
});

describe.runIf(hasCGuests)('the split setting in the stored variants', () => {
  it('never reads a variant stored under the default setting (the small module whole) when every module is to be split', async () => {
    const cacheDir = freshCacheDir();
    const splitBefore = process.env.TOOLHOST_ENGINE_SPLIT;
    try {
      delete process.env.TOOLHOST_ENGINE_SPLIT;
      const whole = makeRegistry({ sandbox: { cacheDir, threads: 1 } });
      await whole.registerWasmTools(fixture('smuggler'));
      expect((await probe(whole)).data).toMatchObject({ static: null, calls: 1 });
      await whole.close();
      expect(splitImages(cacheDir)).toBe(0);
      process.env.TOOLHOST_ENGINE_SPLIT = 'always';
      const split = makeRegistry({ sandbox: { cacheDir, threads: 1 } });
      await split.registerWasmTools(fixture('smuggler'));
      expect((await probe(split)).data).toMatchObject({ static: null, calls: 1 });
      await split.close();
      await expect.poll(() => splitImages(cacheDir), { timeout: 10_000, interval: 100 }).toBeGreaterThan(0);
    } finally {
      if (splitBefore === undefined) delete process.env.TOOLHOST_ENGINE_SPLIT;
      else process.env.TOOLHOST_ENGINE_SPLIT = splitBefore;
    }
  });
});
