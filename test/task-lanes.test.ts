/**
 * Task lanes and dispatch (host/sandbox/transport/task-lanes.ts, task-dispatch.ts), on real MessagePorts with this test as the
 * worker's end: answers find their task, a closed lane fails every unanswered task (as stopped or as exited), a task
 * waits in order until a lane frees up, and a task taken back while it waits never reaches a worker. The pool's own
 * behaviour on real workers (kills, deaths, tasks held behind others) is covered by worker-holdings and the budget tests.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlSlots } from '../host/sandbox/transport/control-slots.js';
import { PoolTask } from '../host/sandbox/pool-task.js';
import { CLAIM_ABANDONED, CONTROL_CLAIM, type LaneAnswer, type TaskWire } from '../host/sandbox/protocol.js';
import { TaskDispatch } from '../host/sandbox/task-dispatch.js';
import { ComponentHomes, type ComponentHome } from '../host/sandbox/component-homes.js';
import type { ProfileEntry } from '../host/sandbox/transport/task-profiles.js';
import { LaneBell } from '../host/sandbox/transport/lane-bell.js';
import { LaneClosed, TaskLanes } from '../host/sandbox/transport/task-lanes.js';
import { WorkerHoldings } from '../host/sandbox/worker-holdings.js';

const slots = new ControlSlots();
const opened: MessagePort[] = [];

afterEach(() => {
  for (const port of opened.splice(0)) port.close();
});

/** A lane's two ends: the pool's (given to TaskLanes) and the worker's (this test). */
function channel(): { pool: MessagePort; worker: MessagePort } {
  const { port1, port2 } = new MessageChannel();
  opened.push(port1, port2);
  return { pool: port1, worker: port2 };
}

function task(taskId: number): { task: PoolTask; wire: TaskWire } {
  const slot = slots.acquire();
  const poolTask = new PoolTask(taskId, slot, { onMessage: () => {}, rpc: async () => undefined }, () => undefined);
  const wire: TaskWire = { kind: 'describe', componentId: 'c', memoryMb: 16, moduleUrl: 'file:///c.mjs', taskId, control: slot.ref, submittedAt: 0 };
  return { task: poolTask, wire };
}

/** The worker's end answers each task it gets with `answer(wire)`; returns the tasks it got, in order. */
function answering(worker: MessagePort, answer: (wire: TaskWire) => LaneAnswer | undefined): TaskWire[] {
  const got: TaskWire[] = [];
  worker.on('message', (wire: TaskWire) => {
    got.push(wire);
    const reply = answer(wire);
    if (reply) worker.postMessage(reply);
  });
  return got;
}

const outcome = (taskId: number): LaneAnswer => ({
  taskId,
  answer: { ok: true, tools: [], accounting: { startedAt: 0, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId: 1 } },
});

