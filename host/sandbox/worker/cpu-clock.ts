/**
 * CPU time of the current thread. On Linux the thread reads its own
 * `/proc/thread-self/schedstat` (first field: ns on CPU) through a kept file
 * descriptor, and knows its kernel thread id, so the main thread can read the
 * same clock (`/proc/self/task/<tid>/schedstat`) while the guest runs.
 * Elsewhere it falls back to the process's CPU time, which also counts other
 * threads, and says so.
 */
import { openSync, readSync, readlinkSync } from 'node:fs';
import { parseSchedstatMs } from '../thread-cpu.js';

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

/** CPU time in milliseconds (thread time where available). */
export function cpuTimeMs(): number {
  if (schedstatFd !== undefined) {
    const length = readSync(schedstatFd, buffer, 0, buffer.length, 0);
    return parseSchedstatMs(buffer.toString('latin1', 0, length));
  }
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
