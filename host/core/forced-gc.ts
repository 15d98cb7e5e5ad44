/**
 * V8's `gc()`, for measurements only (the benchmark's no-growth check, on the
 * main thread and in each worker): reached without starting the thread with
 * --expose-gc. Undefined when V8 refuses; asked once per thread.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export type GcFunction = () => void;

let collect: GcFunction | null | undefined;

export function forcedGc(): GcFunction | undefined {
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as GcFunction;
    } catch {
      collect = null;
    }
  }
  return collect ?? undefined;
}
