/**
 * Per-tool memory that follows use (issue 37, item 2): a tool uncalled for `idle_release_ms` keeps nothing but
 * what rebuilds it. The worker drops its runtime whole (instances, its reference to the compiled modules and
 * images: worker/memory-budget.ts, `WorkerHeap.components`), the main thread forgets the compiled variant no worker
 * asked for in that time (load/module-variants.ts), and the memory budget counts a tool's images beside its
 * instances. The next call reads the modules back from the transpile cache and runs on a new instance.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { forcedGc } from '../host/core/forced-gc.js';
import { ComponentCache } from '../host/sandbox/load/component-cache.js';
import { sourceFromFile } from '../host/sandbox/load/component-file.js';
import { IMAGE_SUFFIX } from '../host/sandbox/load/engine-split.js';
import { DEFAULT_TABLE_ELEMENTS } from '../host/sandbox/load/memory-cap.js';
import { modulesPerCap, type SharedVariants } from '../host/sandbox/load/module-variants.js';
import type { CompiledModules } from '../host/sandbox/load/core-compile.js';
import { MemoryBudget, type BudgetedRuntime } from '../host/sandbox/worker/memory-budget.js';
import type { GuestInstance } from '../host/sandbox/worker/guest-instance.js';
import { example, fixture, hasCGuests, makeRegistry, sharedCacheDir } from './helpers.js';

const MiB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const hasJs = existsSync(example('text'));
const instanceOf = (bytes: number): GuestInstance => ({ heldBytes: () => bytes }) as unknown as GuestInstance;

async function collected(ref: WeakRef<object>): Promise<boolean> {
  const gc = forcedGc();
  if (gc === undefined) throw new Error('no forced gc');
  for (let i = 0; i < 10 && ref.deref() !== undefined; i += 1) {
    // A WeakRef's target lives to the end of the job that last read it: collect in a later turn.
    await sleep(20);
    gc();
    gc();
  }
  return ref.deref() === undefined;
}

describe('a worker\'s memory budget over a tool\'s images', () => {
  it('counts a runtime\'s images beside its instances, and an idle one is dropped whole', () => {
    const budget = new MemoryBudget(1024 * MiB, 1000);
    let dropped = 0;
    const idle: BudgetedRuntime = { spare: instanceOf(MiB), imageBytes: 3 * MiB, drop: () => { dropped += 1; return true; } };
    budget.touch(idle, 0);
    expect(budget.bytes).toBe(4 * MiB);
    expect(budget.sweep(2000)).toBe(1);
    expect(dropped).toBe(1);
    expect(budget.bytes).toBe(0);
    // Forgotten: a later sweep neither drops it again nor counts another eviction.
    expect(budget.sweep(4000)).toBe(0);
    expect(dropped).toBe(1);
  });

  it('drops a runtime of images alone for the budget, and keeps one that must stay without counting it again', () => {
    const budget = new MemoryBudget(4 * MiB, 0);
    const imagesOnly: BudgetedRuntime = { imageBytes: 3 * MiB, drop: () => true };
    const conversations: BudgetedRuntime = { imageBytes: 3 * MiB, drop: () => false };
    const current: BudgetedRuntime = { spare: instanceOf(MiB) };
    budget.touch(conversations, 1);
    budget.touch(imagesOnly, 2);
    budget.touch(current, 3);
    // 7 MiB: the conversations' runtime stays (only instances could go, it has none), the images-only one goes.
    expect(budget.enforce(current)).toBe(1);
    expect(budget.bytes).toBe(4 * MiB);
    expect(conversations.evicted).toBeUndefined();
  });
});

describe.runIf(hasJs)('the main thread\'s compiled variant of an idle tool', () => {
  it('is forgotten once no worker asked for it for the release time, images and all, and made again from the cache when asked', async () => {
    const cache = new ComponentCache(sharedCacheDir);
    const source = await sourceFromFile(example('text'), cache.ids);
    const cached = await cache.prepare(source.id, source.bytes, 'text');
    const shared: SharedVariants = new Map();
    const variants = modulesPerCap(cached, 'text', DEFAULT_TABLE_ELEMENTS, cache, shared, 100);
    let modules: CompiledModules | undefined = await variants.modulesFor(256) as CompiledModules;
    const images = modules.filter(([name]) => name.endsWith(IMAGE_SUFFIX));
    expect(images.length).toBeGreaterThanOrEqual(1);
    expect(modules.imageBytes).toBeGreaterThan(1024 * 1024);
    const image = new WeakRef(images[0]![1]);
    images.length = 0;
    expect(shared.size).toBe(1);
    await sleep(400);
    expect(shared.size).toBe(0);
    modules = undefined;
    expect(await collected(image)).toBe(true);

    // Control: asked again, the modules are made again, read back from the cache, and instantiate.
    const again = await variants.modulesFor(256);
    expect(again.length).toBeGreaterThanOrEqual(2);
    const byName = new Map(again);
    const imageAgain = [...byName.keys()].find((name) => name.endsWith(IMAGE_SUFFIX));
    expect(imageAgain).toBeDefined();
    expect(WebAssembly.Module.imports(byName.get(imageAgain!)!)).toHaveLength(1);
  }, 120_000);

  it('stays while it is asked for within the release time, and with a release time of 0', async () => {
    const cache = new ComponentCache(sharedCacheDir);
    const source = await sourceFromFile(example('text'), cache.ids);
    const cached = await cache.prepare(source.id, source.bytes, 'text');
    const kept: SharedVariants = new Map();
    const first = await modulesPerCap(cached, 'text', DEFAULT_TABLE_ELEMENTS, cache, kept, 0).modulesFor(256);
    await sleep(200);
    expect(kept.size).toBe(1);
    const shared: SharedVariants = new Map();
    const variants = modulesPerCap(cached, 'text', DEFAULT_TABLE_ELEMENTS, cache, shared, 2000);
    const a = await variants.modulesFor(256);
    await sleep(1200);
    expect(await variants.modulesFor(256)).toBe(a);
    await sleep(1200);
    // Made 2.4 s ago, asked 1.2 s ago: still there.
    expect(await variants.modulesFor(256)).toBe(a);
    expect(first.length).toBe(a.length);
  }, 120_000);
});

describe.runIf(hasCGuests)('an idle-released tool in the host', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    // Released 1.5 s after its last call (long enough that the hot check below runs before it on a loaded machine).
    registry = makeRegistry({ sandbox: { idleReleaseMs: 1500 } });
    await registry.registerWasmTools(fixture('smuggler'));
  }, 120_000);
  afterAll(async () => {
    await registry.close();
  });

  it('is held by no worker once released, and its next call works on a new instance', async () => {
    const first = await registry.execute('probe', { print: false });
    expect(first.isError).toBe(false);
    const hot = await registry.collectWorkerGarbage();
    expect(hot?.reduce((sum, heap) => sum + (heap.components ?? Number.NaN), 0)).toBeGreaterThanOrEqual(1);
    await sleep(4000);
    const idle = await registry.collectWorkerGarbage();
    expect(idle?.length).toBeGreaterThanOrEqual(1);
    for (const heap of idle ?? []) expect(heap.components).toBe(0);
    // Control: the next call reads its modules again and runs on a new instance.
    const next = await registry.execute('probe', { print: false });
    expect(next.isError).toBe(false);
    expect(next.structuredContent).toEqual(first.structuredContent);
    expect(next.accounting?.instance).toBe('fresh');
    expect(next.accounting?.reinstantiated).toBe(true);
  }, 60_000);
});
