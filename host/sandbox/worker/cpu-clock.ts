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

/**
 * The thread's clock as it will read when the next task's guest starts,
 * taken when the worker finished its last piece of work (a task, or the
 * spare it prepared after one). The kernel brings a thread's schedstat up to
 * date only when the thread is switched out or at a scheduler tick, so a
 * reading at a guest's start almost always equals the one taken before the
 * worker went idle; taking it then keeps a file read off every call's path.
 * (Under load, when the next task follows without a pause, the reading also
 * counts that task's dispatch in the worker: microseconds, below the clock's
 * tick.) Thread clock only: the process clock also runs for other threads.
 */
let nextStart: number | undefined;

/** Read the clock now and keep the reading as the next guest's start. */
export function markIdle(): number {
  const now = cpuTimeMs();
  if (schedstatFd !== undefined) nextStart = now;
  return now;
}

/** The CPU clock at a guest's start: the reading kept by `markIdle` (once), or a fresh one. */
export function cpuAtGuestStart(): number {
  const kept = nextStart;
  nextStart = undefined;
  return kept ?? cpuTimeMs();
}

/** CPU time in milliseconds (thread time where available). */
export function cpuTimeMs(): number {
  if (schedstatFd !== undefined) {
    const length = readSync(schedstatFd, buffer, 0, buffer.length, 0);
    return parseSchedstatMs(buffer.toString('latin1', 0, length));
  }
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