describe('task lanes', () => {
  it('resolves each task with its own answer, whatever the order of the answers', async () => {
    const freed: number[] = [];
    const lanes = new TaskLanes({ freed: (threadId) => freed.push(threadId), stopping: () => false });
    const { pool, worker } = channel();
    lanes.open(7, pool);
    const held: TaskWire[] = [];
    answering(worker, (wire) => {
      held.push(wire);
      // Answer both at once, newest first.
      if (held.length === 2) for (const w of [...held].reverse()) worker.postMessage(outcome(w.taskId));
      return undefined;
    });
    const first = lanes.post(7, task(1).wire);
    const second = lanes.post(7, task(2).wire);
    expect(lanes.load(7)).toBe(2);
    const answers = await Promise.all([first, second]);
    expect(answers.map((a) => ('ok' in a ? a.ok : a))).toEqual([true, true]);
    expect(lanes.load(7)).toBe(0);
    expect(freed).toEqual([7, 7]);
    const utilization = lanes.utilization(1);
    expect(utilization).toBeGreaterThan(0);
    expect(utilization).toBeLessThanOrEqual(1);
  });

  it('fails what its task threw, and goes on', async () => {
    const lanes = new TaskLanes({ freed: () => {}, stopping: () => false });
    const { pool, worker } = channel();
    lanes.open(1, pool);
    answering(worker, (wire) => (wire.taskId === 1 ? { taskId: 1, error: 'the worker broke' } : outcome(wire.taskId)));
    await expect(lanes.post(1, task(1).wire)).rejects.toThrow('the worker broke');
    await expect(lanes.post(1, task(2).wire)).resolves.toMatchObject({ ok: true });
  });

  it('fails a task that cannot be posted, and does not count it as the worker\'s', async () => {
    const lanes = new TaskLanes({ freed: () => {}, stopping: () => false });
    const { pool, worker } = channel();
    lanes.open(2, pool);
    answering(worker, (wire) => outcome(wire.taskId));
    const unclonable = { ...task(1).wire, args: (() => {}) as unknown as string };
    await expect(lanes.post(2, unclonable)).rejects.toThrow(/could not be cloned/);
    expect(lanes.load(2)).toBe(0);
    await expect(lanes.post(2, task(2).wire)).resolves.toMatchObject({ ok: true });
  });

  it('fails every unanswered task when its worker goes away: as stopped when the pool stopped it, else as exited', async () => {
    let stopping = true;
    const lanes = new TaskLanes({ freed: () => {}, stopping: () => stopping });
    const a = channel();
    lanes.open(3, a.pool);
    const pending = [lanes.post(3, task(1).wire), lanes.post(3, task(2).wire)];
    a.worker.close();
    for (const failed of pending) {
      const error = await failed.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LaneClosed);
      expect((error as LaneClosed).stopped).toBe(true);
    }
    expect([...lanes.threads()]).toEqual([]);
    await expect(lanes.post(3, task(3).wire)).rejects.toBeInstanceOf(LaneClosed);

    stopping = false;
    const b = channel();
    lanes.open(4, b.pool);
    const lost = lanes.post(4, task(4).wire);
    b.worker.close();
    const error = await lost.catch((e: unknown) => e);
    expect(error).toMatchObject({ stopped: false, message: 'the sandbox worker 4 exited' });
  });
});

