/**
 * Where the next call of a tight loop goes in the default isolation: a
 * worker announces the reset of its last instance quick only when its resets
 * are short (host/sandbox/worker/component-runtime.ts). A long one (a
 * componentize-js guest's was ~1.2 ms) announced quick kept every call on the
 * worker that had just answered, each waiting for the last call's reset,
 * while the other worker sat ready. Since its tables are no longer compared
 * (instance-state-model.ts), such a reset (~0.4 ms) is often over before the
 * loop's next call arrives, and the worker that answered may then take it
 * again: the loop no longer alternates, and what must hold is that every call
 * gets a pristine instance and none is refused. (The routing itself: a worker
 * preparing a slow spare is passed over for an idle one, test/task-lanes.test.ts.)
 *
 * A tool's second call goes where its first ran (component-homes.ts) and is
 * served by a reset: the first call's instance is warmed before it is
 * recorded, as spares are, so its reset is not refused (jco's glue makes its
 * per-component async state at the first export call). Before, a
 * componentize-js tool's second call got a new instance, on the other worker
 * or from a new spare (10-40 ms against a reset's ~1).
 *
 * A tool whose calls come back to back, each waiting for its home's reset
 * while the other worker idles, gets an instance made ahead on that worker
 * (a second home, component-homes.ts); a warm that fails is not tried again,
 * and one made is not made again (both homes stay homes through an idle
 * release: each makes its instance anew at its next call).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, example, fixture, makeRegistry } from './helpers.js';

const registries: ToolRegistry[] = [];
afterAll(async () => {
  await Promise.all(registries.map((registry) => registry.close()));
});

describe('a tight loop in the default isolation', () => {
  it('gives every call of a tight componentize-js loop a pristine instance, on either worker', async () => {
    const registry = makeRegistry({ sandbox: { threads: 2 } });
    registries.push(registry);
    await registry.registerWasmTools(example('text'));
    // Both workers have served and reset a call before the loop counts (the first reset is the one that is timed).
    for (let i = 0; i < 6; i += 1) await Promise.all([registry.execute('js_echo', { text: 'warm' }), registry.execute('js_echo', { text: 'warm' })]);
    for (let i = 0; i < 60; i += 1) {
      const result = await registry.execute('js_echo', { text: `call ${i}` });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toEqual({ text: `call ${i}` });
      expect(result.accounting).toMatchObject({ isolation: 'call' });
      expect(['restored', 'prewarmed']).toContain(result.accounting?.instance);
    }
  });

  it("serves a componentize-js tool's second call by a reset, on the worker its first call ran on", async () => {
    for (let round = 0; round < 3; round += 1) {
      const registry = makeRegistry({ sandbox: { threads: 2 } });
      registries.push(registry);
      await registry.registerWasmTools(example('text'));
      await registry.warm();
      const first = await registry.execute('js_echo', { text: 'first' });
      const second = await registry.execute('js_echo', { text: 'second' });
      expect(first.accounting).toMatchObject({ instance: 'fresh', isolation: 'call' });
      expect(second.structuredContent).toEqual({ text: 'second' });
      expect(second.accounting).toMatchObject({ instance: 'restored', isolation: 'call' });
      expect(first.accounting?.workerThreadId).toBeGreaterThan(0);
      expect(second.accounting?.workerThreadId).toBe(first.accounting?.workerThreadId);
      await registry.close();
    }
  });

  it.each(CONTAINMENTS)('makes a second home for a tool called back to back (%s containment): its calls then go to both workers, each pristine', async (containment) => {
    // slow_start: a new instance takes 60 ms, a reset ~1 ms (26 MB compared), a call far less, so each call of a
    // tight loop finds its last instance resetting, however slow the way to the worker (a sandbox process's pipe).
    const registry = makeRegistry({ sandbox: { threads: 2, containment } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('slow_start'));
    // A sandbox process reports its count with its utilization (every second): the calls say where they ran at once.
    const threads = new Set<number>();
    for (let i = 0; i < 600 && threads.size < 2; i += 1) {
      const result = await registry.execute('slow_start_echo', { text: `call ${i}` });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toEqual({ text: `call ${i}`, table: 16 * 1024 * 1024 });
      // After its first call, served from an instance made ahead or reset, never one made during the call.
      if (i > 0) expect(['restored', 'prewarmed']).toContain(result.accounting?.instance);
      threads.add(result.accounting!.workerThreadId!);
    }
    expect(threads.size).toBe(2);
    for (let i = 0; i < 50; i += 1) await registry.execute('slow_start_echo', { text: `after ${i}` });
    await expect.poll(() => registry.sandboxStats()?.warms, { timeout: 5_000, interval: 100 }).toEqual({ made: 1, failed: 0 });
  });

  it('keeps both homes of a hot tool through an idle release: each makes its instance again at its next call, and no second warm is sent', async () => {
    const registry = makeRegistry({ sandbox: { threads: 2, idleReleaseMs: 300 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('slow_start'));
    // Calls until both workers have served one (a loaded machine may let one worker's resets keep up for a while).
    const loop = async (label: string, calls: number): Promise<{ threads: Set<number>; fresh: number }> => {
      const threads = new Set<number>();
      let fresh = 0;
      for (let i = 0; i < calls && threads.size < 2; i += 1) {
        const result = await registry.execute('slow_start_echo', { text: `${label} ${i}` });
        expect(result.structuredContent).toEqual({ text: `${label} ${i}`, table: 16 * 1024 * 1024 });
        threads.add(result.accounting!.workerThreadId!);
        if (result.accounting?.instance === 'fresh') fresh += 1;
      }
      return { threads, fresh };
    };
    const before = await loop('before', 600);
    expect(before.threads.size).toBe(2);
    await expect.poll(() => registry.sandboxStats()?.warms, { timeout: 5_000, interval: 100 }).toEqual({ made: 1, failed: 0 });
    // Idle past the release: both workers drop the tool's instances (the instance made ahead too).
    await expect.poll(async () => (await registry.collectWorkerGarbage())?.reduce((sum, heap) => sum + (heap.components ?? 0), 0), { timeout: 10_000, interval: 200 }).toBe(0);
    const after = await loop('after', 600);
    // Each home made its instance anew at its first call since (no other call waits 60 ms for one), and both serve.
    expect(after.fresh).toBeLessThanOrEqual(2);
    expect(after.threads.size).toBe(2);
    // Once per component: the release did not make it want a second home again, so nothing was made ahead twice.
    expect(registry.sandboxStats()?.warms).toEqual({ made: 1, failed: 0 });
  });

  it('stops an instance made ahead that overruns the spare budget, never tries it again, and the calls go on', async () => {
    // slow_start's instances take 60 ms to describe themselves: past a 30 ms spare budget. Its resets fit.
    const registry = makeRegistry({ sandbox: { threads: 2, spareTimeoutMs: 30 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('slow_start'));
    for (let i = 0; i < 400 && (registry.sandboxStats()?.warms?.failed ?? 0) === 0; i += 1) {
      const result = await registry.execute('slow_start_echo', { text: `call ${i}` });
      expect(result.structuredContent).toEqual({ text: `call ${i}`, table: 16 * 1024 * 1024 });
    }
    expect(registry.sandboxStats()?.warms).toEqual({ made: 0, failed: 1 });
    // One hang is not a quarantine (two are); the worker that made it was replaced, and the tool's calls go on at home.
    for (let i = 0; i < 100; i += 1) {
      const result = await registry.execute('slow_start_echo', { text: `after ${i}` });
      expect(result.error).toBeUndefined();
      expect(result.structuredContent).toEqual({ text: `after ${i}`, table: 16 * 1024 * 1024 });
    }
    expect(registry.sandboxStats()?.warms).toEqual({ made: 0, failed: 1 });
  });
});
