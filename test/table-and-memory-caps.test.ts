/**
 * Tables are capped like memories, the memory cap bounds a component's total
 * linear memory over all its core instances, and a component's guest code
 * outside a call (its initialization and describe() at load) runs under a
 * budget (issue 11, "Found" 3 and 4). The components are hand-written WAT
 * (test/fixtures/wat/grower.ts).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { capModuleMemory, coreInstantiations, planMemoryCaps } from '../host/sandbox/load/memory-cap.js';
import { growerComponent } from './fixtures/wat/grower.js';
import { ComponentCache, schemaCheckOf } from '../host/sandbox/load/component-cache.js';
import { resolveSchemaLimits } from '../host/core/schema-limits.js';
import { componentId } from '../host/sandbox/load/component-file.js';
import { fixture, freshCacheDir, makeRegistry } from './helpers.js';

const dir = freshCacheDir();

describe('a component with many memories and a table', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    const file = join(dir, 'grower16.wasm');
    await writeFile(file, await growerComponent({ holders: 16 }));
    registry = makeRegistry();
    await registry.registerWasmTools(file, { memoryMb: 64 });
  });
  afterAll(async () => {
    await registry.close();
  });

  it('keeps a component that instantiates a module with its own memory 16 times within its cap in total', async () => {
    const result = await registry.execute('grow_memory', {}, { policy: { memory_mb: 64 } });
    const pages = (result.structuredContent as { pages: number }).pages;
    // 16 holders start at 1 page each, the main module at 1 (and may grow a page for its answer): all within 64 MiB.
    expect(pages + 16 + 2).toBeLessThanOrEqual(1024);
    // Without the split each holder alone could reach the cap (16 GiB in all).
    expect(pages).toBeGreaterThan(800);
  });

  it('refuses table.grow past the table cap instead of growing the worker\'s heap', async () => {
    const result = await registry.execute('grow_table', {});
    // 1 + 65536 fits under the default 100 000 elements; the next step does not.
    expect(result.structuredContent).toEqual({ pages: 65536 });
  });

  it('applies a configured table cap', async () => {
    const small = makeRegistry({ sandbox: { tableElements: 1000 } });
    try {
      await small.registerWasmTools(join(dir, 'grower16.wasm'));
      expect((await small.execute('grow_table', {})).structuredContent).toEqual({ pages: 0 });
    } finally {
      await small.close();
    }
  });
});

describe('tables and the worker heap', () => {
  it('clamps a table cap to what the worker heap holds (growing past it aborted the whole process)', async () => {
    // 10 000 000 elements with a 32 MiB worker heap: V8 fatal "heap out of memory", exit 134, without the clamp.
    const registry = makeRegistry({ sandbox: { tableElements: 10_000_000, maxHeapMb: 32 } });
    try {
      await registry.registerWasmTools(join(dir, 'grower16.wasm'));
      expect((await registry.execute('grow_table', {})).structuredContent).toEqual({ pages: 5 * 65536 });
      expect((await registry.execute('grow_table', {})).structuredContent).toEqual({ pages: 5 * 65536 });
    } finally {
      await registry.close();
    }
  });
});

describe('guest code at load runs under a budget', () => {
  it('fails the load of a component whose initialization never ends with COMPONENT_INVALID, and the pool goes on', async () => {
    const file = join(dir, 'spinner.wasm');
    await writeFile(file, await growerComponent({ holders: 1, spinAtStart: true }));
    const registry = makeRegistry({ sandbox: { cacheDir: freshCacheDir(), describeTimeoutMs: 1500 } });
    try {
      await expect(registry.registerWasmTools(file)).rejects.toMatchObject({ code: 'COMPONENT_INVALID', details: { reason: 'describe-timeout', timeoutMs: 1500 } });
      const honest = join(dir, 'grower1.wasm');
      await writeFile(honest, await growerComponent({ holders: 1 }));
      await registry.registerWasmTools(honest);
      expect((await registry.execute('grow_table', {})).structuredContent).toEqual({ pages: 65536 });
    } finally {
      await registry.close();
    }
  });
});

describe('the load budget counts only the guest\'s own time', () => {
  it('loads a component whose describe waited for a busy worker longer than its budget', async () => {
    // A budget that leaves the guest's own instantiate and describe room on a loaded machine (CI saw one take over 0.4 s).
    const registry = makeRegistry({ sandbox: { cacheDir: freshCacheDir(), describeTimeoutMs: 1500, threads: 1 } });
    try {
      await registry.registerWasmTools(fixture('hostile'));
      // The only worker is busy for 2.5 s; the next load's describe waits for it, past its 1.5 s budget.
      const busy = registry.execute('spin_for', { ms: 2500 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const file = join(dir, 'grower-queued.wasm');
      await writeFile(file, await growerComponent({ holders: 2 }));
      await registry.registerWasmTools(file);
      expect((await busy).structuredContent).toMatchObject({ spun_ms: 2500 });
      expect((await registry.execute('grow_table', {})).structuredContent).toEqual({ pages: 65536 });
    } finally {
      await registry.close();
    }
  });
});

describe('planning caps', () => {
  it('splits the cap over every memory instance, leaving small declared maxima as they are', () => {
    const caps = planMemoryCaps([
      { name: 'main', memories: [{ min: 1, max: undefined }], instances: 1 },
      { name: 'holder', memories: [{ min: 1, max: undefined }], instances: 15 },
      { name: 'tiny', memories: [{ min: 1, max: 2 }], instances: 1 },
    ], 1024);
    expect(caps.get('tiny')).toBe(2);
    expect(caps.get('main')).toBe(Math.floor(1022 / 16));
    expect(caps.get('holder')).toBe(Math.floor(1022 / 16));
  });

  it('gives a lone memory the whole cap', () => {
    expect(planMemoryCaps([{ name: 'm', memories: [{ min: 17, max: undefined }], instances: 1 }, { name: 'shim', memories: [], instances: 1 }], 4096).get('m')).toBe(4096);
  });

  it('counts how often jco\'s glue instantiates each module', () => {
    const glue = "const module0 = getCoreModule('a.wasm');\nconst module1 = getCoreModule('b.wasm');\ninstantiateCore(module1);\ninstantiateCore(module0, {});\ninstantiateCore(module1, {});";
    expect([...coreInstantiations(glue)]).toEqual([['b.wasm', 2], ['a.wasm', 1]]);
  });

  it('rewrites a table\'s maximum', () => {
    // (module (table 1 funcref))
    const module = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 4, 4, 1, 0x70, 0, 1]);
    const capped = capModuleMemory(module, 16, 500);
    expect(WebAssembly.validate(capped.bytes)).toBe(true);
    expect([...capped.bytes.slice(8)]).toEqual([4, 6, 1, 0x70, 1, 1, 0xf4, 3]);
  });
});

describe('a component whose spare instances hang', () => {
  it('has the wedged worker replaced, other components\' calls served, and is quarantined after a second hang', async () => {
    const bytes = await growerComponent({ holders: 1, spinWithoutEnv: true });
    const file = join(dir, 'env-spinner.wasm');
    await writeFile(file, bytes);
    // Its describe() would hang too (no environment at load): seed the cache with its tools, as a
    // component that was described before it started hanging would have.
    const cacheDir = freshCacheDir();
    const cache = new ComponentCache(cacheDir);
    const entry = await cache.prepare(componentId(bytes), bytes, 'env-spinner');
    await cache.saveTools(entry, [{ name: 'grow_table', description: 'x', inputSchema: '{"type":"object"}', streaming: false, idempotent: false }], schemaCheckOf(resolveSchemaLimits()));

    const registry = makeRegistry({ sandbox: { cacheDir, threads: 1, spareTimeoutMs: 300 } });
    try {
      await registry.registerWasmTools(file, { grant: { privilege: 'ELEVATED', envAllow: ['ARM'], env: { ARM: '1' } } });
      await registry.registerWasmTools(fixture('flood'));
      const armed = { policy: { privilege_level: 'ELEVATED' } } as const;
      // An instance made for a call with an environment starts; the spare made after it hangs.
      const first = await registry.execute('grow_table', {}, armed);
      expect(first.error ?? first.structuredContent).toEqual({ pages: 65536 });
      // The honest call of another component is served once the wedged worker is replaced (if it
      // was handed that worker, it never started there, and the pool runs it again).
      const honest = await registry.execute('honest', {});
      expect(honest.error ?? honest.structuredContent).toEqual({ ok: true });
      // The second hang is seen when its spare's clock runs out, which may come after the next call or two:
      // keep calling (a bounded number of times) until the component is quarantined.
      let quarantined: Awaited<ReturnType<typeof registry.execute>> | undefined;
      for (let attempt = 0; attempt < 16 && quarantined === undefined; attempt += 1) {
        const next = await registry.execute('grow_table', {}, armed);
        if (next.error?.code === 'COMPONENT_INVALID') quarantined = next;
        else expect(next.error ?? next.structuredContent).toEqual({ pages: 65536 });
        expect((await registry.execute('honest', {})).structuredContent).toEqual({ ok: true });
      }
      expect(quarantined?.error).toMatchObject({ code: 'COMPONENT_INVALID', details: { reason: 'quarantined' } });
      expect((await registry.execute('honest', {})).structuredContent).toEqual({ ok: true });
    } finally {
      await registry.close();
    }
  });
});
