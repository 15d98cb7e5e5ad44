/**
 * A single-consumer async queue: the producer pushes, the consumer iterates.
 * Pushing after `close` is ignored, so nothing can follow a terminal event.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  readonly #buffer: T[] = [];
  #waiting: ((result: IteratorResult<T>) => void) | undefined;
  #closed = false;
  #iterated = false;
  /** Set by `last()`: the consumer wants only the last value, so nothing is buffered. */
  #keepLast: { value: T | undefined; resolve?: (value: T | undefined) => void } | undefined;

  push(value: T): void {
    if (this.#closed) return;
    if (this.#keepLast) {
      this.#keepLast.value = value;
      return;
    }
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting({ value, done: false });
    } else {
      this.#buffer.push(value);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#keepLast) {
      this.#keepLast.resolve?.(this.#keepLast.value);
      return;
    }
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  /**
   * Consume the channel for its last value only (the value pushed just
   * before `close`, undefined when none was): what was buffered is dropped
   * and later values are not kept. Like iterating, this may be done once.
   * It saves a consumer that wants only the end (a call's terminal event)
   * a promise and its turns for every value.
   */
  last(): Promise<T | undefined> {
    this.#claim();
    const keep: { value: T | undefined; resolve?: (value: T | undefined) => void } = { value: this.#buffer.at(-1) };
    this.#buffer.length = 0;
    if (this.#closed) return Promise.resolve(keep.value);
    this.#keepLast = keep;
    return new Promise((resolve) => {
      keep.resolve = resolve;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    this.#claim();
    return {
      next: () => {
        const value = this.#buffer.shift();
        if (value !== undefined) return Promise.resolve({ value, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.#waiting = resolve;
        });
      },
      return: () => {
        this.#buffer.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  #claim(): void {
    if (this.#iterated) throw new TypeError('a call\'s event stream can be iterated only once');
    this.#iterated = true;
  }
}
