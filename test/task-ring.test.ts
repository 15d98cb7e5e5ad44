/** A lane's task ring: calls cross in shared memory exactly as posted, no call is stranded (the kick handshake), and the worker takes ring calls and posted tasks in the order they were sent. */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { LANE_KICK, type CallMessage } from '../host/sandbox/transport/lane-codec.js';
import { RING_SLOTS, TaskRing, type RingCall } from '../host/sandbox/transport/task-ring.js';
import { root } from './helpers.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function call(taskId: number, args: string, callId: string): RingCall {
  return [taskId, undefined, 3, 128, 1732550400123.25, 7, args, callId, undefined];
}

describe('a task ring', () => {
  it('carries a call exactly: numbers, and strings with any code units (lone surrogates included)', () => {
    const pool = new TaskRing();
    const worker = new TaskRing(pool.buffer);
    const strings: Array<[string, string]> = [
      ['{"text":"hello"}', 'c-1'],
      ['{"text":"héllo, 世界 🎉"}', 'ユーザー-id'],
      ['"\ud800"', 'lone-\udc00-surrogate'],
      ['', ''],
    ];
    strings.forEach(([args, callId], i) => expect(pool.push(call(i + 1, args, callId))).toBe(true));
    strings.forEach(([args, callId], i) => expect(worker.take()).toEqual(call(i + 1, args, callId)));
    expect(worker.take()).toBeUndefined();
    expect(worker.pending).toBe(false);
  });

  it('refuses a call when full, and takes one again once the worker has read a slot', () => {
    const pool = new TaskRing();
    const worker = new TaskRing(pool.buffer);
    for (let i = 0; i < RING_SLOTS; i += 1) expect(pool.push(call(i, '{}', `c-${i}`))).toBe(true);
    expect(pool.push(call(99, '{}', 'c-99'))).toBe(false);
    expect(worker.take()?.[0]).toBe(0);
    expect(pool.push(call(100, '{}', 'c-100'))).toBe(true);
    const rest = [];
    for (let task = worker.take(); task; task = worker.take()) rest.push(task[0]);
    expect(rest).toEqual([...Array.from({ length: RING_SLOTS - 1 }, (_, i) => i + 1), 100]);
  });

  it("carries a call's conversation, session and agent, and only those of its extras", () => {
    const pool = new TaskRing();
    const worker = new TaskRing(pool.buffer);
    const named: RingCall = [1, undefined, 3, 128, 5.5, 7, '{}', 'c-1', { conversationKey: 'p\u0000conv', conversationId: 'conv', sessionId: 'sess', agentName: 'agent' }];
    const some: RingCall = [2, undefined, 3, 128, 5.5, 7, '{}', 'c-2', { conversationId: '' }];
    expect(pool.carries(named) && pool.push(named)).toBe(true);
    expect(pool.carries(some) && pool.push(some)).toBe(true);
    expect(worker.take()).toEqual(named);
    expect(worker.take()).toEqual(some);
  });

  it('leaves on the port a carried buffer, a profile, an environment, a worktree, and strings too long for a slot', () => {
    const ring = new TaskRing();
    const plain: CallMessage = [1, undefined, 0, 0, 0, 1, '{}', 'c-1', undefined];
    expect(ring.carries(plain)).toBe(true);
    expect(ring.carries([1, new SharedArrayBuffer(8), 0, 0, 0, 1, '{}', 'c-1', undefined])).toBe(false);
    expect(ring.carries([1, undefined, 0, 0, 0, 1, '{}', 'c-1', { env: [['A', '1']] }])).toBe(false);
    expect(ring.carries([1, undefined, 0, 0, 0, 1, '{}', 'c-1', { filesystem: { root: '/w', readOnly: true } }])).toBe(false);
    expect(ring.carries([1, undefined, 0, 0, 0, 1, '{}', 'c-1', { conversationId: 'c', fixed: { componentId: 'c', memoryMb: 1, moduleUrl: 'u', tool: 't', isolation: 'call', limits: { stdioBytes: 1, maxEvents: 1, maxEventBytes: 1, maxResultBytes: 1, maxHostCalls: 1, maxHandles: 1 }, network: 'DENY_ALL' } }])).toBe(false);
    expect(ring.carries([1, undefined, 0, 0, 0, 1, 'x'.repeat(1000), 'c-1', undefined])).toBe(false);
    expect(ring.carries([1, undefined, 0, 0, 0, 1, '{}', 'c-1', { conversationId: 'x'.repeat(1000) }])).toBe(false);
  });

  it('says whether the worker listens', () => {
    const pool = new TaskRing();
    const worker = new TaskRing(pool.buffer);
    expect(pool.listening).toBe(false);
    worker.listen(true);
    expect(pool.listening).toBe(true);
    worker.listen(false);
    expect(pool.listening).toBe(false);
  });

  it('asks for one kick a return of the worker to its event loop', () => {
    const pool = new TaskRing();
    const worker = new TaskRing(pool.buffer);
    expect(pool.claimKick()).toBe(false);
    worker.listen(true);
    expect(pool.claimKick()).toBe(true);
    // Kicked and not awake yet: still listening, and the calls put in meanwhile need no kick of their own.
    expect(pool.listening).toBe(true);
    expect(pool.claimKick()).toBe(false);
    worker.listen(false);
    expect(pool.claimKick()).toBe(false);
    worker.listen(true);
    expect(pool.claimKick()).toBe(true);
  });

  it('refuses a buffer of another size', () => {
    expect(() => new TaskRing(new SharedArrayBuffer(64))).toThrow(RangeError);
  });
});

