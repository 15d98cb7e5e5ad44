/**
 * How the pool stops a worker (host/sandbox/worker-stops.ts): never before the answers the worker already posted are
 * read, never later than ANSWERS_WAIT_MS, once, and a dying worker is known as such from the first moment. The race it
 * closes (a worker's exit read before an answer it posted earlier) cannot be forced from outside, so each rule is
 * pinned down here on its own, with piscina's view of a worker as the pool sees it (the Worker behind a symbol).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ANSWERS_WAIT_MS, WorkerStops } from '../host/sandbox/worker-stops.js';

const kWorker = Symbol('kWorkerData');

function view(id: number): { id: number; terminated: number; [kWorker]: { worker: { terminate(): Promise<number> } } } {
  const made = {
    id,
    terminated: 0,
    [kWorker]: {
      worker: {
        terminate: (): Promise<number> => {
          made.terminated += 1;
          return Promise.resolve(1);
        },
      },
    },
  };
  return made;
}

describe('stopping a worker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops a worker with no answer on its way at once, and only once', () => {
    const stops = new WorkerStops<ReturnType<typeof view>>();
    const worker = view(7);
    stops.see(worker);
    stops.stop(7, []);
    stops.stop(7, []);
    expect(worker.terminated).toBe(1);
    expect(stops.isDying(7)).toBe(true);
  });

  it('waits for the answers already posted, and stops the worker right after them', async () => {
    const stops = new WorkerStops<ReturnType<typeof view>>();
    const worker = view(3);
    stops.see(worker);
    let answer!: () => void;
    stops.stop(3, [new Promise<void>((resolve) => (answer = resolve))]);
    // Given no task meanwhile.
    expect(stops.isDying(3)).toBe(true);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS / 2);
    expect(worker.terminated).toBe(0);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.terminated).toBe(1);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS);
    expect(worker.terminated).toBe(1);
  });

  it('stops the worker after ANSWERS_WAIT_MS when an answer never comes, and not again when it does', async () => {
    const stops = new WorkerStops<ReturnType<typeof view>>();
    const worker = view(4);
    stops.see(worker);
    let answer!: () => void;
    stops.stop(4, [new Promise<void>((resolve) => (answer = resolve)), Promise.reject(new Error('worker exited'))]);
    await vi.advanceTimersByTimeAsync(ANSWERS_WAIT_MS - 1);
    expect(worker.terminated).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(worker.terminated).toBe(1);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.terminated).toBe(1);
  });

  it('forgets a worker that is gone: its id may be seen again and is not dying', () => {
    const stops = new WorkerStops<ReturnType<typeof view>>();
    stops.see(view(5));
    stops.stop(5, []);
    stops.forget(5);
    expect(stops.isDying(5)).toBe(false);
    // A worker the balancer never saw is not stopped (nothing to stop it through).
    stops.stop(6, []);
    expect(stops.isDying(6)).toBe(false);
  });
});
