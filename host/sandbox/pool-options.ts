/** The sandbox pool's options, their defaults and checks, and the worker script it starts (see pool.ts). */
import { availableParallelism } from 'node:os';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_IDLE_RELEASE_MS, DEFAULT_KEPT_INSTANCE_MB, DEFAULT_MEMORY_BUDGET_MB } from './protocol.js';
import { defaultClientWaits, type ClientWaitLimits } from './client-waits.js';

export interface SandboxPoolOptions {
  /** Worker threads (default: the machine's cores). */
  threads?: number;
  /** Tasks that may wait for a worker before calls are refused with OVERLOADED (default: 64 per thread). */
  maxQueue?: number;
  /**
   * Of those, how many one principal's calls may be (default: half of `maxQueue`, rounded up); waiting calls
   * are served principal by principal in turn (see task-queue.ts).
   */
  maxQueuePerPrincipal?: number;
  /** Idle workers above `minThreads` exit after this long (ms; default 60 s). */
  idleTimeoutMs?: number;
  /** V8 heap cap of each worker, in MiB (default 512). */
  maxHeapMb?: number;
  /**
   * How long a worker may take to prepare a spare instance between calls
   * (ms, default 5000): past it the guest's initialization is taken to hang,
   * the worker is terminated and replaced, and `onWedged` is told.
   */
  spareTimeoutMs?: number;
  /**
   * When a task may wait in a busy worker's port behind the task it runs
   * (see worker-holdings.ts): that task's tool averages under `averageMs`
   * per call and it was handed over less than `withinMs` ago (default
   * `{ averageMs: 1, withinMs: 2 }`; `averageMs` 0 turns it off). On a
   * 2-vCPU VM throughput at saturation rose 8-40 % with it.
   */
  waitBehind?: { averageMs?: number; withinMs?: number };
  /**
   * How long a worker with nothing to do may spin for its next task before
   * it sleeps (µs, default 150; 0: never), while fewer tasks are in flight
   * than there are workers (see lane-bell.ts).
   */
  spinMicros?: number;
  /**
   * Linear memory (MiB) the instances one worker keeps between calls in `conversation` isolation may hold in
   * all, over every component (default 512): keeping one more first drops the least recently used (see
   * worker/kept-instances.ts), each counted as a `kept_instances_mb` limit hit.
   */
  keptInstanceMb?: number;
  /**
   * Memory (MiB) the spares, snapshots and `worker`-isolation instances the workers hold between calls may take in
   * all (default 512), split evenly over the workers: past its share a worker drops the least recently called
   * components' instances (see worker/memory-budget.ts); their next call instantiates anew.
   */
  memoryBudgetMb?: number;
  /** A component uncalled this long (ms, default 60 000; 0: never) has its instances dropped by every worker. */
  idleReleaseMs?: number;
  /**
   * Workers that may wait for their calls' clients at once (a guest's sampling or elicitation request; default: all
   * workers but one, at least one); past it a guest's request is refused with OVERLOADED (see client-waits.ts).
   */
  clientWaits?: number;
  /** Of those, how many one principal may hold (default: half of `clientWaits`, rounded up). */
  clientWaitsPerPrincipal?: number;
}

export interface ResolvedPoolOptions {
  threads: number;
  maxQueue: number;
  maxQueuePerPrincipal: number;
  idleTimeoutMs: number;
  maxHeapMb: number;
  spareTimeoutMs: number;
  waitBehind: { averageMs: number; withinMs: number };
  spinMicros: number;
  keptInstanceMb: number;
  memoryBudgetMb: number;
  idleReleaseMs: number;
  clientWaitLimits: ClientWaitLimits;
}

/** See SandboxPoolOptions.spinMicros: longer than a main thread's turnaround between two calls at concurrency 1 (~35 µs). */
export const DEFAULT_SPIN_MICROS = 150;