describe('a worker reading its lane', () => {
  // The worker's real end of the lane (built into dist/ by `npm install`) in another thread, against the pool's handshake.
  const workerSource = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const { WorkerEnd } = await import(workerData.end);
      let seed = 1;
      new WorkerEnd(workerData.port, (task) => {
        // Now and then busy for a while, so the pool puts calls in the ring of a worker that runs one.
        seed = (seed * 1103515245 + 12345) % 2147483648;
        const until = performance.now() + (seed % 4 === 0 ? (seed % 50) / 1000 : 0);
        while (performance.now() < until);
        parentPort.postMessage(Array.isArray(task) ? task[0] : task.taskId);
      }, { ring: workerData.buffer });
      parentPort.postMessage('ready');
    })();
  `;

  it('runs every call once and in order, whether the pool kicked it or it was busy or the ring was full (no call stranded)', async () => {
    const { port1, port2 } = new MessageChannel();
    const ring = new TaskRing();
    const dist = (file: string): string => pathToFileURL(join(root, 'dist', 'host', 'sandbox', file)).href;
    const worker = new Worker(workerSource, { eval: true, workerData: { port: port2, buffer: ring.buffer, end: dist('transport/worker-end.js') }, transferList: [port2] });
    closers.push(() => worker.terminate(), () => port1.close());
    const ran: number[] = [];
    let wake: (() => void) | undefined;
    worker.on('message', (message: number | string) => {
      if (typeof message === 'number') ran.push(message);
      wake?.();
    });
    await new Promise<void>((resolve) => (wake = resolve));

    const total = 6000;
    let kicks = 0;
    let posted = 0;
    // Every message on the port, kicks included: a ring call names how many came before it (as the pool's end does).
    let onPort = 0;
    for (let taskId = 1; taskId <= total; taskId += 1) {
      // At most a ring's worth in flight; a pause now and then lets the worker go back to its event loop.
      while (taskId - ran.length > RING_SLOTS + 2) await new Promise<void>((resolve) => (wake = resolve));
      const message = call(taskId, JSON.stringify({ taskId }), `c-${taskId}`);
      if (taskId % 97 === 0 || taskId % 89 === 1 || !ring.push(message, onPort)) {
        // What does not go in the ring is posted, as the pool does: right behind calls still in the ring.
        port1.postMessage({ kind: 'describe', taskId });
        onPort += 1;
        posted += 1;
      } else if (ring.claimKick()) {
        port1.postMessage(LANE_KICK);
        onPort += 1;
        kicks += 1;
      }
      if (taskId % 13 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    // A liveness bound, not a speed check: a stranded call never arrives.
    const deadline = Date.now() + 30_000;
    while (ran.length < total && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    expect(ran.length).toBe(total);
    // In the order they were sent: a posted task does not overtake the ring calls sent before it, nor they it.
    expect(ran).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // Every path was taken: kicks to a listening worker, calls taken without one, posts.
    expect(kicks).toBeGreaterThan(0);
    expect(total - posted - kicks).toBeGreaterThan(0);
    expect(posted).toBeGreaterThan(0);

    // One call at a time, each put in the ring as soon as the last one's answer arrives, while the worker
    // finishes that call and goes back to listening. A stranded call never runs. (The handshake's window,
    // between the worker's last look and its `listen`, is too narrow to hit on purpose from outside.)
    for (let taskId = total + 1; taskId <= total + 3000; taskId += 1) {
      expect(ring.push(call(taskId, '{}', `c-${taskId}`), onPort)).toBe(true);
      if (ring.claimKick()) {
        port1.postMessage(LANE_KICK);
        onPort += 1;
      }
      const answered = await new Promise<boolean>((resolve) => {
        wake = () => resolve(true);
        setTimeout(() => resolve(ran.at(-1) === taskId), 5_000);
      });
      expect(answered && ran.at(-1) === taskId, `call ${taskId} ran`).toBe(true);
    }
  });
});