describe('task dispatch', () => {
  const idle = { isDying: () => false, isPreparing: () => false, isAwake: () => false };
  const noWaiting = new WorkerHoldings({ averageMs: 0, withinMs: 0 });

  it('queues tasks while no worker fits, and hands them over in order as lanes free up', async () => {
    const dispatch = new TaskDispatch(idle, noWaiting);
    const { pool, worker } = channel();
    // Before any worker said hello: everything waits.
    const tasks = [task(1), task(2), task(3)];
    const answers = tasks.map((t) => dispatch.dispatch(t.task, t.wire));
    const got = answering(worker, (wire) => outcome(wire.taskId));
    dispatch.lanes.open(9, pool);
    dispatch.drain();
    await Promise.all(answers);
    expect(got.map((wire) => wire.taskId)).toEqual([1, 2, 3]);
    expect(tasks.map((t) => t.task.worker)).toEqual([9, 9, 9]);
  });

  it('gives a queued task its caller took back its answer at once, without a worker ever seeing it', async () => {
    const dispatch = new TaskDispatch(idle, noWaiting);
    const { pool, worker } = channel();
    const taken = task(5);
    const queued = dispatch.dispatch(taken.task, taken.wire);
    Atomics.store(taken.task.slot.flags, CONTROL_CLAIM, CLAIM_ABANDONED);
    const got = answering(worker, (wire) => outcome(wire.taskId));
    dispatch.lanes.open(2, pool);
    dispatch.drain();
    await expect(queued).resolves.toEqual({ abandoned: 5 });
    const next = task(6);
    await dispatch.dispatch(next.task, next.wire);
    expect(got.map((wire) => wire.taskId)).toEqual([6]);
  });

  it('prefers an idle worker that is not preparing, and gives a dying one nothing', async () => {
    const states = { isDying: (threadId: number) => threadId === 1, isPreparing: (threadId: number) => threadId === 2, isAwake: () => false };
    const dispatch = new TaskDispatch(states, noWaiting);
    const ends = [channel(), channel(), channel()];
    for (const [i, end] of ends.entries()) {
      dispatch.lanes.open(i + 1, end.pool);
      answering(end.worker, (wire) => outcome(wire.taskId));
    }
    const first = task(10);
    await dispatch.dispatch(first.task, first.wire);
    expect(first.task.worker).toBe(3);
    expect(first.task.toAwakeWorker).toBe(false);
  });

  it('prefers an awake worker (spinning for its next task, or about to) to an idle one before it, and rings its bell after the post', async () => {
    const states = { isDying: () => false, isPreparing: () => false, isAwake: (threadId: number) => threadId === 2 };
    const dispatch = new TaskDispatch(states, noWaiting);
    const bells = [new LaneBell(), new LaneBell()];
    for (const [i, bell] of bells.entries()) {
      const end = channel();
      dispatch.lanes.open(i + 1, end.pool, bell);
      answering(end.worker, (wire) => outcome(wire.taskId));
    }
    const first = task(12);
    await dispatch.dispatch(first.task, first.wire);
    expect(first.task.worker).toBe(2);
    expect(first.task.toAwakeWorker).toBe(true);
    expect(bells.map((bell) => bell.rings)).toEqual([0, 1]);
  });

  /** A call task of a component whose instances workers `homes` hold; a new instance of it takes `instantiateMs`. */
  function callOf(taskId: number, homes: number[], instantiateMs?: number): { task: PoolTask; wire: TaskWire; home: ComponentHome } {
    const made = task(taskId);
    const table = new ComponentHomes();
    const home = table.of('c', 16);
    for (const threadId of homes) table.answered(home, { startedAt: 0, instance: 'restored', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId });
    if (instantiateMs !== undefined) table.answered(home, { startedAt: 0, instance: 'fresh', isolation: 'call', instantiateMs, cpuClock: 'none', threadId: homes[0] ?? 1 });
    made.task.profile = { id: 1, knownBy: new Set(), home } as unknown as ProfileEntry;
    return { ...made, home };
  }

  function openLanes(dispatch: TaskDispatch, count: number): void {
    for (let i = 1; i <= count; i += 1) {
      const end = channel();
      dispatch.lanes.open(i, end.pool);
      answering(end.worker, (wire) => outcome(wire.taskId));
    }
  }

  it('sends a call to an idle worker that holds its component before an awake or idle one that does not', async () => {
    const states = { isDying: () => false, isPreparing: () => false, isAwake: (threadId: number) => threadId === 1 };
    const dispatch = new TaskDispatch(states, noWaiting);
    openLanes(dispatch, 3);
    const homed = callOf(20, [3]);
    await dispatch.dispatch(homed.task, homed.wire);
    expect(homed.task.worker).toBe(3);
    expect(homed.task.toAwakeWorker).toBe(false);
    // Nobody's home yet: the awake worker, as before.
    const unknown = callOf(21, []);
    await dispatch.dispatch(unknown.task, unknown.wire);
    expect(unknown.task.worker).toBe(1);
    expect(unknown.task.toAwakeWorker).toBe(true);
  });

  it('waits for a home busy preparing only when a new instance of the component is costly', async () => {
    const states = { isDying: () => false, isPreparing: (threadId: number) => threadId === 2, isAwake: () => false };
    const dispatch = new TaskDispatch(states, noWaiting);
    openLanes(dispatch, 2);
    // componentize-js: a new instance takes ~20 ms, a reset ~1: worker 2 resets, and takes the call next.
    const costly = callOf(30, [2], 20);
    expect(costly.home.costly).toBe(true);
    await dispatch.dispatch(costly.task, costly.wire);
    expect(costly.task.worker).toBe(2);
    // C: a new instance is about as cheap as the wait: the idle worker makes one.
    const cheap = callOf(31, [2], 0.2);
    expect(cheap.home.costly).toBe(false);
    await dispatch.dispatch(cheap.task, cheap.wire);
    expect(cheap.task.worker).toBe(1);
  });

  it('sends the first call of a component no worker holds to the idle worker holding the fewest, the awake one on a tie', async () => {
    const held = new Map([[1, 5], [2, 0], [3, 0]]);
    const states = { isDying: () => false, isPreparing: (threadId: number) => threadId === 3, isAwake: (threadId: number) => threadId === 1, homes: (threadId: number) => held.get(threadId) ?? 0 };
    const dispatch = new TaskDispatch(states, noWaiting);
    openLanes(dispatch, 3);
    const unknown = callOf(50, []);
    await dispatch.dispatch(unknown.task, unknown.wire);
    // Worker 1 is awake but holds 5 components; worker 3 holds none but is busy preparing.
    expect(unknown.task.worker).toBe(2);
    held.set(2, 5);
    const tie = callOf(51, []);
    await dispatch.dispatch(tie.task, tie.wire);
    expect(tie.task.worker).toBe(1);
    expect(tie.task.toAwakeWorker).toBe(true);
  });

  it('passes over a home that is busy with a task, or dying', async () => {
    const states = { isDying: (threadId: number) => threadId === 3, isPreparing: () => false, isAwake: () => false };
    const dispatch = new TaskDispatch(states, noWaiting);
    const ends = [channel(), channel(), channel()];
    for (const [i, end] of ends.entries()) dispatch.lanes.open(i + 1, end.pool);
    // Worker 1 holds a task it has not answered: its lane is not free.
    const first = task(40);
    void dispatch.dispatch(first.task, first.wire);
    expect(first.task.worker).toBe(1);
    for (const end of ends) answering(end.worker, (wire) => outcome(wire.taskId));
    const homed = callOf(41, [1, 3], 20);
    await dispatch.dispatch(homed.task, homed.wire);
    expect(homed.task.worker).toBe(2);
  });

  it('counts the calls that wait for a busy home while a worker outside it idles, until one finds its home ready', async () => {
    let preparing = new Set([2]);
    const states = { isDying: () => false, isPreparing: (threadId: number) => preparing.has(threadId), isAwake: () => false };
    const dispatch = new TaskDispatch(states, noWaiting);
    openLanes(dispatch, 2);
    const hot = callOf(60, [2], 20);
    for (let i = 0; i < 3; i += 1) {
      expect(hot.home.wantsAnotherHome).toBe(false);
      const call = task(61 + i);
      call.task.profile = hot.task.profile;
      await dispatch.dispatch(call.task, call.wire);
      expect(call.task.worker).toBe(2);
    }
    // Three in a row: worker 1, idle and no home of it, is where another instance would spare the next ones their wait.
    expect(hot.home.busyWaits).toBe(3);
    expect(hot.home.wantsAnotherHome).toBe(true);
    expect(dispatch.idleOutside(hot.home)).toBe(1);
    // Its home ready: the count starts over.
    preparing = new Set();
    const ready = task(70);
    ready.task.profile = hot.task.profile;
    await dispatch.dispatch(ready.task, ready.wire);
    expect(ready.task.worker).toBe(2);
    expect(hot.home.busyWaits).toBe(0);
    // Nothing idle outside the homes: no worker to make one on.
    const both = callOf(71, [1, 2], 20);
    expect(dispatch.idleOutside(both.home)).toBeUndefined();
  });

  it('does not count a wait when no worker outside the home is free, and sends a warm task only where it was made for', async () => {
    const states = { isDying: () => false, isPreparing: (threadId: number) => threadId === 2, isAwake: () => false };
    const dispatch = new TaskDispatch(states, noWaiting);
    const ends = [channel(), channel()];
    for (const [i, end] of ends.entries()) dispatch.lanes.open(i + 1, end.pool);
    // Worker 1 holds an unanswered task: not free.
    const busy = task(80);
    void dispatch.dispatch(busy.task, busy.wire);
    expect(busy.task.worker).toBe(1);
    const hot = callOf(81, [2], 20);
    const answered = dispatch.dispatch(hot.task, hot.wire);
    expect(hot.task.worker).toBe(2);
    expect(hot.home.busyWaits).toBe(0);
    expect(dispatch.idleOutside(hot.home)).toBeUndefined();
    for (const end of ends) answering(end.worker, (wire) => outcome(wire.taskId));
    await answered;
    // A warm task goes to its worker, busy or preparing as it may be seen.
    const warm = task(82);
    warm.task.onlyTo = 2;
    await dispatch.dispatch(warm.task, warm.wire);
    expect(warm.task.worker).toBe(2);
    // Its worker gone, or being stopped: it fails, and is never queued (a queued one would hold the queue's head).
    const lost = task(83);
    lost.task.onlyTo = 9;
    await expect(dispatch.dispatch(lost.task, lost.wire)).rejects.toThrow(LaneClosed);
    const stopping = new TaskDispatch({ ...states, isDying: (threadId: number) => threadId === 2 }, noWaiting);
    openLanes(stopping, 2);
    const late = task(84);
    late.task.onlyTo = 2;
    await expect(stopping.dispatch(late.task, late.wire)).rejects.toThrow(LaneClosed);
    expect(dispatch.queue.length + stopping.queue.length).toBe(0);
  });

  it('fails queued tasks when asked (the pool closes)', async () => {
    const dispatch = new TaskDispatch(idle, noWaiting);
    const waiting = task(11);
    const queued = dispatch.dispatch(waiting.task, waiting.wire);
    dispatch.failQueued(new Error('closed'));
    await expect(queued).rejects.toThrow('closed');
  });
});
