import { describe, expect, it } from 'vitest';
import { rateSettled, warmUp, warmUpCapMs } from '../host/bench/measure.js';

describe('bench warm-up', () => {
  it('settles only once two blocks in a row are no more than 10 % above the best rate before them', () => {
    // The rates of C echo's first blocks at 8 in flight (calls per ms): still rising.
    expect(rateSettled([2.5, 3.7, 5.3, 6.6, 11.2])).toBe(false);
    expect(rateSettled([2.5, 3.7, 5.3, 6.6, 11.2, 11.1])).toBe(false);
    expect(rateSettled([2.5, 3.7, 5.3, 6.6, 11.2, 11.1, 12.0])).toBe(true);
    // One block above the best by more than 10 % starts the count again.
    expect(rateSettled([10, 10, 10, 12, 10])).toBe(false);
    expect(rateSettled([10, 10, 10, 12, 10, 11])).toBe(true);
    // A slower block (a collection, the scheduler) counts as steady.
    expect(rateSettled([10, 6, 9])).toBe(true);
    expect(rateSettled([10, 9])).toBe(false);
  });

  it('makes at least the calls asked for, past its cap too', async () => {
    let made = 0;
    const call = async (): Promise<{ ok: boolean }> => {
      made += 1;
      return { ok: true };
    };
    const warm = await warmUp(call, 1000, 4);
    expect(warm.calls).toBe(made);
    expect(warm.calls).toBeGreaterThanOrEqual(1000);
    expect(warm.errors).toBe(0);

    // Past its cap, a warm-up still makes the least calls asked for, and stops there.
    const capped = await warmUp(call, 1000, 4, 0);
    expect(capped).toMatchObject({ calls: 1000, errors: 0 });
    expect(warmUpCapMs(20)).toBe(200);
    expect(warmUpCapMs(8000)).toBe(5000);
  });

  it('stops at the first block with a failed call, with its error', async () => {
    let made = 0;
    const warm = await warmUp(async () => (++made === 150 ? { ok: false, error: 'TOOL_CRASHED: no' } : { ok: true }), 100, 2);
    expect(warm).toMatchObject({ calls: 200, settled: false, errors: 1, firstError: 'TOOL_CRASHED: no' });
  });
});
