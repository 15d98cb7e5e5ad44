/**
 * A forced garbage collection of this worker, for measurements only (the
 * benchmark's no-growth check): without it a worker's heap is collected on
 * V8's own schedule, and a growth that would be collected cannot be told
 * from a leak. Never on a call's path: only a `collect` task, sent by
 * `SandboxPool.collectGarbage()`, gets here.
 *
 * The pool sends one collect task per worker at once, each holding its
 * worker at a barrier until all have arrived, so that every worker gets
 * exactly one (piscina hands a task only to an idle worker).
 */
import { getHeapStatistics } from 'node:v8';
import { threadId } from 'node:worker_threads';
import { forcedGc } from '../../core/forced-gc.js';
import type { CollectTask, WorkerHeap } from '../protocol.js';

/** How long a worker waits at the barrier for the others (one may be busy, or gone). */
const BARRIER_TIMEOUT_MS = 2_000;

/** Wait for every worker of the collection, then collect this one and read its heap (`components`: runtimes it holds). */
export function collectTask(task: CollectTask, components: number): WorkerHeap {
  const arrivals = new Int32Array(task.barrier);
  const arrived = Atomics.add(arrivals, 0, 1) + 1;
  if (arrived >= task.workers) {
    Atomics.notify(arrivals, 0);
  } else {
    const deadline = Date.now() + BARRIER_TIMEOUT_MS;
    for (let seen = arrived; seen < task.workers; seen = Atomics.load(arrivals, 0)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      Atomics.wait(arrivals, 0, seen, remaining);
    }
  }
  const gc = forcedGc();
  // Twice: the first pass may only queue finalizers (WeakRefs, FinalizationRegistry) whose memory the second frees.
  gc?.();
  gc?.();
  const heap = getHeapStatistics();
  return { threadId, collected: gc !== undefined, heapUsedBytes: heap.used_heap_size, heapTotalBytes: heap.total_heap_size, externalBytes: heap.external_memory, components };
}
