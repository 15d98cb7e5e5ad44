/**
 * The spare-preparation status block between a worker and the pool: what
 * the pool may take for a preparation that overran its budget (the worker is
 * then stopped). Each case is a way an honest call was once stopped with it.
 */
import { describe, expect, it } from 'vitest';
import { SpareStatus } from '../host/sandbox/spare-status.js';
import { SpareWatch } from '../host/sandbox/spare-watch.js';

const BUDGET_MS = 5_000;

/** The worker's block and the pool's view of the same memory. */
function pair(): { worker: SpareStatus; pool: SpareStatus } {
  const worker = new SpareStatus();
  return { worker, pool: new SpareStatus(worker.buffer) };
}

describe("the pool's view of spare preparations", () => {
  it('counts a worker making only quick resets as awake, not as preparing', () => {
    const watch = new SpareWatch(BUDGET_MS, () => {});
    const worker = new SpareStatus();
    watch.add(4, worker.buffer);
    worker.announce(true);
    expect([watch.isPreparing(4), watch.isQuickPreparing(4)]).toEqual([false, true]);
    worker.announce(false);
    expect([watch.isPreparing(4), watch.isQuickPreparing(4)]).toEqual([true, false]);
    worker.end(false);
    worker.end(true);
    expect([watch.isPreparing(4), watch.isQuickPreparing(4)]).toEqual([false, false]);
    watch.stop();
  });
});

describe('spare status block', () => {
  it('tells a quick preparation (a reset) from a slow one, and both still count as pending and timed', () => {
    const { worker, pool } = pair();
    worker.announce(true);
    expect(pool.pending).toBe(1);
    expect(pool.slow).toBe(0);
    worker.announce(false);
    expect(pool.slow).toBe(1);
    worker.start(3, 1_000);
    expect(pool.overran(BUDGET_MS, 1_000 + BUDGET_MS)).toBe(true);
    worker.end(true);
    expect([pool.pending, pool.slow]).toEqual([1, 1]);
    worker.end(false);
    expect([pool.pending, pool.slow]).toEqual([0, 0]);
  });

  it('a new worker that announced its first preparation has not overrun, however late the pool looks', () => {
    const { worker, pool } = pair();
    worker.announce();
    expect(pool.pending).toBe(1);
    expect(pool.overran(BUDGET_MS, Date.now() + 3_600_000)).toBe(false);
  });

  it('an announced preparation waiting behind a long call is not timed; it is once it starts', () => {
    const { worker, pool } = pair();
    const t0 = 1_000_000;
    worker.announce();
    worker.start(7, t0);
    worker.end();
    // The next answer announces again; a call then runs first, for longer than the spare budget.
    worker.announce();
    expect(pool.overran(BUDGET_MS, t0 + BUDGET_MS * 3)).toBe(false);
    worker.start(9, t0 + BUDGET_MS * 3);
    expect(pool.task).toBe(9);
    expect(pool.overran(BUDGET_MS, t0 + BUDGET_MS * 3 + 1)).toBe(false);
    expect(pool.overran(BUDGET_MS, t0 + BUDGET_MS * 4)).toBe(true);
    worker.end();
    expect(pool.pending).toBe(0);
    expect(pool.overran(BUDGET_MS, t0 + BUDGET_MS * 10)).toBe(false);
  });

  it('two announced preparations: the count stays up until both ended, and only the running one is timed', () => {
    const { worker, pool } = pair();
    worker.announce();
    worker.announce();
    worker.start(1, 100);
    worker.end();
    expect(pool.pending).toBe(1);
    expect(pool.overran(BUDGET_MS, 100 + BUDGET_MS)).toBe(false);
    worker.start(2, 200);
    expect(pool.overran(BUDGET_MS, 200 + BUDGET_MS)).toBe(true);
    worker.end();
    expect(pool.pending).toBe(0);
  });
});
