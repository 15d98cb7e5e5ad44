/**
 * Reading another thread's CPU clock from the main thread (Linux): the first
 * field of `/proc/self/task/<tid>/schedstat` is the thread's time on CPU in
 * nanoseconds. A read costs a few microseconds.
 */
import { readFileSync } from 'node:fs';

/** The first field of a schedstat line (ns on CPU), in ms. */
export function parseSchedstatMs(text: string): number {
  const space = text.indexOf(' ');
  return Number(text.slice(0, space === -1 ? undefined : space)) / 1e6;
}

/** CPU time of thread `tid` of this process, in ms; undefined once the thread is gone. */
export function readThreadCpuMs(tid: number): number | undefined {
  try {
    return parseSchedstatMs(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1'));
  } catch {
    return undefined;
  }
}
