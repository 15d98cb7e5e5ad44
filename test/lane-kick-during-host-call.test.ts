/**
 * A kick is never lost to a host call. A task that runs after its drain (the first call of a component awaits its glue;
 * a task that waited for its turn runs later) does its host calls while the worker listens: the pool, seeing it listen,
 * puts its next call in the ring and posts a kick, and the blocked worker reads that kick from its port while it waits
 * for the host's answer. The call in the ring must still run. Before the fix the kick was dropped there: the call stayed
 * in the ring of an idle worker until something stopped the worker (the 100,000-call soak wedged on it: every worker
 * held one, the pool's queue grew to hundreds and honest calls timed out waiting for a worker).
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

// The worker: a task planned `later` runs at the next turn, after the lane's drain (as an awaiting first call does), and asks the host.
const workerSource = `
  const { workerData } = require('node:worker_threads');
  (async () => {
    const { WorkerEnd } = await import(workerData.end);
    const accounting = { startedAt: 0, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId: 1 };
    const end = WorkerEnd.hello(new SharedArrayBuffer(8), (task) => {
      const taskId = Array.isArray(task) ? task[0] : task.taskId;
      const plan = JSON.parse(Array.isArray(task) ? task[6] : task.args);
      const run = () => {
        if (plan.ask) end.request(taskId, { op: 'get-state', key: String(taskId) }, 10000);
        end.answer(taskId, { ok: true, value: String(taskId), accounting });
      };
      if (plan.later) setImmediate(run);
      else run();
    });
  })();
`;

async function openLane(onRpc: (lane: HostEnd, taskId: number, id: number) => void, answers: number[]): Promise<HostEnd> {
  const worker = new Worker(workerSource, { eval: true, workerData: { end: dist('transport/worker-end.js') } });
  closers.push(() => worker.terminate());
  return new Promise<HostEnd>((resolve) => {
    worker.on('message', (post: unknown) => {
      if (!isHello(post)) return;
      const lane: HostEnd = HostEnd.fromHello(post, {
        answer: (answer: LaneAnswer) => answers.push(answer.taskId),
        event: (taskId: number, event: WorkerMessage) => {
          if (event.type === 'rpc') onRpc(lane, taskId, event.id);
        },
        closing: () => {},
        closed: () => {},
      });
      resolve(lane);
    });
  });
}

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

const control = { buffer: new SharedArrayBuffer(64), bufferId: 0, offset: 0 };
const call = (taskId: number, plan: object): TaskWire => ({ kind: 'call', taskId, control, submittedAt: 0, profile: 1, args: JSON.stringify(plan), context: { callId: `c-${taskId}` } }) as TaskWire;

describe('a kick read by a worker blocked in a host call', () => {
  it('still runs the call the pool put in the ring meanwhile', async () => {
    const answers: number[] = [];
    const lane = await openLane((end, taskId, id) => {
      // While task 1 waits for this answer, its worker listens: task 2 goes in the ring, with a kick on the port ahead of the answer.
      if (taskId === 1) end.send(call(2, {}));
      setTimeout(() => end.reply({ id, ok: true, value: 'v' }), 20);
    }, answers);
    lane.polling(true);
    const poll = setInterval(() => lane.collect(), 1);
    closers.push(() => clearInterval(poll));
    lane.send(call(1, { later: true, ask: true }));
    await until(() => answers.length === 2, 5000);
    expect(answers).toEqual([1, 2]);
  });

  it('control: a call sent while its worker waits in its event loop runs at once', async () => {
    const answers: number[] = [];
    const lane = await openLane((end, _taskId, id) => end.reply({ id, ok: true, value: 'v' }), answers);
    lane.polling(true);
    const poll = setInterval(() => lane.collect(), 1);
    closers.push(() => clearInterval(poll));
    lane.send(call(1, { ask: true }));
    await until(() => answers.length === 1, 5000);
    lane.send(call(2, {}));
    await until(() => answers.length === 2, 5000);
    expect(answers).toEqual([1, 2]);
  });
});
