/**
 * How the pool stops a worker (host/sandbox/worker-stops.ts): never before the answers the worker already posted are
 * read, never later than ANSWERS_WAIT_MS, once, and a dying worker is known as such from the first moment. The race it
 * closes (a worker's exit read before an answer it posted earlier) cannot be forced from outside, so each rule is
 * pinned down here on its own.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ANSWERS_WAIT_MS, WorkerStops } from '../host/sandbox/worker-stops.js';

/** Stops that count each worker's terminations. */
function counted(): { stops: WorkerStops; terminated: Map<number, number> } {
  const terminated = new Map<number, number>();
  return { stops: new WorkerStops((threadId) => terminated.set(threadId, (terminated.get(threadId) ?? 0) + 1)), terminated };
}

describe('stopping a worker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops a worker with no answer on its way at once, and only once', () => {
    const { stops, terminated } = counted();
    stops.stop(7, []);
    stops.stop(7, []);
    expect(terminated.get(7)).toBe(1);
    expect(stops.isDying(7)).toBe(true);
  });

  it('waits for the answers already posted, and stops the worker right after them', async () => {
    const { stops, terminated } = counted();
    let answer!: () => void;
    stops.stop(3, [new Promise<void>((resolve) => (answer = resolve))]);
    // Given no task meanwhile.
    expect(stops.isDying(3)).toBe(true);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS / 2);
    expect(terminated.get(3) ?? terminated.get(4) ?? 0).toBe(0);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(terminated.get(3) ?? terminated.get(4)).toBe(1);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS);
    expect(terminated.get(3) ?? terminated.get(4)).toBe(1);
  });

  it('stops the worker after ANSWERS_WAIT_MS when an answer never comes, and not again when it does', async () => {
    const { stops, terminated } = counted();
    let answer!: () => void;
    stops.stop(4, [new Promise<void>((resolve) => (answer = resolve)), Promise.reject(new Error('worker exited'))]);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS - 1);
    expect(terminated.get(3) ?? terminated.get(4) ?? 0).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(terminated.get(3) ?? terminated.get(4)).toBe(1);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(terminated.get(3) ?? terminated.get(4)).toBe(1);
  });

  it('forgets a worker that is gone: it is no longer dying, and a new stop of its id terminates again', () => {
    const { stops, terminated } = counted();
    stops.stop(5, []);
    stops.forget(5);
    expect(stops.isDying(5)).toBe(false);
    stops.stop(5, []);
    expect(stops.isDying(5)).toBe(true);
    expect(terminated.get(5)).toBe(2);
  });
});
