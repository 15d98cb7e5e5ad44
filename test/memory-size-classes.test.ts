/**
 * Memory caps come in size classes, and a caller's variants count in the
 * workers' memory budget (issue 36, M8): before, each distinct `memory_mb` a
 * caller asked for compiled and kept a variant of the component's modules
 * forever (~37 MiB for a JS tool; 20 values held +745 MiB), uncounted by
 * `memory_budget_mb`. A cap the configuration does not name is rounded down
 * to a power of two (never above what was asked, the grant or the ceiling).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { DEFAULT_POLICY_DEFAULTS, resolveBudgets } from '../host/policy/execution-policy.js';
import { memorySizeClass } from '../host/policy/memory-classes.js';
import { MemoryBudget, type BudgetedRuntime } from '../host/sandbox/worker/memory-budget.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const MIB = 1024 * 1024;

describe('memory size classes', () => {
  it('round a caller\'s cap down to a power of two, and keep the caps the configuration names', () => {
    expect(memorySizeClass(100, [])).toBe(64);
    expect(memorySizeClass(64, [])).toBe(64);
    expect(memorySizeClass(1, [])).toBe(1);
    expect(memorySizeClass(4095, [])).toBe(2048);
    expect(memorySizeClass(100, [256, 100])).toBe(100);
    // 20 distinct requests make at most 4 classes.
    expect(new Set(Array.from({ length: 20 }, (_, i) => memorySizeClass(20 + i * 9, []))).size).toBeLessThanOrEqual(4);
  });

  it('never give a call more than it asked for, its grant or the host ceiling', () => {
    const defaults = DEFAULT_POLICY_DEFAULTS;
    expect(resolveBudgets({ memoryMb: 100 }, defaults).memoryMb).toBe(64);
    expect(resolveBudgets({ memoryMb: 512 }, defaults, { memoryMb: 24 }).memoryMb).toBe(24);
    expect(resolveBudgets({ memoryMb: 20 }, defaults, { memoryMb: 24 }).memoryMb).toBe(16);
    expect(resolveBudgets({}, defaults).memoryMb).toBe(defaults.memoryMb);
    expect(resolveBudgets({ memoryMb: 100 }, defaults, {}, { memoryMb: 100 }).memoryMb).toBe(100);
    expect(resolveBudgets({ memoryMb: 3000 }, { ...defaults, maxMemoryMb: 3000 }).memoryMb).toBe(3000);
  });
});

describe('a worker\'s memory budget over a caller\'s variants', () => {
  it('counts a variant\'s code and drops the least recently called variant whole past the budget', () => {
    const budget = new MemoryBudget(100 * MIB, 0);
    const dropped: string[] = [];
    const variant = (name: string): BudgetedRuntime => ({ codeBytes: 36 * MIB, drop: () => { dropped.push(name); return true; } });
    const load: BudgetedRuntime = {};
    const [a, b, c] = [variant('a'), variant('b'), variant('c')];
    budget.touch(load, 1);
    for (const [i, runtime] of [a, b, c].entries()) {
      budget.touch(runtime, 2 + i);
      budget.enforce(runtime);
    }
    expect(dropped).toEqual(['a']);
    expect(budget.bytes).toBe(72 * MIB);
    budget.touch(a, 10); // a comes back (a new runtime in the worker: the old one was forgotten)
    budget.enforce(a);
    expect(dropped).toEqual(['a', 'b']);
  });

  it('drops an idle variant whole on the idle sweep', () => {
    const budget = new MemoryBudget(1024 * MIB, 1000);
    let dropped = false;
    const runtime: BudgetedRuntime = { codeBytes: 36 * MIB, drop: () => { dropped = true; return true; } };
    budget.touch(runtime, 0);
    expect(budget.sweep(500)).toBe(0);
    expect(budget.sweep(2000)).toBe(1);
    expect(dropped).toBe(true);
    expect(budget.bytes).toBe(0);
  });
});

describe.runIf(hasCGuests)('a caller asking for many distinct memory caps', () => {
  let registry: ToolRegistry;
  const compile = WebAssembly.compile;
  let compiles = 0;
  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('hostile'));
    WebAssembly.compile = ((...args: Parameters<typeof compile>) => {
      compiles += 1;
      return compile(...args);
    }) as typeof compile;
  });
  afterAll(async () => {
    WebAssembly.compile = compile;
    await registry.close();
  });

  it('compiles at most one variant per size class, each cap at most what was asked', async () => {
    // What one new variant costs in compiles (a component may have several core modules).
    compiles = 0;
    await registry.execute('memory_bomb', { mb: 1 }, { policy: { memory_mb: 8 } });
    const perVariant = compiles;
    expect(perVariant).toBeGreaterThan(0);
    compiles = 0;
    const caps = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const asked = 17 + i * 2; // 17..55 MiB: the classes 16 and 32
      const result = await registry.execute('memory_bomb', { mb: 4096 }, { policy: { memory_mb: asked } });
      expect(result.error, `memory_mb ${asked}`).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED' });
      const { capBytes } = result.error?.details as { capBytes: number };
      expect(capBytes).toBeLessThanOrEqual(asked * MIB);
      caps.add(capBytes);
    }
    expect(caps.size).toBeLessThanOrEqual(2);
    expect(compiles).toBeLessThanOrEqual(2 * perVariant);
  });

  it('still enforces a call\'s cap: a guest growing past it ends MEMORY_LIMIT_EXCEEDED, one below it succeeds', async () => {
    const over = await registry.execute('memory_bomb', { mb: 4096 }, { policy: { memory_mb: 64 } });
    expect(over.error).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED', details: { capBytes: 64 * MIB } });
    const under = await registry.execute('memory_bomb', { mb: 16 }, { policy: { memory_mb: 64 } });
    expect(under.structuredContent).toMatchObject({ grown_mb: 16 });
  });
});
