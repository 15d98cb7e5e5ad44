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
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { example, makeRegistry } from './helpers.js';

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
});
