import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { wasiThreadClock } from '../host/sandbox/worker/wasi-thread-clock.js';

/** This thread's CPU time as the main thread's watchdog reads it (schedstat, ns), in ms. */
function schedstatMs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1e6;
}

describe.runIf(process.platform === 'linux')('the WASI thread CPU clock', () => {
  it('prints no experimental warning when it loads WASI (the first load in this process)', async () => {
    const warnings: string[] = [];
    const listener = (warning: Error): void => void warnings.push(warning.message);
    process.on('warning', listener);
    try {
      wasiThreadClock();
      // Warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    expect(warnings.filter((message) => message.includes('WASI'))).toEqual([]);
  });

  it('reads the clock schedstat prints, and moves with this thread\'s work', () => {
    const clock = wasiThreadClock();
    expect(clock).toBeTypeOf('function');
    const before = schedstatMs();
    const first = clock!();
    let x = 0;
    for (let i = 0; i < 5e6; i += 1) x += i % 7;
    const second = clock!();
    const after = schedstatMs();
    expect(x).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(first);
    // schedstat may lag the thread's own clock by up to a scheduler tick.
    expect(first).toBeGreaterThanOrEqual(before - 10);
    expect(second).toBeLessThanOrEqual(after + 10);
  });

});
