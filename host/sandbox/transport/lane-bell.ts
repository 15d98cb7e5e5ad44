/**
 * A worker's lane bell: a few Int32 slots the pool and one worker share, so
 * that a worker with nothing to do may spin for a short while for its next
 * task instead of going to sleep (worker/lane-spin.ts).
 *
 * Why: on a VM whose idle vCPUs halt, posting to a sleeping worker cost the
 * main thread ~8.5 µs in `postMessage` (the wake-up is sent from inside it)
 * and ~7 µs more passed before the worker ran the task; posting to a
 * spinning worker costs ~4.3 µs, and it runs the task ~2 µs later. A C echo
 * call at concurrency 1 went from ~60 to ~48 µs (medians, 10 000 calls).
 * (answer-poll.ts does the same for the answer's way back, on the main
 * thread's event loop, which keeps turning rather than blocking.)
 *
 * The pool rings the bell after each post; the worker watches the count.
 * The pool also says whether a spinning worker is welcome (fewer tasks in
 * flight than workers, so a vCPU is likely idle: a spin must never take the
 * CPU a busy thread needs) and how long a spin may last; the worker says
 * when it spins, so the pool hands it the next task first.
 */

const RINGS = 0;
const WELCOME = 1;
const SPINNING = 2;
const SPIN_MICROS = 3;
const CAUGHT = 4;
const MISSED = 5;

/** Bytes of a bell. */
export const BELL_BYTES = 6 * Int32Array.BYTES_PER_ELEMENT;

/** Spins that caught a task, and spins that ended without one. */
export interface SpinCounts {
  caught: number;
  missed: number;
}

export class LaneBell {
  readonly buffer: SharedArrayBuffer;
  readonly #slots: Int32Array;

  /** A new bell (the worker's), or a view of one a worker posted (the pool's). */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(BELL_BYTES)) {
    this.buffer = buffer;
    this.#slots = new Int32Array(buffer);
  }

  /** Pool: a task was posted on the lane. */
  ring(): void {
    Atomics.add(this.#slots, RINGS, 1);
  }

  /** Worker: tasks posted so far (it compares this with the count it last saw). */
  get rings(): number {
    return Atomics.load(this.#slots, RINGS);
  }

  /** Pool: whether a spin is welcome now, and for how long at most (µs; 0: never). */
  set(welcome: boolean, spinMicros: number): void {
    Atomics.store(this.#slots, SPIN_MICROS, spinMicros);
    Atomics.store(this.#slots, WELCOME, welcome ? 1 : 0);
  }

  /** Worker: how long it may spin now (µs), 0 when it should sleep instead. */
  get spinMicros(): number {
    return Atomics.load(this.#slots, WELCOME) === 1 ? Atomics.load(this.#slots, SPIN_MICROS) : 0;
  }

  /** Worker: it spins (true) or has stopped (false). */
  spinning(on: boolean): void {
    Atomics.store(this.#slots, SPINNING, on ? 1 : 0);
  }

  /** Pool: whether the worker spins now (its next task then costs no wake-up). */
  get isSpinning(): boolean {
    return Atomics.load(this.#slots, SPINNING) === 1;
  }

  /** Worker: a spin ended, having caught a task or not. */
  spun(caught: boolean): void {
    Atomics.add(this.#slots, caught ? CAUGHT : MISSED, 1);
  }

  /** Pool: the worker's spins so far. */
  get spins(): SpinCounts {
    return { caught: Atomics.load(this.#slots, CAUGHT), missed: Atomics.load(this.#slots, MISSED) };
  }
}

/** The pool's side: every worker's bell, and whether a spin is welcome (told to every bell when that changes). */
export class LaneBells {
  readonly #bells = new Map<number, LaneBell>();
  readonly #threads: number;
  readonly #spinMicros: number;
  #welcome = true;
  /** The spins of workers that are gone. */
  readonly #retired: SpinCounts = { caught: 0, missed: 0 };

  constructor(threads: number, spinMicros: number) {
    this.#threads = threads;
    this.#spinMicros = spinMicros;
  }

  /** A worker said hello with its bell. */
  add(threadId: number, buffer: SharedArrayBuffer): LaneBell {
    const bell = new LaneBell(buffer);
    bell.set(this.#welcome, this.#spinMicros);
    this.#bells.set(threadId, bell);
    return bell;
  }

  forget(threadId: number): void {
    const bell = this.#bells.get(threadId);
    if (!bell) return;
    const { caught, missed } = bell.spins;
    this.#retired.caught += caught;
    this.#retired.missed += missed;
    this.#bells.delete(threadId);
  }

  /** Every worker's spins so far, those of workers gone included (for metrics: is spinning worth its CPU here?). */
  spins(): SpinCounts {
    const total = { ...this.#retired };
    for (const bell of this.#bells.values()) {
      const { caught, missed } = bell.spins;
      total.caught += caught;
      total.missed += missed;
    }
    return total;
  }

  /** Whether a spin is welcome now (fewer tasks in flight than workers), and how long one may last (µs; 0: never). */
  get spinMicros(): number {
    return this.#welcome ? this.#spinMicros : 0;
  }

  isSpinning(threadId: number): boolean {
    return this.#bells.get(threadId)?.isSpinning === true;
  }

  /**
   * Tasks in flight now. A spin is welcome while they are fewer than the
   * workers: a vCPU is then likely idle. At or past it, a spin would take
   * CPU from the threads doing the work.
   */
  inFlight(tasks: number): void {
    const welcome = tasks < this.#threads;
    if (welcome === this.#welcome) return;
    this.#welcome = welcome;
    for (const bell of this.#bells.values()) bell.set(welcome, this.#spinMicros);
  }
}
