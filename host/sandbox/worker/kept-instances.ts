/**
 * A worker's budget over the instances it keeps between calls in
 * `conversation` isolation, over every component it runs: the bytes of
 * linear memory they hold in all. Without it a worker kept up to 32 instances
 * per component at up to `memory_mb` each (3.9 GiB held after the calls had
 * ended).
 *
 * Keeping an instance that would take the total past the budget first drops
 * the least recently kept others (their conversations get a new instance on
 * their next call, as after a crash); an instance larger than the whole budget
 * is not kept at all. Each instance dropped for the budget is counted (the
 * call that caused it reports a `kept_instances_mb` limit hit).
 *
 * What it does not do: count the instance a call is running on (it is counted
 * once released), an instance kept in `worker` isolation (one per component),
 * spares, or the glue's JS heap (the worker's heap cap bounds that).
 */
import { workerData } from 'node:worker_threads';
import { DEFAULT_KEPT_INSTANCE_MB, type SandboxWorkerData } from '../protocol.js';
import type { GuestInstance } from './guest-instance.js';

interface Kept {
  /** The map that holds it (a component's conversations), and its key there. */
  owner: Map<string, GuestInstance>;
  key: string;
  bytes: number;
}

export class KeptInstances {
  /** Least recently kept first. */
  readonly #entries = new Map<GuestInstance, Kept>();
  readonly #budgetBytes: number;
  #bytes = 0;

  constructor(budgetBytes: number) {
    this.#budgetBytes = budgetBytes;
  }

  /** Bytes of linear memory the kept instances hold. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Instances kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Keep `instance` in `owner` under `key`, as the most recently used (measuring its memory now), after
   * dropping the least recently used others as needed to stay within the budget. Returns how many
   * instances were dropped for the budget (this one included, when it alone is over and is not kept).
   */
  keep(owner: Map<string, GuestInstance>, key: string, instance: GuestInstance): number {
    this.forget(instance);
    const bytes = instance.memoryBytes();
    if (bytes > this.#budgetBytes) {
      if (owner.get(key) === instance) owner.delete(key);
      return 1;
    }
    let dropped = 0;
    for (const [other, kept] of this.#entries) {
      if (this.#bytes + bytes <= this.#budgetBytes) break;
      this.#drop(other, kept);
      dropped += 1;
    }
    owner.set(key, instance);
    this.#entries.set(instance, { owner, key, bytes });
    this.#bytes += bytes;
    return dropped;
  }

  /** Stop counting `instance` (dropped by its owner: poisoned, or past the owner's own cap). */
  forget(instance: GuestInstance): void {
    const kept = this.#entries.get(instance);
    if (kept === undefined) return;
    this.#entries.delete(instance);
    this.#bytes -= kept.bytes;
  }

  #drop(instance: GuestInstance, kept: Kept): void {
    if (kept.owner.get(kept.key) === instance) kept.owner.delete(kept.key);
    this.forget(instance);
  }
}

function budgetFromPool(): number {
  const bytes = (workerData as Partial<SandboxWorkerData> | null | undefined)?.keptInstanceBytes;
  return typeof bytes === 'number' && Number.isInteger(bytes) && bytes > 0 ? bytes : DEFAULT_KEPT_INSTANCE_MB * 1024 * 1024;
}

/** This worker's kept instances (one budget over every component it runs). */
export const keptInstances = new KeptInstances(budgetFromPool());
