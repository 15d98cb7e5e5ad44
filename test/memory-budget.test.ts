/**
 * The workers' memory budget (issue 28, worker/memory-budget.ts): past a
 * worker's share of `memoryBudgetMb` the least recently called components'
 * instances are dropped, and so are those of a component uncalled for
 * `idleReleaseMs`; the next call of a dropped component makes a new instance
 * (`accounting.reinstantiated`), counted as evictions in the accounting, as
 * `memory_budget_mb` limit hits and in `/metrics`.
 *
 * The fresh-instance promise holds for a re-instantiated instance exactly as
 * for a restored one: the smuggler (fixtures/guests/c/smuggler.c) plants a
 * secret in every channel a reset would have to put back (static data, the
 * heap, the environment, the call count), its instance is evicted before it
 * could be reset or reused, and the probe that follows must see what a
 * brand-new instance sees, in both containments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { createMetrics } from '../host/servers/index.js';
import { MemoryBudget, type BudgetedRuntime } from '../host/sandbox/worker/memory-budget.js';
import type { GuestInstance } from '../host/sandbox/worker/guest-instance.js';
import { resolveOptions } from '../host/sandbox/pool-options.js';
import { CONTAINMENTS, collect, example, fixture, hasCGuests, makeRegistry } from './helpers.js';

const MiB = 1024 * 1024;
const instanceOf = (bytes: number): GuestInstance => ({ heldBytes: () => bytes }) as unknown as GuestInstance;

describe('a worker\'s memory budget over its components\' instances', () => {
  it('drops the least recently called components\' instances first, never the current one\'s', () => {
    const budget = new MemoryBudget(10 * MiB, 0);
    const a: BudgetedRuntime = { spare: instanceOf(4 * MiB) };
    const b: BudgetedRuntime = { spare: instanceOf(4 * MiB), awaitingReset: instanceOf(1 * MiB) };
    const c: BudgetedRuntime = { kept: instanceOf(4 * MiB) };
    budget.touch(a, 1);
    budget.touch(b, 2);
    budget.touch(c, 3);
    expect(budget.bytes).toBe(13 * MiB);
    // a is the least recently called: dropped, which brings the worker within 10 MiB.
    expect(budget.enforce(c)).toBe(1);
    expect(a).toMatchObject({ spare: undefined, evicted: true });
    expect(b.spare).toBeDefined();
    expect(budget.bytes).toBe(9 * MiB);
    expect(budget.takeUnreported()).toBe(1);
    expect(budget.takeUnreported()).toBe(0);
  });

  it('keeps the current component\'s instances even when they alone are over the budget', () => {
    const budget = new MemoryBudget(1 * MiB, 0);
    const big: BudgetedRuntime = { spare: instanceOf(8 * MiB) };
    budget.touch(big, 1);
    expect(budget.enforce(big)).toBe(0);
    expect(big.spare).toBeDefined();
  });

  it('drops the instances of components uncalled for the idle time, and only theirs', () => {
    const budget = new MemoryBudget(1024 * MiB, 1000);
    const old: BudgetedRuntime = { spare: instanceOf(MiB) };
    const recent: BudgetedRuntime = { spare: instanceOf(MiB) };
    budget.touch(old, 0);
    budget.touch(recent, 1500);
    expect(budget.sweep(2000)).toBe(1);
    expect(old.evicted).toBe(true);
    expect(recent.spare).toBeDefined();
    expect(new MemoryBudget(MiB, 0).sweepEveryMs).toBeUndefined();
  });

  it('has a default and checks its options', () => {
    expect(resolveOptions({})).toMatchObject({ memoryBudgetMb: 512, idleReleaseMs: 60_000 });
    expect(() => resolveOptions({ memoryBudgetMb: 0 })).toThrow('options.memoryBudgetMb must be a positive integer');
    expect(() => resolveOptions({ idleReleaseMs: -1 })).toThrow('options.idleReleaseMs must be a non-negative integer');
  });
});

interface Probe {
  static: string | null;
  heap: string | null;
  env: string | null;
  calls: number;
}

async function probe(on: ToolRegistry): Promise<{ probe: Probe; events: ToolEvent[]; reinstantiated: boolean | undefined; evictions: number | undefined }> {
  const events = await collect(on.stream('probe', { print: false }));
  const last = events.at(-1);
  if (last?.type !== 'result') throw new Error(`probe failed: ${JSON.stringify(last)}`);
  return { probe: last.data as Probe, events, reinstantiated: last.accounting?.reinstantiated, evictions: last.accounting?.evictions };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(hasCGuests).each(CONTAINMENTS)('an evicted component\'s next call (%s containment)', (containment) => {
  describe('after idle release', () => {
    let registry: ToolRegistry;
    let pristine: Probe;

    beforeAll(async () => {
      // One worker; an uncalled component loses its instances after 100 ms.
      registry = makeRegistry({ sandbox: { containment, idleReleaseMs: 100 } });
      await registry.registerWasmTools(fixture('smuggler'));
      pristine = (await probe(registry)).probe;
    });
    afterAll(async () => {
      await registry.close();
    });

    it('gets a new instance that holds nothing the evicted one held', async () => {
      const metrics = createMetrics(registry);
      try {
        // A plant a reset could undo (memory its size, no handle): its instance would otherwise become the spare.
        const planted = await registry.execute('plant', { secret: 'evicted-secret', grow: false, print: false });
        expect(planted.isError).toBe(false);
        await sleep(600);
        const { probe: seen, events, reinstantiated, evictions } = await probe(registry);
        expect(reinstantiated).toBe(true);
        expect(evictions).toBeGreaterThanOrEqual(1);
        expect(seen).toEqual(pristine);
        expect(JSON.stringify(events)).not.toContain('evicted-secret');
        const text = await metrics.metrics();
        expect(text).toContain('toolhost_instance_reinstantiations_total{tool="probe"} 1');
        expect(text).toMatch(/toolhost_instance_evictions_total\{tool="probe"\} [1-9]/);
        expect(text).toMatch(/toolhost_limit_hits_total\{tool="probe",limit="memory_budget_mb"\} [1-9]/);
      } finally {
        metrics.close();
      }
    });

    it('keeps a component called within the idle time', async () => {
      await probe(registry);
      const again = await probe(registry);
      expect(again.reinstantiated).toBeUndefined();
      expect(again.probe).toEqual(pristine);
    });
  });

  describe('over the memory budget', () => {
    let registry: ToolRegistry;
    let pristine: Probe;

    beforeAll(async () => {
      // One worker with 1 MiB: a componentize-js instance (~9.5 MB of memory) alone is over it.
      registry = makeRegistry({ sandbox: { containment, memoryBudgetMb: 1, idleReleaseMs: 0 } });
      await registry.registerWasmTools([fixture('smuggler'), example('text')]);
      pristine = (await probe(registry)).probe;
    }, 120_000);
    afterAll(async () => {
      await registry.close();
    });

    it('drops the least recently called component\'s instance for the current one\'s, and the dropped one comes back new', async () => {
      const planted = await registry.execute('plant', { secret: 'budget-secret', grow: false, print: false });
      expect(planted.isError).toBe(false);
      // The JS call's instance takes the worker over its budget: the smuggler's (the used one, or its spare) goes.
      const js = await registry.execute('js_echo', { text: 'hi' });
      expect(js.isError).toBe(false);
      const afterJs = await registry.execute('js_echo', { text: 'again' });
      const evicted = (js.accounting?.evictions ?? 0) + (afterJs.accounting?.evictions ?? 0);
      expect(evicted).toBeGreaterThanOrEqual(1);
      const { probe: seen, events, reinstantiated, evictions } = await probe(registry);
      expect(reinstantiated).toBe(true);
      expect(seen).toEqual(pristine);
      expect(JSON.stringify(events)).not.toContain('budget-secret');
      // The smuggler's call took the JS component's instances in turn.
      expect(evictions).toBeGreaterThanOrEqual(1);
      const back = await registry.execute('js_echo', { text: 'back' });
      expect(back.isError).toBe(false);
      expect(back.accounting?.reinstantiated).toBe(true);
    }, 60_000);
  });
});

// componentize-js (fixtures/guests/js/js_smuggler): module state, globalThis, closures, prototypes, a Map and the heap.
describe('an evicted JS component\'s next call', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { idleReleaseMs: 100 } });
    await registry.registerWasmTools(fixture('js_smuggler'));
  }, 120_000);
  afterAll(async () => {
    await registry.close();
  });

  it('sees none of what the evicted instance held', async () => {
    const nothing = { module: null, global: null, closure: null, proto: null, map: null, bulk: null, calls: 1 };
    expect((await registry.execute('probe', {})).structuredContent).toEqual(nothing);
    // A plant a reset could undo: without the eviction its instance would be the next call's (restored).
    expect((await registry.execute('plant', { secret: 'js-evicted' })).isError).toBe(false);
    await sleep(600);
    const probed = await registry.execute('probe', {});
    expect(probed.accounting?.reinstantiated).toBe(true);
    expect(probed.structuredContent).toEqual(nothing);
  }, 60_000);
});
