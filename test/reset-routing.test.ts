/**
 * Where the next call of a tight loop goes in the default isolation: a
 * worker announces the reset of its last instance quick only when its resets
 * are short (host/sandbox/worker/component-runtime.ts). A long one (a
 * componentize-js guest's, ~1 ms) announced quick kept every call on the
 * worker that had just answered, each waiting for the last call's reset,
 * while the other worker sat ready.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { example, makeRegistry } from './helpers.js';

const registries: ToolRegistry[] = [];
afterAll(async () => {
  await Promise.all(registries.map((registry) => registry.close()));
});

describe('a tight loop in the default isolation', () => {
  it('alternates two workers when resets are long (componentize-js), every call on a pristine instance', async () => {
    const registry = makeRegistry({ sandbox: { threads: 2 } });
    registries.push(registry);
    await registry.registerWasmTools(example('text'));
    // Both workers have served and reset a call before the loop counts (the first reset is the one that is timed).
    for (let i = 0; i < 6; i += 1) await Promise.all([registry.execute('js_echo', { text: 'warm' }), registry.execute('js_echo', { text: 'warm' })]);
    const byWorker = new Map<number | undefined, number>();
    for (let i = 0; i < 60; i += 1) {
      const result = await registry.execute('js_echo', { text: `call ${i}` });
      expect(result.isError).toBe(false);
      expect(result.accounting).toMatchObject({ isolation: 'call' });
      expect(['restored', 'prewarmed']).toContain(result.accounting?.instance);
      const worker = result.accounting?.workerThreadId;
      byWorker.set(worker, (byWorker.get(worker) ?? 0) + 1);
    }
    expect(byWorker.size).toBe(2);
    // About half each when idle; under load a reset may outlast the other worker's call now and then.
    for (const count of byWorker.values()) expect(count).toBeGreaterThanOrEqual(6);
  });
});
