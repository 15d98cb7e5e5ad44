/**
 * What stops a pool task: the one signal piscina watches for it (piscina
 * takes any object with `addEventListener`/`removeEventListener`, `aborted`
 * and `reason`). An AbortController and its signal cost the main thread ~5 µs
 * to make, per call; this costs next to nothing. The pool's handlers accept
 * either (a sandbox process passes its own AbortSignal).
 */

/** The part of an AbortSignal the pool and piscina use. */
export interface StopSignal {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class TaskStop implements StopSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: Array<() => void> | undefined;

  /** Stop the task for `reason`; listeners are told once (later calls do nothing). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /** Listeners are called once (as with `{ once: true }`), with no event. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.#listeners?.indexOf(listener) ?? -1;
    if (at !== -1) this.#listeners!.splice(at, 1);
  }
}
