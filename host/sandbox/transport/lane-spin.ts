/**
 * A worker's short spin for its next task (see ../lane-bell.ts for why).
 *
 * After a task's answer, once the worker has nothing left to do in that turn
 * of its event loop (the spare instance is made first: its preparation was
 * scheduled before the spin), it watches its bell for up to the pool's
 * `spinMicros` and takes a task that arrives (from its port or its ring, see
 * worker-end.ts), handling it at once. While it spins it does not listen:
 * the pool puts a call in its ring without a kick. Spins are bounded three
 * ways: only while the pool says one is welcome; never longer than
 * `spinMicros`; and after
 * `MISSES_BEFORE_REST` spins in a row that caught nothing (calls come
 * further apart than a spin lasts), the next `REST_TURNS` chances are
 * skipped, so a worker serving sparse traffic barely spins at all.
 */
import type { LaneBell } from './lane-bell.js';

/** Where a spinning worker takes its next task from (its lane reader). */
export interface SpinSource<T> {
  /** The next task the lane holds, if any. */
  next(): T | undefined;
  /** The worker goes back to its event loop (true: the pool must kick it) or takes tasks without one (false). */
  listen(on: boolean): void;
}

/** Spins in a row that caught nothing before the worker rests from spinning. */
export const MISSES_BEFORE_REST = 4;
/** Chances to spin skipped while it rests. */
export const REST_TURNS = 64;

/** What a spin did: caught a task, found none in time, or did not spin. */
export type SpinResult = 'caught' | 'missed' | 'skipped';

export class LaneSpin<T> {
  readonly #bell: LaneBell;
  readonly #source: SpinSource<T>;
  readonly #handle: (task: T) => void;
  /** Whether the worker is idle (no task running, waiting or leaving, no preparation put off): only then does it spin. */
  readonly #idle: () => boolean;
  #seen: number;
  #scheduled = false;
  #misses = 0;
  #resting = 0;

  constructor(bell: LaneBell, source: SpinSource<T>, handle: (task: T) => void, idle: () => boolean) {
    this.#bell = bell;
    this.#source = source;
    this.#handle = handle;
    this.#idle = idle;
    this.#seen = bell.rings;
  }

  /**
   * A task was answered: spin at the next turn of the event loop (once,
   * however many answers this turn had). Nothing is scheduled while the pool
   * does not welcome a spin (as many tasks in flight as workers): an
   * immediate per answer would cost a busy worker a turn of its loop for a
   * spin it would skip anyway.
   */
  schedule(): void {
    if (this.#scheduled || this.#bell.spinMicros <= 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.spin();
    });
  }

  /** Spin now, if welcome and not resting (see the header). */
  spin(): SpinResult {
    if (this.#resting > 0) {
      this.#resting -= 1;
      return 'skipped';
    }
    const micros = this.#bell.spinMicros;
    if (micros <= 0 || !this.#idle()) return 'skipped';
    const deadline = performance.now() + micros / 1000;
    const source = this.#source;
    source.listen(false);
    // A task already waiting (the second of two a worker holds) is taken first: its ring may have been seen already.
    let task = source.next();
    this.#bell.spinning(true);
    try {
      for (let turn = 0; task === undefined; turn += 1) {
        const rings = this.#bell.rings;
        if (rings !== this.#seen) {
          this.#seen = rings;
          task = source.next();
          if (task !== undefined) break;
        }
        // The clock is read every 32 turns: an Atomics.load is far cheaper than performance.now().
        if ((turn & 31) === 31 && performance.now() >= deadline) break;
      }
    } finally {
      this.#bell.spinning(false);
    }
    if (task === undefined) {
      // Back to the event loop: listen, then look once more (a call put in the ring before the pool saw it listening gets no kick).
      source.listen(true);
      task = source.next();
    }
    this.#bell.spun(task !== undefined);
    if (task === undefined) {
      this.#misses += 1;
      if (this.#misses >= MISSES_BEFORE_REST) {
        this.#misses = 0;
        this.#resting = REST_TURNS;
      }
      return 'missed';
    }
    this.#misses = 0;
    this.#handle(task);
    return 'caught';
  }
}
