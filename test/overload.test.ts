/**
 * The sandbox's one queue (host/sandbox/task-queue.ts), in both containments: the same limit (threads + max_queue),
 * the same OVERLOADED refusal, the same queueSize in the pool's stats; and the queue itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { TaskQueue } from '../host/sandbox/task-queue.js';
import { CONTAINMENTS, collect, fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests).each(CONTAINMENTS)('a full pool (%s containment)', (containment) => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ cancelGraceMs: 50, sandbox: { threads: 1, maxQueue: 1, containment } });
    await registry.registerWasmTools(fixture('counter'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('answers OVERLOADED when the queue is full, counts what waits in its stats, and serves again once it drains', async () => {
    const busy = registry.stream('loop', {}, { callId: 'busy' });
    const busyEvents = collect(busy);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(registry.sandboxStats()?.queueSize).toBe(0);
    const queued = registry.execute('counter', {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(registry.sandboxStats()?.queueSize).toBe(1);
    const refused = await registry.execute('counter', {});
    expect(refused.error).toMatchObject({ code: 'OVERLOADED', message: 'the sandbox queue is full (1 waiting for 1 workers); try again later' });
    expect(registry.cancel('busy')).toBe('CANCELLED');
    expect((await busyEvents).at(-1)).toMatchObject({ code: 'CANCELLED' });
    expect((await queued).structuredContent).toEqual({ count: 1 });
    expect((await registry.execute('counter', {})).structuredContent).toEqual({ count: 1 });
    expect(registry.sandboxStats()?.queueSize).toBe(0);
  });
});

describe('the sandbox queue', () => {
  it('accepts threads + maxQueue tasks, then refuses with OVERLOADED until one is given back', () => {
    const queue = new TaskQueue<string>(2, 1);
    for (let i = 0; i < 3; i += 1) {
      expect(queue.refusal()).toBeUndefined();
      queue.accept();
    }
    expect(queue.size).toBe(1);
    expect(queue.refusal()?.code).toBe('OVERLOADED');
    queue.giveBack();
    expect(queue.refusal()).toBeUndefined();
    expect(queue.size).toBe(0);
  });

  it('keeps waiting tasks in order; one taken back leaves from wherever it is; returned ones go first', () => {
    const queue = new TaskQueue<string>(1, 10);
    for (const task of ['a', 'b', 'c', 'd']) queue.push(task);
    expect(queue.remove('c')).toBe(true);
    expect(queue.remove('c')).toBe(false);
    expect(queue.shift()).toBe('a');
    queue.returnToFront(['x', 'y']);
    expect(queue.head()).toBe('x');
    expect(queue.takeAll()).toEqual(['x', 'y', 'b', 'd']);
    expect(queue.length).toBe(0);
  });
});
