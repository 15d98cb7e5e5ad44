/**
 * The main thread's side of a short call's round trip: while the answer of a
 * call that usually takes less than the spin bound is out from a worker that
 * was spinning for it (so the pool had room: fewer tasks in flight than
 * workers, see lane-bell.ts), the event loop
 * keeps turning (one `setImmediate` after another) instead of sleeping in
 * epoll until the answer comes. It never blocks: every turn polls the loop's
 * I/O and runs its callbacks as usual; it only does not sleep.
 *
 * Why: a worker's answer to a sleeping main thread paid for the wake-up
 * inside the worker's `postMessage`, and the main thread came back ~14 µs
 * after it was sent; to a turning loop, ~6 µs. The main thread's caches
 * also stay warm: a C echo call at concurrency 1 went from ~47 to ~33 µs
 * (medians of 10 000, with the worker's own spin), about the floor's round
 * trip. The price is the main thread's CPU while it waits, at most `micros`
 * a post. (Per call it was less, not more: main and worker together 90 ->
 * 77 µs of CPU a call in a tight loop, the wake-ups cost more than the wait.)
 *
 * While it turns, the workers' answer rings are read at every turn, so a
 * worker leaves its answer there without a post (see answer-ring.ts).
 */

/** What the poll reads at each turn: the lanes' answer rings. */
export interface PolledAnswers {
  /** Whether some task's answer is still awaited. */
  outstanding(): boolean;
  /** The poll starts (true) or stops (false): workers need not kick while it turns; at the stop the rings are read once more. */
  polling(on: boolean): void;
  /** Read the answers waiting. */
  collect(): void;
}
export class AnswerPoll {
  readonly #answers: PolledAnswers;
  /** The loop turns until then (performance.now() ms), while an answer is outstanding. */
  #until = 0;
  #turning = false;

  constructor(answers: PolledAnswers) {
    this.#answers = answers;
  }

  /** A short task was posted: keep the loop turning for up to `micros` while answers are outstanding. */
  start(micros: number): void {
    this.#until = performance.now() + micros / 1000;
    if (this.#turning) return;
    this.#turning = true;
    this.#answers.polling(true);
    setImmediate(this.#turn);
  }

  get turning(): boolean {
    return this.#turning;
  }

  readonly #turn = (): void => {
    const answers = this.#answers;
    answers.collect();
    if (answers.outstanding() && performance.now() < this.#until) {
      setImmediate(this.#turn);
    } else {
      this.#turning = false;
      answers.polling(false);
    }
  };
}
