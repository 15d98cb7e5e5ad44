/**
 * Task lanes: one persistent channel per worker that carries the pool's
 * tasks to it and their answers back (the worker sends its end in its hello).
 *
 * piscina still owns the workers (it starts them, replaces one that exits,
 * caps their heaps), but a task no longer goes through piscina's per-task
 * dispatch: its task record, async resource, balancer views, atomics wake-up
 * and drain microtasks cost ~26 µs of main-thread CPU a task on a 2-vCPU VM
 * (bare piscina 33-36 µs a round trip at 8 in flight, a bare MessagePort
 * round trip 8 µs), more than the rest of a sandboxed call's main-thread work.
 *
 * A lane knows which of its tasks are unanswered. When its worker exits the
 * port closes, and every unanswered task fails with LaneClosed (the pool
 * posts again the ones no worker claimed). Lanes never keep the process
 * alive: the pool does, while it has tasks.
 */
import type { MessagePort } from 'node:worker_threads';
import { ChurnTable } from '../../core/churn-table.js';
import type { LaneBell } from './lane-bell.js';
import { LANE_KICK, carriesBuffer, decodeAnswer, encodeTask, type LaneReply } from './lane-codec.js';
import type { TaskRing } from './task-ring.js';
import type { AnswerRing } from './answer-ring.js';
import type { LaneAnswer, TaskAnswer, TaskWire } from '../protocol.js';

/** Why a lane's unanswered task failed: its worker exited (`stopped`: the pool stopped it). */
export class LaneClosed extends Error {
  readonly stopped: boolean;
  constructor(threadId: number, stopped: boolean) {
    super(stopped ? `the sandbox worker ${threadId} was stopped` : `the sandbox worker ${threadId} exited`);
    this.stopped = stopped;
  }
}

interface Unanswered {
  taskId: number;
  resolve(answer: TaskAnswer): void;
  reject(error: Error): void;
}

interface Lane {
  port: MessagePort;
  bell: LaneBell | undefined;
  /** Where plain calls go without a post (see task-ring.ts). */
  ring: TaskRing | undefined;
  /** Where the worker leaves call answers (see answer-ring.ts). */
  answers: AnswerRing | undefined;
  /** A ChurnTable, not a Map: see churn-table.ts. */
  unanswered: ChurnTable<number, Unanswered>;
  /** When the lane last went from idle to busy (performance.now()), while busy. */
  busySince: number;
  /** The control buffers this lane has carried to its worker, by id (see lane-codec.ts). */
  sentBuffers: Set<number>;
}

export interface TaskLaneEvents {
  /** A task was answered or failed on `threadId`'s lane: it may take another. */
  freed(threadId: number): void;
  /** Whether the pool stopped `threadId` (its tasks fail as stopped rather than exited). */
  stopping(threadId: number): boolean;
}

export class TaskLanes {
  readonly #lanes = new Map<number, Lane>();
  readonly #events: TaskLaneEvents;
  readonly #startedAt = performance.now();
  /** Time lanes were busy (ms), closed stretches only. */
  #busyMs = 0;
  /** Whether the pool polls the answer rings (see answer-poll.ts). */
  #polling = false;

  constructor(events: TaskLaneEvents) {
    this.#events = events;
  }

