/**
 * Component homes (host/sandbox/component-homes.ts): which workers the pool believes hold a component's instances,
 * and whether a new instance of it is costly. The dispatch's use of them is in task-lanes.test.ts; a distinct JS
 * tool's second call served by a reset on its home worker is in reset-routing.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ComponentHomes } from '../host/sandbox/component-homes.js';
import type { WorkerAccounting } from '../host/sandbox/protocol.js';

const answer = (threadId: number, extra: Partial<WorkerAccounting> = {}): WorkerAccounting => ({
  startedAt: 0, instance: 'restored', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId, ...extra,
});

describe('component homes', () => {
  it('makes a worker a home when it answers, one home per component and memory cap', () => {
    const homes = new ComponentHomes();
    const a = homes.of('a', 16);
    expect(homes.of('a', 16)).toBe(a);
    expect(homes.of('a', 32)).not.toBe(a);
    homes.answered(a, answer(1));
    homes.answered(a, answer(2));
    expect([...a.threads]).toEqual([1, 2]);
    expect(homes.of('a', 32).threads.size).toBe(0);
  });

  it('forgets a worker that dropped components (it does not say which) or is gone, in every home', () => {
    const homes = new ComponentHomes();
    const a = homes.of('a', 16);
    const b = homes.of('b', 16);
    homes.answered(a, answer(1));
    homes.answered(b, answer(1));
    homes.answered(b, answer(2));
    // Worker 1 answers a call of b after evicting: a is no longer believed held there; b is (it just ran).
    homes.answered(b, answer(1, { evictions: 1, instance: 'fresh', instantiateMs: 30 }));
    expect([...a.threads]).toEqual([]);
    expect([...b.threads].sort()).toEqual([1, 2]);
    homes.forget(2);
    expect([...b.threads]).toEqual([1]);
  });

  it('averages what fresh instances took: costly above 2 ms', () => {
    const homes = new ComponentHomes();
    const js = homes.of('js', 16);
    expect(js.costly).toBe(false);
    homes.answered(js, answer(1, { instance: 'fresh', instantiateMs: 25 }));
    expect(js.costly).toBe(true);
    // Restored and prewarmed instances say nothing of what a new one costs.
    for (let i = 0; i < 20; i += 1) homes.answered(js, answer(1, { instance: 'restored', instantiateMs: 0 }));
    expect(js.costly).toBe(true);
    const c = homes.of('c', 16);
    homes.answered(c, answer(1, { instance: 'fresh', instantiateMs: 0.3 }));
    expect(c.costly).toBe(false);
  });

  it('starts over past its bound, and a worker leaves only the homes it is in', () => {
    const homes = new ComponentHomes();
    const first = homes.of('c0', 16);
    homes.answered(first, answer(1));
    for (let i = 1; i < 4096; i += 1) homes.of(`c${i}`, 16);
    // The 4097th starts the table over: c0 is made anew.
    homes.of('c4096', 16);
    expect(homes.of('c0', 16)).not.toBe(first);
    homes.forget(1);
  });
});
