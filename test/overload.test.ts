import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { collect, fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests)('a full pool', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ cancelGraceMs: 50, sandbox: { threads: 1, maxQueue: 1 } });
    await registry.registerWasmTools(fixture('counter'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('answers OVERLOADED when the queue is full, and serves again once it drains', async () => {
    const busy = registry.stream('loop', {}, { callId: 'busy' });
    const busyEvents = collect(busy);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const queued = registry.execute('counter', {});
    const refused = await registry.execute('counter', {});
    expect(refused.error).toMatchObject({ code: 'OVERLOADED' });
    expect(registry.cancel('busy')).toBe('CANCELLED');
    expect((await busyEvents).at(-1)).toMatchObject({ code: 'CANCELLED' });
    expect((await queued).structuredContent).toEqual({ count: 1 });
    expect((await registry.execute('counter', {})).structuredContent).toEqual({ count: 1 });
  });
});
