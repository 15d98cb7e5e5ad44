/**
 * A worker's memory budget over what it holds for components between their
 * calls (issue 28: memory follows use, not what is loaded): each component's
 * spare instance (with its snapshot), the instance its last call left to be
 * reset, and the instance `worker` isolation keeps. Past the worker's share
 * of `host.pool.memory_budget_mb`, the least recently called components'
 * instances are dropped (evicted); a component uncalled for
 * `host.pool.idle_release_ms` has its instances dropped as well. An evicted
 * component's next call makes a new instance (`accounting.reinstantiated`),
 * exactly as for a component never called in this worker: the same fresh
 * instance, never anything a dropped instance held.
 *
 * Compiled code counts only for a variant of a component's modules that a
 * call's memory cap needed beyond the one compiled at load (issue 36, M8:
 * each distinct `memory_mb` kept a variant forever): its estimated size
 * (`codeBytes`, load/core-compile.ts) is held as long as the variant is, and
 * evicting it drops the variant whole (`drop`: its instances, kept ones too,
 * and the worker's reference to the modules; a later call asks for them again).
 *
 * A tool's own images (issue 37, item 2: the per-tool part of a split engine,
 * load/engine-split.ts; `imageBytes`) count too, as long as the worker holds
 * its modules: evicting a runtime, for the budget or when idle, drops it whole
 * (`drop`: its instances, its reference to its modules, images included), so
 * a released tool holds nothing in the worker; its next call asks the main
 * thread for its modules again (which re-reads them from the transpile cache
 * if it released them too, load/module-variants.ts). A runtime that keeps
 * instances per conversation is not dropped whole (those are a conversation's
 * state, kept-instances.ts budgets them): only its other instances go.
 *
 * What it does not count: the instance a call is running on (counted once
 * released), instances kept per conversation (kept-instances.ts has their own
 * budget), the shared engine's compiled code (one per process for every tool
 * that carries it), the glue's JS (an imported module stays; tools built with
 * one toolchain share it), or the JS heap.
 * Sizes are the instances' linear memory and snapshot copies (a memory's
 * untouched pages count though they take no RSS: the budget errs high).
 */
import { workerData } from 'node:worker_threads';
import { DEFAULT_IDLE_RELEASE_MS, DEFAULT_MEMORY_BUDGET_MB, type SandboxWorkerData } from '../protocol.js';
import type { GuestInstance } from './guest-instance.js';

/** What the budget reads and drops of a component runtime (component-runtime.ts). */
export interface BudgetedRuntime {
  spare?: GuestInstance;
  spareRestored?: boolean;
  awaitingReset?: GuestInstance;
  kept?: GuestInstance;
  /** Set when its instances were dropped, until a call makes a new one. */
  evicted?: boolean;
  /** Estimated bytes of compiled code held for this runtime alone (a caller's memory cap's variant), else absent. */
  codeBytes?: number;
  /** Bytes of the tool's own images its modules hold (load/core-compile.ts `imageBytes`), else absent. */
  imageBytes?: number;
  /**
   * Forget the runtime whole (its modules with it: the next call asks for them again). Returns false when it
   * must stay (it keeps instances per conversation); with `codeBytes` it always goes.
   */
  drop?: () => boolean;
}

export class MemoryBudget {
  /** Least recently called first, with when each was last called (ms). */
  readonly #order = new Map<BudgetedRuntime, number>();
  /**
   * What each runtime held when last measured (at its calls, see `touch` and
   * `enforce`), and their sum: kept up to date rather than summed over every
   * runtime per call (a worker may know hundreds of components).
   */
  readonly #held = new Map<BudgetedRuntime, number>();
  #total = 0;
  readonly #budgetBytes: number;
  readonly #idleMs: number;
  /** Evictions not yet reported in an answer's accounting. */
  #unreported = 0;

  constructor(budgetBytes: number, idleMs: number) {
    this.#budgetBytes = budgetBytes;
    this.#idleMs = idleMs;
  }

  /** `runtime` is being called: the most recently used. */
  touch(runtime: BudgetedRuntime, now: number): void {
    this.#order.delete(runtime);
    this.#order.set(runtime, now);
    this.#measure(runtime);
  }