  /** Open `threadId`'s lane on the port its worker sent (with its bell, rung after each task: see lane-bell.ts; and its ring). */
  open(threadId: number, port: MessagePort, bell?: LaneBell, rings?: { tasks: TaskRing; answers: AnswerRing }): void {
    const lane: Lane = { port, bell, ring: rings?.tasks, answers: rings?.answers, unanswered: new ChurnTable(), busySince: 0, sentBuffers: new Set() };
    this.#lanes.set(threadId, lane);
    if (this.#polling) lane.answers?.polling(true);
    port.on('message', (reply: LaneReply | typeof LANE_KICK) => {
      if (reply === LANE_KICK) {
        // Cleared before the ring is read: an answer the read misses comes with a kick of its own.
        lane.answers?.polling(this.#polling);
        this.#collect(threadId, lane);
      } else {
        this.#answer(threadId, lane, decodeAnswer(reply));
      }
    });
    port.on('close', () => this.#close(threadId, lane));
    port.unref();
  }

  /** The workers whose lanes are open, by thread id. */
  threads(): IterableIterator<number> {
    return this.#lanes.keys();
  }

  get size(): number {
    return this.#lanes.size;
  }

  /** Whether any lane has a task posted and not answered. */
  hasUnanswered(): boolean {
    for (const lane of this.#lanes.values()) if (lane.unanswered.size > 0) return true;
    return false;
  }

  /** Tasks posted on `threadId`'s lane and not answered. */
  load(threadId: number): number {
    return this.#lanes.get(threadId)?.unanswered.size ?? 0;
  }

  /** Post a task to `threadId`'s worker; resolves with its answer, rejects with LaneClosed when the worker exits first. */
  post(threadId: number, wire: TaskWire): Promise<TaskAnswer> {
    return new Promise<TaskAnswer>((resolve, reject) => this.send(threadId, wire, resolve, reject));
  }

  /**
   * `post` for a caller that holds its own promise's settlers (a task that
   * waited in the dispatch queue): the answer settles that promise directly,
   * without a second promise and a turn between the two.
   */
  send(threadId: number, wire: TaskWire, resolve: (answer: TaskAnswer) => void, reject: (error: Error) => void): void {
    const lane = this.#lanes.get(threadId);
    if (lane === undefined) {
      reject(new LaneClosed(threadId, this.#events.stopping(threadId)));
      return;
    }
    if (lane.unanswered.size === 0) lane.busySince = performance.now();
    lane.unanswered.set(wire.taskId, { taskId: wire.taskId, resolve, reject });
    const message = encodeTask(wire, lane.sentBuffers, threadId);
    try {
      const { ring } = lane;
      if (ring !== undefined && Array.isArray(message) && ring.carries(message) && ring.push(message)) {
        // A worker that runs a task or spins takes it when it looks; one in its event loop needs a kick.
        if (ring.listening) lane.port.postMessage(LANE_KICK);
      } else {
        lane.port.postMessage(message);
      }
      // After the post: a spinning worker that sees the ring finds the task in its port or ring.
      lane.bell?.ring();
    } catch (error) {
      // Nothing was posted (a value that cannot be cloned): the task fails, the lane goes on; a buffer it carried did not arrive.
      const carried = carriesBuffer(message);
      if (carried !== undefined) lane.sentBuffers.delete(carried);
      this.#take(lane, wire.taskId);
      reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * The pool polls the answer rings (true: at every turn of its event loop,
   * so workers need not kick), or stops (false: it reads them once more).
   */
  polling(on: boolean): void {
    if (on === this.#polling) return;
    this.#polling = on;
    for (const [threadId, lane] of this.#lanes) {
      lane.answers?.polling(on);
      if (!on) this.#collect(threadId, lane);
    }
  }

  /** Read every answer the workers left in their rings. */
  collect(): void {
    for (const [threadId, lane] of this.#lanes) if (lane.answers?.pending === true) this.#collect(threadId, lane);
  }

  #collect(threadId: number, lane: Lane): void {
    const ring = lane.answers;
    if (ring === undefined) return;
    for (let reply = ring.take(); reply !== undefined; reply = ring.take()) this.#answer(threadId, lane, decodeAnswer(reply));
  }

  /** Share of lane time spent with a task unanswered since the pool started (0..1, over `threads` lanes). */
  utilization(threads: number): number {
    const now = performance.now();
    let busy = this.#busyMs;
    for (const lane of this.#lanes.values()) if (lane.unanswered.size > 0) busy += now - lane.busySince;
    const elapsed = (now - this.#startedAt) * Math.max(1, threads);
    return elapsed > 0 ? Math.min(1, busy / elapsed) : 0;
  }

  #answer(threadId: number, lane: Lane, message: LaneAnswer): void {
    const waiting = this.#take(lane, message.taskId);
    if (waiting === undefined) return;
    if ('answer' in message) waiting.resolve(message.answer);
    else waiting.reject(new Error(message.error));
    this.#events.freed(threadId);
  }

  /** Take a task off the lane (undefined when it is not there); an idle lane's busy stretch is over. */
  #take(lane: Lane, taskId: number): Unanswered | undefined {
    const waiting = lane.unanswered.get(taskId);
    if (waiting === undefined) return undefined;
    lane.unanswered.delete(taskId);
    if (lane.unanswered.size === 0) this.#busyMs += performance.now() - lane.busySince;
    return waiting;
  }

  #close(threadId: number, lane: Lane): void {
    if (this.#lanes.get(threadId) === lane) this.#lanes.delete(threadId);
    // Answers the worker left before it exited are read, not lost with it (after the lane is gone: a task freed by one goes elsewhere).
    this.#collect(threadId, lane);
    const unanswered = lane.unanswered.values().map(({ taskId }) => this.#take(lane, taskId)!);
    const stopped = this.#events.stopping(threadId);
    for (const waiting of unanswered) waiting.reject(new LaneClosed(threadId, stopped));
    this.#events.freed(threadId);
  }
}
