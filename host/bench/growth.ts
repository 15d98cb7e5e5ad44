/**
 * Memory over many calls: the no-growth check (a long run in the default
 * isolation, the process's RSS and the main thread's heap read after a forced
 * garbage collection at every tenth of it) and what one kept instance costs
 * (RSS added by the instances `conversation` isolation keeps, one per
 * conversation and worker).
 *
 * The worker threads are collected too, through the pool (one `collect`
 * task per worker, see sandbox/worker/heap.ts), and their heaps read: before
 * that, V8 collected them on its own schedule and a worker heap that had not
 * been collected yet could not be told from a leak (measured on C echo: RSS
 * slope 14.9 MiB/100k without, 1-3 MiB/100k with, worker heaps flat). Growth
 * and slope are still read over the second half of the run: V8's pages and
 * malloc's arenas settle during the first, and a leak is a growth that goes on.
 */
import { forcedGc } from '../core/forced-gc.js';
import type { WorkerHeap } from '../core/registry-types.js';
import type { CallAccounting } from '../core/result.js';
import type { GrowthCheck, KeptInstances } from './row.js';
import { round3 } from './statistics.js';

const MIB = 1024 * 1024;

/** What one call told the check. */
export interface GrowthCall {
  (conversationId?: string): Promise<{ ok: boolean; error?: string; accounting?: CallAccounting }>;
}

/** Collects the sandbox workers' garbage and reads their heaps (undefined: the pool cannot). */
export type WorkerCollector = () => Promise<WorkerHeap[] | undefined>;



function settle(): void {
  const gc = forcedGc();
  gc?.();
  gc?.();
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/**
 * Run `calls` calls (`concurrency` in flight) and read memory at eleven
 * checkpoints. Growth is the last checkpoint minus the one at half the run;
 * the slope (MiB per 100,000 calls) is fitted over the second half.
 */
export async function measureGrowth(label: string, call: GrowthCall, calls: number, concurrency: number, collectWorkers?: WorkerCollector): Promise<GrowthCheck> {
  const checkpoints: Array<{ calls: number; rssMb: number; heapMb: number; workerHeapMb?: number }> = [];
  let errors = 0;
  let firstError: string | undefined;
  let workersCollected = collectWorkers !== undefined;
  const read = async (done: number): Promise<void> => {
    settle();
    const heaps = await collectWorkers?.();
    if (!heaps?.every((heap) => heap.collected)) workersCollected = false;
    const usage = process.memoryUsage();
    const point: (typeof checkpoints)[number] = { calls: done, rssMb: usage.rss / MIB, heapMb: usage.heapUsed / MIB };
    if (heaps) point.workerHeapMb = heaps.reduce((sum, heap) => sum + heap.heapUsedBytes, 0) / MIB;
    checkpoints.push(point);
  };
  const chunk = Math.max(1, Math.floor(calls / 10));
  let done = 0;
  await read(0);
  while (done < calls) {
    const target = Math.min(calls, done + chunk);
    let next = done;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < target) {
          next += 1;
          const outcome = await call().catch((error: unknown) => ({ ok: false, error: error instanceof Error ? error.message : String(error) }));
          if (!outcome.ok) {
            errors += 1;
            firstError ??= outcome.error ?? 'unknown error';
          }
        }
      }),
    );
    done = target;
    await read(done);
  }
  const settled = checkpoints.slice(Math.floor(checkpoints.length / 2));
  const first = settled[0]!;
  const last = settled.at(-1)!;
  const perHundredK = (values: Array<[number, number]>): number => slope(values) * 100_000;
  const check: GrowthCheck = {
    label,
    calls,
    concurrency,
    errors,
    gcForced: forcedGc() !== undefined,
    rssBeforeMb: round3(checkpoints[0]!.rssMb),
    rssHalfMb: round3(first.rssMb),
    rssEndMb: round3(last.rssMb),
    rssMaxMb: round3(Math.max(...settled.map((point) => point.rssMb))),
    rssGrowthMb: round3(last.rssMb - first.rssMb),
    rssSlopeMbPer100k: round3(perHundredK(settled.map((point) => [point.calls, point.rssMb]))),
    heapGrowthMb: round3(last.heapMb - first.heapMb),
    heapSlopeMbPer100k: round3(perHundredK(settled.map((point) => [point.calls, point.heapMb]))),
    workerGcForced: workersCollected,
    checkpoints: checkpoints.map((point) => ({
      calls: point.calls,
      rssMb: round3(point.rssMb),
      heapMb: round3(point.heapMb),
      ...(point.workerHeapMb === undefined ? {} : { workerHeapMb: round3(point.workerHeapMb) }),
    })),
  };
  const workers = settled.flatMap((point): Array<[number, number]> => (point.workerHeapMb === undefined ? [] : [[point.calls, point.workerHeapMb]]));
  if (workers.length === settled.length && workers.length > 0) {
    check.workerHeapGrowthMb = round3(workers.at(-1)![1] - workers[0]![1]);
    check.workerHeapSlopeMbPer100k = round3(perHundredK(workers));
  }
  if (firstError !== undefined) check.firstError = firstError;
  return check;
}

/**
 * RSS one kept instance costs: call `conversations` conversations (each
 * several times, so every worker serves most of them) and divide the RSS
 * they added by the instances kept, one per conversation and worker (from
 * `accounting.workerThreadId`).
 */
export async function measureKeptInstances(label: string, call: GrowthCall, conversations: number, rounds = 4): Promise<KeptInstances> {
  settle();
  const before = process.memoryUsage.rss();
  const kept = new Set<string>();
  for (let round = 0; round < rounds; round += 1) {
    await Promise.all(
      Array.from({ length: conversations }, async (_, index) => {
        const outcome = await call(`bench-kept-${index}`);
        const thread = outcome.accounting?.workerThreadId;
        if (outcome.ok && thread !== undefined) kept.add(`${thread}/${index}`);
      }),
    );
  }
  settle();
  const addedMb = (process.memoryUsage.rss() - before) / MIB;
  return { label, conversations, instances: kept.size, rssAddedMb: round3(addedMb), rssPerInstanceMb: kept.size === 0 ? 0 : round3(addedMb / kept.size) };
}
