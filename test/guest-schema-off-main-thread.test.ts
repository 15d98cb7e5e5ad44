/**
 * Issue 36, M1: a guest's input schema is compiled and its args validated in the worker that runs the call,
 * under the call's budgets, never on the main thread. The hostile schemas use draft 2020-12 keywords the
 * cost walker (host/core/schema-cost.ts) does not model, so these tests show safety without it: before,
 * `prefix_dag` stalled the main thread for as long as ajv ran (2^30 checks: minutes).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, fixture, hasCGuests, makeRegistry } from './helpers.js';

/** Longest the main thread may be held while a hostile validation runs (ms): generous for a loaded machine; before the fix it was seconds to minutes. */
const STALL_MS = 250;

/** Nested arrays `depth` deep around a string: honest args for `dynamic_ref`. */
function nested(depth: number): { tree: unknown } {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = [value];
  return { tree: value };
}

/** Run `work` while measuring the main thread's longest event-loop delay (ms). */
async function withStallProbe<T>(work: () => Promise<T>): Promise<{ value: T; maxStallMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  try {
    const value = await work();
    return { value, maxStallMs: histogram.max / 1e6 };
  } finally {
    histogram.disable();
  }
}

describe.runIf(hasCGuests).each(CONTAINMENTS)('guest schemas are validated off the main thread (%s containment)', (containment) => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { threads: 2, containment } });
    await registry.registerWasmTools(fixture('schema_bomb'));
    // The first call on each worker loads the checker; warm both so the probes below measure the calls.
    await Promise.all([registry.execute('plain', { text: 'warm' }), registry.execute('plain', { text: 'warm' })]);
  });
  afterAll(async () => {
    await registry.close();
  });

  it('ends an allOf/$ref DAG under prefixItems with honest args at the CPU budget, the main thread never stalled', async () => {
    const { value, maxStallMs } = await withStallProbe(() => registry.execute('prefix_dag', { list: ['x'] }, { policy: { budget_cpu_ms: 300 } }));
    expect(value.error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
    expect(maxStallMs).toBeLessThan(STALL_MS);
  });

  it('ends a $dynamicRef schema over 26-deep honest args at the wall budget, the main thread never stalled', async () => {
    const { value, maxStallMs } = await withStallProbe(() => registry.execute('dynamic_ref', nested(26), { policy: { budget_wall_ms: 500 } }));
    expect(value.error).toMatchObject({ code: 'WALL_TIMEOUT' });
    expect(maxStallMs).toBeLessThan(STALL_MS);
  });

  it('keeps serving honest calls while a hostile validation runs beside them', async () => {
    const hostile = registry.execute('prefix_dag', { list: ['x'] }, { policy: { budget_cpu_ms: 300 } });
    const { value: honest, maxStallMs } = await withStallProbe(async () => {
      const results = [];
      for (let i = 0; i < 20; i++) results.push(await registry.execute('plain', { text: `t${i}` }));
      return results;
    });
    expect(honest.map((result) => result.structuredContent)).toEqual(Array.from({ length: 20 }, (_, i) => ({ text: `t${i}` })));
    expect(maxStallMs).toBeLessThan(STALL_MS);
    expect((await hostile).error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
  });

  it('still refuses args that fail an ordinary schema with INVALID_INPUT and the ajv path, as a rejection', async () => {
    const error = await registry.execute('plain', { text: 42 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { errors: [expect.objectContaining({ path: '/text', keyword: 'type' })] } });
    const events = [];
    for await (const event of registry.stream('plain', {})) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'INVALID_INPUT', stage: 'rejected' });
  });

  it('runs valid calls of the hostile tools when their args are cheap to check', async () => {
    expect((await registry.execute('dynamic_ref', nested(3))).structuredContent).toEqual({ ok: true });
    expect((await registry.execute('prefix_dag', { list: [] })).structuredContent).toEqual({ ok: true });
    expect((await registry.execute('plain', { text: 'hi' })).structuredContent).toEqual({ text: 'hi' });
  });
});