export function resolveOptions(options: SandboxPoolOptions): ResolvedPoolOptions {
  const threads = options.threads ?? availableParallelism();
  if (!Number.isInteger(threads) || threads < 1) throw new TypeError('options.threads must be a positive integer');
  const maxQueue = options.maxQueue ?? threads * 64;
  if (!Number.isInteger(maxQueue) || maxQueue < 0) throw new TypeError('options.maxQueue must be a non-negative integer');
  const maxQueuePerPrincipal = Math.min(maxQueue, options.maxQueuePerPrincipal ?? Math.ceil(maxQueue / 2));
  if (!Number.isInteger(maxQueuePerPrincipal) || maxQueuePerPrincipal < 0) throw new TypeError('options.maxQueuePerPrincipal must be a non-negative integer');
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs < 0) throw new TypeError('options.idleTimeoutMs must be a non-negative number');
  const maxHeapMb = options.maxHeapMb ?? 512;
  if (!Number.isInteger(maxHeapMb) || maxHeapMb < 16) throw new TypeError('options.maxHeapMb must be an integer of at least 16');
  const spareTimeoutMs = options.spareTimeoutMs ?? 5_000;
  if (!Number.isFinite(spareTimeoutMs) || spareTimeoutMs <= 0) throw new TypeError('options.spareTimeoutMs must be a positive number');
  const waitBehind = { averageMs: options.waitBehind?.averageMs ?? 1, withinMs: options.waitBehind?.withinMs ?? 2 };
  if (!(waitBehind.averageMs >= 0) || !(waitBehind.withinMs >= 0)) throw new TypeError('options.waitBehind takes non-negative numbers');
  const spinMicros = options.spinMicros ?? DEFAULT_SPIN_MICROS;
  if (!Number.isInteger(spinMicros) || spinMicros < 0 || spinMicros > 10_000) throw new TypeError('options.spinMicros must be an integer from 0 to 10000');
  const keptInstanceMb = options.keptInstanceMb ?? DEFAULT_KEPT_INSTANCE_MB;
  if (!Number.isInteger(keptInstanceMb) || keptInstanceMb < 1) throw new TypeError('options.keptInstanceMb must be a positive integer');
  const memoryBudgetMb = options.memoryBudgetMb ?? DEFAULT_MEMORY_BUDGET_MB;
  if (!Number.isInteger(memoryBudgetMb) || memoryBudgetMb < 1) throw new TypeError('options.memoryBudgetMb must be a positive integer');
  const idleReleaseMs = options.idleReleaseMs ?? DEFAULT_IDLE_RELEASE_MS;
  if (!Number.isInteger(idleReleaseMs) || idleReleaseMs < 0) throw new TypeError('options.idleReleaseMs must be a non-negative integer');
  const max = options.clientWaits ?? defaultClientWaits(threads).max;
  if (!Number.isInteger(max) || max < 1) throw new TypeError('options.clientWaits must be a positive integer');
  const perPrincipal = options.clientWaitsPerPrincipal ?? defaultClientWaits(threads, max).perPrincipal;
  if (!Number.isInteger(perPrincipal) || perPrincipal < 1) throw new TypeError('options.clientWaitsPerPrincipal must be a positive integer');
  const clientWaitLimits = { max, perPrincipal: Math.min(perPrincipal, max) };
  return { threads, maxQueue, maxQueuePerPrincipal, idleTimeoutMs, maxHeapMb, spareTimeoutMs, waitBehind, spinMicros, keptInstanceMb, memoryBudgetMb, idleReleaseMs, clientWaitLimits };
}

/**
 * The worker script: the compiled CommonJS bootstrap next to this file, or,
 * when toolhost runs from its TypeScript sources (tests), a bootstrap that
 * loads the `.ts` entry through tsx. Both are CommonJS (see bootstrap.cts).
 */
export function workerScript(): { filename: string; execArgv: string[] } {
  const compiled = new URL('./worker/bootstrap.cjs', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return { filename: compiled.href, execArgv: [] };
  // From the sources, a built worker may be named instead (the test suite builds dist/ first): booting tsx in
  // every worker thread costs ~300 ms of CPU per worker. A built toolhost never reads this.
  const built = process.env.TOOLHOST_DEV_WORKER;
  if (built) return { filename: pathToFileURL(built).href, execArgv: [] };
  return { filename: new URL('./worker/dev-bootstrap.cjs', import.meta.url).href, execArgv: [] };
}

