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
});
