/**
 * Task lanes: the pool's ends of its workers' channels (one per worker, see
 * host-end.ts and worker-end.ts; the worker sends its end in its hello), and
 * which tasks each has unanswered. A lane carries a task to its worker and
 * brings back, in order, the task's events and host calls, then its answer.
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
import type { LaneHello } from './lane-codec.js';
import { HostEnd, type HostEndEvents } from './host-end.js';
import type { TaskRing } from './task-ring.js';
import type { AnswerRing } from './answer-ring.js';
import type { LaneAnswer, RpcReply, TaskAnswer, TaskWire, WorkerMessage } from '../protocol.js';

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
  /** The pool's end of the worker's channel (host-end.ts): how anything reaches the worker or comes back. */
  end: HostEnd;
  /** A ChurnTable, not a Map: see churn-table.ts. */
  unanswered: ChurnTable<number, Unanswered>;
  /** When the lane last went from idle to busy (performance.now()), while busy. */
  busySince: number;
}

export interface TaskLaneEvents {
  /** A task was answered or failed on `threadId`'s lane: it may take another. */
  freed(threadId: number): void;
  /** Whether the pool stopped `threadId` (its tasks fail as stopped rather than exited). */
  stopping(threadId: number): boolean;
  /** One of task `taskId`'s events or host calls, from `threadId` (before the task's answer, in the order the worker sent them). */
  event?(threadId: number, taskId: number, event: WorkerMessage): void;
  /** `threadId`'s lane closed (its worker exited), after its unanswered tasks failed. */
  closed?(threadId: number): void;
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

  /** Open the lane a worker's hello brought (`bell`: the pool's view of the worker's lane bell, see lane-bell.ts). */
  welcome(hello: LaneHello, bell?: LaneBell): void {
    this.#add(hello.threadId, (events) => HostEnd.fromHello(hello, events, bell));
  }

  /** Open `threadId`'s lane on `port` (a test's; with its bell, rung after each task, and its rings). */
  open(threadId: number, port: MessagePort, bell?: LaneBell, rings?: { tasks: TaskRing; answers: AnswerRing }): void {
    this.#add(threadId, (events) => new HostEnd(threadId, port, events, { bell, ring: rings?.tasks, answers: rings?.answers }));
  }

  #add(threadId: number, open: (events: HostEndEvents) => HostEnd): void {
    // (The callbacks run only once the port delivers something, after `lane` is set.)
    const lane: Lane = {
      end: open({
        answer: (answer) => this.#answer(threadId, lane, answer),
        event: (taskId, event) => this.#events.event?.(threadId, taskId, event),
        // The lane is gone before the answers its worker left are read: a task freed by one goes elsewhere.
        closing: () => {
          if (this.#lanes.get(threadId) === lane) this.#lanes.delete(threadId);
        },
        closed: () => this.#close(threadId, lane),
      }),
      unanswered: new ChurnTable(),
      busySince: 0,
    };
    this.#lanes.set(threadId, lane);
    if (this.#polling) lane.end.polling(true);
  }

  /** Answer a host call of a task `threadId` runs (nobody waits for it when that worker is gone). */
  reply(threadId: number, reply: RpcReply): void {
    this.#lanes.get(threadId)?.end.reply(reply);
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
    try {
      lane.end.send(wire);
    } catch (error) {
      // Nothing was sent (a value that cannot be cloned): the task fails, the lane goes on.
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
    for (const lane of this.#lanes.values()) lane.end.polling(on);
  }

  /** Read every answer the workers left in their rings. */
  collect(): void {
    for (const lane of this.#lanes.values()) if (lane.end.pending) lane.end.collect();
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
    const unanswered = lane.unanswered.values().map(({ taskId }) => this.#take(lane, taskId)!);
    const stopped = this.#events.stopping(threadId);
    for (const waiting of unanswered) waiting.reject(new LaneClosed(threadId, stopped));
    this.#events.closed?.(threadId);
    this.#events.freed(threadId);
  }
}
