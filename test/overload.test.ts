/**
 * The sandbox's one queue (host/sandbox/task-queue.ts), in both containments: the same limit (threads + max_queue),
 * the same OVERLOADED refusal, the same queueSize in the pool's stats; each principal's share of it and the turns
 * waiting principals take (a hostile principal that floods the queue); and the queue itself.
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
    expect(refused.error).toMatchObject({ code: 'OVERLOADED', message: 'the sandbox queue is full (1 waiting for 1 workers, host.pool.max_queue); try again later', details: { limit: 'max_queue', max: 1 } });
    expect(registry.cancel('busy')).toBe('CANCELLED');
    expect((await busyEvents).at(-1)).toMatchObject({ code: 'CANCELLED' });
    expect((await queued).structuredContent).toEqual({ count: 1 });
    expect((await registry.execute('counter', {})).structuredContent).toEqual({ count: 1 });
    expect(registry.sandboxStats()?.queueSize).toBe(0);
  });
});

describe.runIf(hasCGuests).each(CONTAINMENTS)('a principal that floods the queue (%s containment)', (containment) => {
  let registry: ToolRegistry;
  const limitHits: string[] = [];

  beforeAll(async () => {
    // One worker, six places in the queue: three for each principal.
    registry = makeRegistry({ cancelGraceMs: 50, sandbox: { threads: 1, maxQueue: 6, containment } });
    await registry.registerWasmTools(fixture('counter'));
    registry.onLimitHit((_tool, limit) => limitHits.push(limit));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('gets its share and no more, and another principal\'s call runs after one of its calls, not after all of them', async () => {
    const mallory = Array.from({ length: 4 }, (_, i) => collect(registry.stream('spin', {}, { callId: `m${i}`, principal: 'mallory' })));
    await expect.poll(() => registry.sandboxStats()?.queueSize, { timeout: 10_000 }).toBe(3);
    // Past its share (one running, three waiting) mallory is refused at once; the queue still has room for others.
    const refused = await registry.execute('counter', {}, { principal: 'mallory' });
    expect(refused.error).toMatchObject({ code: 'OVERLOADED', details: { limit: 'max_queue_per_principal', max: 3 } });
    expect(refused.error?.message).toContain('host.pool.max_queue_per_principal');
    expect(limitHits).toContain('max_queue_per_principal');
    const bob = registry.execute('counter', {}, { principal: 'bob' });
    let bobDone = false;
    void bob.then(() => { bobDone = true; });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(registry.sandboxStats()?.queueSize).toBe(4);
    // Bob's call runs once at most two of mallory's have ended (the one running, and one that may already have been
    // next), not after all four: mallory's are ended one by one until bob's is done.
    let ended = 0;
    while (!bobDone) {
      expect(ended).toBeLessThan(2);
      expect(registry.cancel(`m${ended}`, 'mallory')).toBe('CANCELLED');
      await mallory[ended];
      ended += 1;
      await Promise.race([bob, new Promise((resolve) => setTimeout(resolve, ended === 1 ? 1000 : 10_000))]);
    }
    expect((await bob).structuredContent).toEqual({ count: 1 });
    for (let i = ended; i < 4; i += 1) await expect.poll(() => registry.cancel(`m${i}`, 'mallory'), { timeout: 10_000 }).toBe('CANCELLED');
    for (const events of mallory) expect((await events).at(-1)).toMatchObject({ code: 'CANCELLED' });
    // A queued task whose call was cancelled leaves the queue at its next drain (task-dispatch.ts), not at the cancel.
    await expect.poll(() => registry.sandboxStats()?.queueSize, { timeout: 10_000 }).toBe(0);
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

  it('refuses a principal past its share, which counts its running tasks too, while others still get in', () => {
    const queue = new TaskQueue<string>(1, 4, undefined, 2);
    for (let i = 0; i < 3; i += 1) {
      expect(queue.refusal('mallory')).toBeUndefined();
      queue.accept('mallory');
    }
    expect(queue.refusal('mallory')).toMatchObject({ code: 'OVERLOADED', details: { limit: 'max_queue_per_principal', max: 2 } });
    expect(queue.refusal('bob')).toBeUndefined();
    expect(queue.refusal()).toBeUndefined();
    queue.accept('bob');
    queue.accept();
    expect(queue.refusal('carol')).toMatchObject({ details: { limit: 'max_queue' } });
    queue.giveBack('mallory');
    expect(queue.refusal('mallory')).toBeUndefined();
    // The share never exceeds the queue.
    expect(new TaskQueue<string>(1, 2, undefined, 10).maxQueuePerPrincipal).toBe(2);
  });

  it('serves first the waiting principal with the fewest tasks in service, ties in turn', () => {
    const queue = new TaskQueue<string>(1, 100, (task) => task[0]);
    // mallory has two in service (say, handed to a sandbox process ahead) and one waiting; bob one waiting.
    for (const principal of ['m', 'm', 'm', 'b']) queue.accept(principal);
    queue.push('m3');
    queue.push('b1');
    expect(queue.shift()).toBe('b1');
    expect(queue.shift()).toBe('m3');
  });

  it('serves waiting principals in turn, each one\'s oldest first; alone, a principal\'s tasks go in order', () => {
    const queue = new TaskQueue<string>(1, 100, (task) => task[0]);
    for (const task of ['m1', 'm2', 'm3', 'b1', 'm4', 'c1', 'b2']) queue.push(task);
    expect(queue.length).toBe(7);
    const served: string[] = [];
    for (let head = queue.head(); head !== undefined; head = queue.head()) {
      expect(queue.shift()).toBe(head);
      served.push(head);
    }
    expect(served).toEqual(['m1', 'b1', 'c1', 'm2', 'b2', 'm3', 'm4']);
    for (const task of ['a', 'b', 'c']) queue.push(`x${task}`);
    expect(queue.takeAll()).toEqual(['xa', 'xb', 'xc']);
  });

  it('takes one back from wherever it waits, and puts returned ones (their principals) first', () => {
    const queue = new TaskQueue<string>(1, 100, (task) => task[0]);
    for (const task of ['m1', 'b1', 'm2']) queue.push(task);
    expect(queue.remove('b1')).toBe(true);
    expect(queue.remove('b1')).toBe(false);
    expect(queue.length).toBe(2);
    queue.returnToFront(['b0', 'c0']);
    expect(queue.takeAll()).toEqual(['b0', 'c0', 'm1', 'm2']);
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
