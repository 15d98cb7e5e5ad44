/**
 * The sandbox's one queue, for both containments: thread containment
 * (SandboxPool, whose TaskDispatch keeps here the tasks no worker fits yet)
 * and process containment (the supervisor, which keeps here the tasks not
 * yet handed to its sandbox process). One limit, one refusal, one measure:
 * - a task is accepted while fewer than `threads + maxQueue` are (running
 *   or waiting); past that, it is refused with OVERLOADED
 *   (`host.pool.max_queue`, default 64 per thread);
 * - `size` (tasks accepted beyond one per worker) is the pool's `queueSize`
 *   in its stats and metrics;
 * - waiting tasks leave in order, oldest first; one taken back by its
 *   caller leaves from wherever it is.
 */
import { ToolhostError } from '../base/errors.js';

export class TaskQueue<T> {
  readonly threads: number;
  readonly maxQueue: number;
  /** Tasks accepted and not given back (running, waiting here, or handed on and not answered yet). */
  #accepted = 0;
  /** Oldest first. */
  readonly #waiting: T[] = [];

  constructor(threads: number, maxQueue: number) {
    this.threads = threads;
    this.maxQueue = maxQueue;
  }

  /** OVERLOADED when `threads + maxQueue` tasks are accepted already (the caller refuses the task with it), else undefined. */
  refusal(): ToolhostError | undefined {
    if (this.#accepted < this.threads + this.maxQueue) return undefined;
    return new ToolhostError('OVERLOADED', `the sandbox queue is full (${this.maxQueue} waiting for ${this.threads} workers); try again later`);
  }

  /** A task is accepted; returns how many are now. */
  accept(): number {
    return ++this.#accepted;
  }

  /** A task was given back (answered, failed or stopped); returns how many remain. */
  giveBack(): number {
    return --this.#accepted;
  }

  get accepted(): number {
    return this.#accepted;
  }

  /** Tasks waiting for a worker: accepted beyond one per worker. */
  get size(): number {
    return Math.max(0, this.#accepted - this.threads);
  }

  /** Tasks in the waiting list. */
  get length(): number {
    return this.#waiting.length;
  }

  push(item: T): void {
    this.#waiting.push(item);
  }

  /** The oldest waiting task, left in place. */
  head(): T | undefined {
    return this.#waiting[0];
  }

  /** The oldest waiting task, taken out. */
  shift(): T | undefined {
    return this.#waiting.shift();
  }

  /** Take `item` out from wherever it waits; false when it was not waiting. */
  remove(item: T): boolean {
    const at = this.#waiting.indexOf(item);
    if (at === -1) return false;
    this.#waiting.splice(at, 1);
    return true;
  }

  /** Every waiting task, taken out, oldest first. */
  takeAll(): T[] {
    return this.#waiting.splice(0);
  }

  /** Put tasks back at the front, in the order given (they waited before everything that waits now). */
  returnToFront(items: readonly T[]): void {
    this.#waiting.unshift(...items);
  }
}
