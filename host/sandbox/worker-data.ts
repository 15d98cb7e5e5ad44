/**
 * What the pool tells each of its workers when it starts them (piscina's
 * `workerData`), and the defaults of those values: the budgets a worker keeps
 * its instances within between calls.
 */

/** The default budget of one worker's kept instances (sandbox `keptInstanceMb`, `host.pool.kept_instances_mb`; see worker/kept-instances.ts). */
export const DEFAULT_KEPT_INSTANCE_MB = 512;

/** The default memory budget of the instances, spares and snapshots a host's workers hold between calls (sandbox `memoryBudgetMb`, `host.pool.memory_budget_mb`; see worker/memory-budget.ts). */
export const DEFAULT_MEMORY_BUDGET_MB = 512;
/** How long a component may go uncalled before a worker drops its instances (sandbox `idleReleaseMs`, `host.pool.idle_release_ms`). */
export const DEFAULT_IDLE_RELEASE_MS = 60_000;

/** What the pool tells its workers (piscina's `workerData`). */
export interface SandboxWorkerData {
  /** Bytes of linear memory this worker's kept instances (`conversation` isolation) may hold in all. */
  keptInstanceBytes: number;
  /** This worker's share of the memory budget: bytes its components' spares, snapshots and kept (`worker` isolation) instances may hold in all. */
  memoryBudgetBytes?: number;
  /** A component uncalled this long (ms) has its instances dropped (0: never). */
  idleReleaseMs?: number;
}
