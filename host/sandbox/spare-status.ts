/**
 * A worker's status block: whether it is busy making the next call's spare
 * instance after answering, which is guest code (the spare's
 * initialization), so it has a budget of its own. The worker writes it
 * (announce, start, end); the pool reads it to route calls elsewhere while a
 * worker is busy and to stop a worker whose preparation overran.
 *
 * Rules, each the fix of a worker stopped in the middle of an honest call:
 * - Only a preparation that runs is timed. An announced one may wait behind
 *   a call the worker runs first, and that call has its own budgets.
 * - A start writes its time before it raises the running flag, and the pool
 *   reads the flag before the time, so a raised flag is never paired with an
 *   older preparation's time (or with 0, in a new worker).
 */
import { STATUS_BYTES, STATUS_F64_PREPARING_SINCE, STATUS_PREPARING, STATUS_PREPARING_QUICK, STATUS_PREPARING_RUNNING, STATUS_PREPARING_TASK } from './protocol.js';

const epochMs = (): number => performance.timeOrigin + performance.now();

export class SpareStatus {
  readonly buffer: SharedArrayBuffer;
  readonly #flags: Int32Array;
  readonly #times: Float64Array;

  /** A new block (the worker's), or a view of one posted by a worker (the pool's). */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(STATUS_BYTES)) {
    this.buffer = buffer;
    this.#flags = new Int32Array(buffer);
    this.#times = new Float64Array(buffer);
  }

  /** Worker: a preparation will follow this task's answer (announced before the answer is returned); `quick`: a reset, see STATUS_PREPARING_QUICK. */
  announce(quick = false): void {
    if (quick) Atomics.add(this.#flags, STATUS_PREPARING_QUICK, 1);
    Atomics.add(this.#flags, STATUS_PREPARING, 1);
  }

  /** Worker: the preparation announced by `taskId`'s answer starts now. */
  start(taskId: number, now = epochMs()): void {
    this.#times[STATUS_F64_PREPARING_SINCE] = now;
    Atomics.store(this.#flags, STATUS_PREPARING_TASK, taskId);
    Atomics.store(this.#flags, STATUS_PREPARING_RUNNING, 1);
  }

  /** Worker: the running preparation (announced `quick` or not) is over. */
  end(quick = false): void {
    Atomics.store(this.#flags, STATUS_PREPARING_RUNNING, 0);
    Atomics.sub(this.#flags, STATUS_PREPARING, 1);
    if (quick) Atomics.sub(this.#flags, STATUS_PREPARING_QUICK, 1);
  }

  /** Pool: preparations announced and not finished (the worker is busy after answering). */
  get pending(): number {
    return Atomics.load(this.#flags, STATUS_PREPARING);
  }

  /** Pool: of those, the ones that are not quick (a task sent now would wait for them). */
  get slow(): number {
    return Math.max(0, this.pending - Atomics.load(this.#flags, STATUS_PREPARING_QUICK));
  }

  /** Pool: the task whose answer announced the preparation running now (or last). */
  get task(): number {
    return Atomics.load(this.#flags, STATUS_PREPARING_TASK);
  }

  /** Pool: when the running preparation started (epoch ms), or undefined when none runs (announced ones wait). */
  get runningSince(): number | undefined {
    if (Atomics.load(this.#flags, STATUS_PREPARING_RUNNING) === 0) return undefined;
    return this.#times[STATUS_F64_PREPARING_SINCE];
  }

  /** Pool: whether a preparation has run for `budgetMs` or more at `now` (epoch ms). */
  overran(budgetMs: number, now = epochMs()): boolean {
    if (Atomics.load(this.#flags, STATUS_PREPARING_RUNNING) === 0) return false;
    return now - this.#times[STATUS_F64_PREPARING_SINCE]! >= budgetMs;
  }
}
