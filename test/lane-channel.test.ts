/**
 * A worker's lane, both real ends (transport/host-end.ts on this thread, transport/worker-end.ts in a worker thread built
 * into dist/): everything crosses in the order it was sent, whichever way it travels. Tasks go on the port or in the task
 * ring; each task's events and host calls go on the port and its answer in the answer ring (or on the port when the ring
 * is full); host calls block the worker while more tasks arrive. The pool reads the answer ring at every turn (as while
 * it polls for a short call), and at times in a loop that reads no port message, so an answer is there to be read before
 * the events posted ahead of it: it must wait for them. Before the lane, the pool waited for a task's events by counting them (WorkerAccounting.messages).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { LaneAnswer, TaskWire, WorkerMessage } from '../host/sandbox/protocol.js';
import { HostEnd } from '../host/sandbox/transport/host-end.js';
import { isHello } from '../host/sandbox/transport/lane-codec.js';
import { root } from './helpers.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const dist = (file: string): string => pathToFileURL(join(root, 'dist', 'host', 'sandbox', file)).href;

// The worker: each task sends its events, maybe asks the host (and reports the answer as an event), then answers.
const workerSource = `
  const { workerData } = require('node:worker_threads');
  (async () => {
    const { WorkerEnd } = await import(workerData.end);
    const end = WorkerEnd.hello(new SharedArrayBuffer(8), (task) => {
      const taskId = Array.isArray(task) ? task[0] : task.taskId;
      const plan = JSON.parse(Array.isArray(task) ? task[6] : task.args);
      for (let i = 0; i < plan.events; i += 1) end.event(taskId, { type: 'progress', pct: i });
      if (plan.ask) {
        const value = end.request(taskId, { op: 'get-state', key: String(taskId) }, 10000);
        end.event(taskId, { type: 'log', level: 'info', message: String(value), source: 'guest' });
      }
      end.answer(taskId, { ok: true, value: String(taskId), accounting: { startedAt: 0, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId: 1 } });
    });
  })();
`;

describe("a worker's lane", () => {
  it('delivers every task in order, and each task its events, host calls and answer in the order the worker sent them', async () => {
    const worker = new Worker(workerSource, { eval: true, workerData: { end: dist('transport/worker-end.js') } });
    closers.push(() => worker.terminate());
    const seen = new Map<number, string[]>();
    const answers: number[] = [];
    const late: string[] = [];
    const note = (taskId: number, what: string): void => {
      if (answers.includes(taskId)) late.push(`task ${taskId}: ${what} after its answer`);
      const list = seen.get(taskId) ?? [];
      list.push(what);
      seen.set(taskId, list);
    };
    let wake: (() => void) | undefined;
    let end: HostEnd | undefined;
    const opened = new Promise<HostEnd>((resolve) => {
      worker.on('message', (post: unknown) => {
        if (!isHello(post)) return;
        end = HostEnd.fromHello(post, {
          answer: (answer: LaneAnswer) => {
            answers.push(answer.taskId);
            wake?.();
          },
          event: (taskId: number, event: WorkerMessage) => {
            if (event.type === 'rpc') {
              note(taskId, 'rpc');
              // Answered a little later, after more tasks were sent: the blocked worker keeps them in their place.
              const { id } = event;
              setTimeout(() => end!.reply({ id, ok: true, value: `state-${taskId}` }), taskId % 3);
            } else if (event.type === 'progress') {
              note(taskId, `progress ${event.pct}`);
            } else if (event.type === 'log') {
              note(taskId, `log ${event.message}`);
            }
          },
          closing: () => {},
          closed: () => {},
        });
        resolve(end);
      });
    });
    const lane = await opened;
    // Read the answer ring at every turn, as the pool does while it polls for a short call's answer.
    lane.polling(true);
    let polling = true;
    const poll = (): void => {
      lane.collect();
      if (polling) setImmediate(poll);
    };
    setImmediate(poll);
    closers.push(() => (polling = false));

    const control = { buffer: new SharedArrayBuffer(64), bufferId: 0, offset: 0 };
    const total = 1500;
    const plans = new Map<number, { events: number; ask: boolean }>();
    for (let taskId = 1; taskId <= total; taskId += 1) {
      while (taskId - answers.length > 6) await new Promise<void>((resolve) => (wake = resolve));
      const plan = { events: taskId % 4, ask: taskId % 7 === 0 };
      plans.set(taskId, plan);
      const args = JSON.stringify(plan);
      // Mostly calls (in the ring once the control buffer went along), now and then a task that travels on the port.
      const wire = taskId % 11 === 0
        ? ({ kind: 'describe', componentId: 'c', memoryMb: 1, moduleUrl: 'file:///c.mjs', taskId, control, submittedAt: 0, args } as TaskWire)
        : ({ kind: 'call', taskId, control, submittedAt: 0, profile: 1, args, context: { callId: `c-${taskId}` } } as TaskWire);
      lane.send(wire);
      if (taskId % 3 === 0) {
        // Without yielding to the event loop (so no port message is read), read the answer ring for a while: the answer
        // is there before the events posted ahead of it are read, and must not be handed over before them.
        const until = performance.now() + 1;
        while (performance.now() < until && !answers.includes(taskId)) lane.collect();
      }
      if (taskId % 5 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const deadline = Date.now() + 30_000;
    while (answers.length < total && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    expect(answers).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(late).toEqual([]);
    for (const [taskId, plan] of plans) {
      const expected = Array.from({ length: plan.events }, (_, i) => `progress ${i}`);
      if (plan.ask) expected.push('rpc', `log state-${taskId}`);
      expect(seen.get(taskId) ?? [], `task ${taskId}`).toEqual(expected);
    }
  });
});
