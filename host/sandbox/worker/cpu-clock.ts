/**
 * CPU time of the current thread. On Linux the thread reads its own
 * `/proc/thread-self/schedstat` (first field: ns on CPU) through a kept file
 * descriptor; elsewhere it falls back to the process's CPU time, which also
 * counts other threads, and says so.
 */
import { openSync, readSync } from 'node:fs';

export type CpuClockKind = 'thread' | 'process';

const buffer = Buffer.alloc(128);
let schedstatFd: number | undefined;
try {
  schedstatFd = openSync('/proc/thread-self/schedstat', 'r');
} catch {
  schedstatFd = undefined;
}

export const cpuClockKind: CpuClockKind = schedstatFd === undefined ? 'process' : 'thread';

/** CPU time in milliseconds (thread time where available). */
export function cpuTimeMs(): number {
  if (schedstatFd !== undefined) {
    const length = readSync(schedstatFd, buffer, 0, buffer.length, 0);
    const text = buffer.toString('latin1', 0, length);
    const space = text.indexOf(' ');
    return Number(text.slice(0, space === -1 ? undefined : space)) / 1e6;
  }
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
