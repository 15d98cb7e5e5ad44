/**
 * A worker's short spin for its next task (see ../lane-bell.ts for why).
 *
 * After a task's answer, once the worker has nothing left to do in that turn
 * of its event loop (the spare instance is made first: its preparation was
 * scheduled before the spin), it watches its bell for up to the pool's
 * `spinMicros` and takes a task that arrives with `receiveMessageOnPort`,
 * handling it at once. Spins are bounded three ways: only while the pool
 * says one is welcome; never longer than `spinMicros`; and after
 * `MISSES_BEFORE_REST` spins in a row that caught nothing (calls come
 * further apart than a spin lasts), the next `REST_TURNS` chances are
 * skipped, so a worker serving sparse traffic barely spins at all.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { LaneBell } from '../lane-bell.js';

/** Spins in a row that caught nothing before the worker rests from spinning. */
export const MISSES_BEFORE_REST = 4;
/** Chances to spin skipped while it rests. */
export const REST_TURNS = 64;

/** What a spin did: caught a task, found none in time, or did not spin. */
export type SpinResult = 'caught' | 'missed' | 'skipped';

export class LaneSpin {
  readonly #bell: LaneBell;
  readonly #port: MessagePort;
  readonly #handle: (message: unknown) => void;
  /** Whether the worker is idle (no task running, waiting or leaving, no preparation put off): only then does it spin. */
  readonly #idle: () => boolean;
  #seen: number;
  #scheduled = false;
  #misses = 0;
  #resting = 0;

  constructor(bell: LaneBell, port: MessagePort, handle: (message: unknown) => void, idle: () => boolean) {
    this.#bell = bell;
    this.#port = port;
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
    // A task already waiting (the second of two a worker holds) is taken first: its ring may have been seen already.
    let message = receiveMessageOnPort(this.#port) as { message: unknown } | undefined;
    this.#bell.spinning(true);
    try {
      for (let turn = 0; message === undefined; turn += 1) {
        const rings = this.#bell.rings;
        if (rings !== this.#seen) {
          this.#seen = rings;
          message = receiveMessageOnPort(this.#port) as { message: unknown } | undefined;
          if (message !== undefined) break;
        }
        // The clock is read every 32 turns: an Atomics.load is far cheaper than performance.now().
        if ((turn & 31) === 31 && performance.now() >= deadline) break;
      }
    } finally {
      this.#bell.spinning(false);
    }
    this.#bell.spun(message !== undefined);
    if (message === undefined) {
      this.#misses += 1;
      if (this.#misses >= MISSES_BEFORE_REST) {
        this.#misses = 0;
        this.#resting = REST_TURNS;
      }
      return 'missed';
    }
    this.#misses = 0;
    this.#handle(message.message);
    return 'caught';
  }
}
