/**
 * CPU time of the current thread. On Linux the thread reads its own CPU
 * clock (through WASI's thread CPU clock, see wasi-thread-clock.ts, else its
 * `/proc/thread-self/schedstat` through a kept file descriptor: first field,
 * ns on CPU) and knows its kernel thread id, so the main thread can read the
 * same clock (`/proc/self/task/<tid>/schedstat`) while the guest runs.
 * Elsewhere it falls back to the process's CPU time, which also counts other
 * threads, and says so.
 */
import { openSync, readSync, readlinkSync } from 'node:fs';
import { parseSchedstatMs } from '../thread-cpu.js';
import { wasiThreadClock } from './wasi-thread-clock.js';

export type CpuClockKind = 'thread' | 'process';

const buffer = Buffer.alloc(128);
let schedstatFd: number | undefined;
let tid: number | undefined;
try {
  schedstatFd = openSync('/proc/thread-self/schedstat', 'r');
  // /proc/thread-self links to /proc/<pid>/task/<tid>.
  tid = Number(/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'))?.[1]) || undefined;
} catch {
  schedstatFd = undefined;
  tid = undefined;
}

export const cpuClockKind: CpuClockKind = schedstatFd === undefined ? 'process' : 'thread';

/** This thread's kernel id, when the thread CPU clock is available. */
export const threadTid: number | undefined = tid;

/** The thread clock without a file read, where it reads what schedstat does (checked once, here). */
const fastThreadClock = schedstatFd === undefined ? undefined : sameClock(wasiThreadClock());

/** CPU time in milliseconds (thread time where available). */
export function cpuTimeMs(): number {
  if (fastThreadClock !== undefined) return fastThreadClock();
  if (schedstatFd !== undefined) {
    const length = readSync(schedstatFd, buffer, 0, buffer.length, 0);
    return parseSchedstatMs(buffer.toString('latin1', 0, length));
  }
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * `clock` if it agrees with schedstat (the clock the main thread reads): a
 * schedstat reading, then the clock, then schedstat again must be in order
 * (within a scheduler tick, the most schedstat may lag).
 */
function sameClock(clock: (() => number) | undefined): (() => number) | undefined {
  if (clock === undefined || schedstatFd === undefined) return undefined;
  const schedstat = (): number => parseSchedstatMs(buffer.toString('latin1', 0, readSync(schedstatFd!, buffer, 0, buffer.length, 0)));
  const before = schedstat();
  const reading = clock();
  const after = schedstat();
  const tickMs = 10;
  return reading >= before - tickMs && reading <= after + tickMs ? clock : undefined;
}