  /** Bytes `runtime` holds between calls. */
  static held(runtime: BudgetedRuntime): number {
    let bytes = 0;
    if (runtime.spare !== undefined) bytes += runtime.spare.heldBytes();
    if (runtime.awaitingReset !== undefined) bytes += runtime.awaitingReset.heldBytes();
    if (runtime.kept !== undefined) bytes += runtime.kept.heldBytes();
    return bytes + (runtime.codeBytes ?? 0) + (runtime.imageBytes ?? 0);
  }

  /** Bytes every runtime held when last measured. */
  get bytes(): number {
    return this.#total;
  }

  /**
   * Measure `current` again (its call just ended), then drop the least
   * recently called runtimes' instances (never `current`'s) until the worker
   * is within its budget. Returns how many were dropped.
   */
  enforce(current?: BudgetedRuntime): number {
    if (current !== undefined) this.#measure(current);
    if (this.#total <= this.#budgetBytes) return 0;
    let dropped = 0;
    for (const runtime of this.#order.keys()) {
      if (this.#total <= this.#budgetBytes) break;
      if (runtime === current || (this.#held.get(runtime) ?? 0) === 0) continue;
      if (this.#evict(runtime)) dropped += 1;
    }
    this.#unreported += dropped;
    return dropped;
  }

  /** Drop the instances of runtimes not called for the idle time (none with 0). Returns how many were dropped. */
  sweep(now: number): number {
    if (this.#idleMs <= 0) return 0;
    let dropped = 0;
    for (const [runtime, calledAt] of this.#order) {
      if (now - calledAt < this.#idleMs) break;
      // Measured now: a spare made after its call's answer was not counted then.
      if (MemoryBudget.held(runtime) === 0) continue;
      if (this.#evict(runtime)) dropped += 1;
    }
    this.#unreported += dropped;
    return dropped;
  }

  /** How often `sweep` should run (ms), or undefined when idle release is off. */
  get sweepEveryMs(): number | undefined {
    return this.#idleMs <= 0 ? undefined : Math.max(100, Math.floor(this.#idleMs / 4));
  }

  /** Evictions since the last call, not taken. */
  get unreported(): number {
    return this.#unreported;
  }

  /** Evictions since the last call (reported with its answer, then forgotten). */
  takeUnreported(): number {
    const count = this.#unreported;
    this.#unreported = 0;
    return count;
  }

  #measure(runtime: BudgetedRuntime): void {
    const bytes = MemoryBudget.held(runtime);
    this.#total += bytes - (this.#held.get(runtime) ?? 0);
    this.#held.set(runtime, bytes);
  }

  /** Drop what `runtime` holds; returns whether anything went (false: it holds only what must stay). */
  #evict(runtime: BudgetedRuntime): boolean {
    const hadInstances = runtime.spare !== undefined || runtime.awaitingReset !== undefined || runtime.kept !== undefined;
    const wasEvicted = runtime.evicted;
    MemoryBudget.evict(runtime);
    this.#total -= this.#held.get(runtime) ?? 0;
    this.#held.set(runtime, 0);
    // Dropped whole, modules and all (the next call starts over), unless it keeps conversations' instances.
    if (runtime.drop?.() === true) {
      this.#order.delete(runtime);
      this.#held.delete(runtime);
      return true;
    }
    // What it still holds (its modules' images, beside conversations' instances) counts on.
    this.#measure(runtime);
    if (!hadInstances) runtime.evicted = wasEvicted;
    return hadInstances;
  }

  /** Drop what `runtime` holds between calls: the next call makes a new instance. */
  static evict(runtime: BudgetedRuntime): void {
    runtime.spare = undefined;
    runtime.spareRestored = undefined;
    runtime.awaitingReset = undefined;
    runtime.kept = undefined;
    runtime.evicted = true;
  }
}

function fromPool(): MemoryBudget {
  const data = workerData as Partial<SandboxWorkerData> | null | undefined;
  const bytes = data?.memoryBudgetBytes;
  const idle = data?.idleReleaseMs;
  return new MemoryBudget(
    typeof bytes === 'number' && Number.isInteger(bytes) && bytes > 0 ? bytes : (DEFAULT_MEMORY_BUDGET_MB * 1024 * 1024) / 2,
    typeof idle === 'number' && Number.isInteger(idle) && idle >= 0 ? idle : DEFAULT_IDLE_RELEASE_MS,
  );
}

/** This worker's memory budget (its share of the host's). */
export const memoryBudget = fromPool();
