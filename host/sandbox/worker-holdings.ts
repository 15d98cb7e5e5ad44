/**
 * Which tasks each worker of the pool holds: the one it runs and, at most,
 * the next, waiting in its task lane.
 *
 * Why a worker may hold a second task: a task posted to a sleeping worker
 * must wake its thread, and on a VM whose idle vCPUs halt that wake was the
 * dearest part of a small call (~10-15 µs of the main thread's postMessage
 * per call at 8 in flight, tens of µs of the worker's); a worker that finds
 * its next task waiting does not sleep between them. A task waits only
 * behind a short one (the pool option `waitBehind`, see pool-options.ts),
 * so its wait is about one short call; a task stopped while it waits is
 * taken back (see PoolTask.untilStopped). It runs only once the previous
 * task's answer has left the worker (worker/running-tasks.ts), and a worker
 * is stopped only once the answers it posted are read (worker-stops.ts).
 */
import type { PoolTask } from './pool-task.js';

/**
 * Tasks a worker may hold at once (the task it runs and one waiting in its
 * lane). Three gave C echo at 8 in flight +6-11 % calls/s with the lanes'
 * rings, but the process's RSS then grew 3.5-9 MiB per 100,000 calls in 5 of
 * 8 no-growth checks of 400,000 calls (heaps flat; with two: at most 0.5 in
 * 4), so it stays two until that growth is understood.
 */
export const TASKS_PER_WORKER = 2;

export class WorkerHoldings {
  /** Tasks handed to each worker and not given back yet, oldest first. */
  readonly #held = new Map<number, PoolTask[]>();
  /** A task waits behind another only if that one's tool averages under `averageMs` a call, handed over less than `withinMs` ago. */
  readonly #rule: { averageMs: number; withinMs: number };

  constructor(rule: { averageMs: number; withinMs: number }) {
    this.#rule = rule;
  }

  /** `task` is posted to worker `threadId` next: remember where it is. Returns the worker's thread id. */
  handOver(threadId: number, task: PoolTask): number {
    task.worker = threadId;
    // The lists only decide whether a task may wait behind another: kept only when one may.
    if (this.#rule.averageMs <= 0) return threadId;
    task.handedAt = performance.now();
    const held = this.#held.get(threadId);
    if (held) held.push(task);
    else this.#held.set(threadId, [task]);
    return threadId;
  }

  /** The task is no longer with the worker it was handed to (answered, or the worker was lost). */
  release(task: PoolTask): void {
    const threadId = task.worker;
    if (threadId === undefined) return;
    task.worker = undefined;
    const held = this.#held.get(threadId);
    const at = held?.indexOf(task) ?? -1;
    if (at !== -1) held!.splice(at, 1);
  }

  /**
   * Whether a task may wait behind what worker `threadId` holds, given its
   * lane's count of unanswered tasks (`usage`): one task (ours may still list
   * tasks its lane just answered, oldest first, so the one it holds is our
   * newest), of a short tool, handed over just now.
   */
  mayWaitBehind(threadId: number, usage: number): boolean {
    // Behind exactly one: a worker holds at most TASKS_PER_WORKER.
    if (usage !== TASKS_PER_WORKER - 1) return false;
    const held = this.#held.get(threadId);
    const current = held?.[held.length - 1];
    if (current === undefined) return false;
    const averageMs = current.profile?.runMs;
    return averageMs !== undefined && averageMs < this.#rule.averageMs && performance.now() - current.handedAt < this.#rule.withinMs;
  }

  /** A worker is gone. */
  forget(threadId: number): void {
    this.#held.delete(threadId);
  }
}
