/**
 * The sandbox's worker pool and the one place that owns it: started on first
 * use, in this process (`thread` containment) or in a supervised sandbox
 * process (`process`), its state for `/healthz` and `/metrics`, its workers'
 * garbage (measurements), and its end. The loader runs components on it and
 * tells it where module bytes come from; the registry reads its stats and
 * closes it. Nothing else starts a pool.
 *
 * What it does not do: load or compile components (./loader.ts), or decide
 * which worker a task goes to (./pool.ts, ./task-dispatch.ts).
 */
import type { SandboxHandle, SandboxStats, WorkerHeap } from '../core/registry-types.js';
import type { SandboxOptions } from './sandbox-options.js';
import { SandboxPool } from './pool.js';
import type { CoreModuleBytes } from './process/messages.js';
import { ProcessSandboxPool } from './process/supervisor.js';
import type { Containment, SandboxRunner } from './sandbox-runner.js';

/** What the pool asks of the components' owner (the loader). */
export interface ComponentSupply {
  /** A component's capped and checked core modules, for a sandbox process to compile. */
  moduleBytes(componentId: string, memoryMb: number): Promise<CoreModuleBytes>;
  /** A worker hung preparing a spare instance of this component and was replaced. */
  wedged(componentId: string): void;
}

export class Sandbox implements SandboxHandle {
  readonly #options: SandboxOptions;
  #supply: ComponentSupply | undefined;
  #pool: SandboxRunner | undefined;

  constructor(options: SandboxOptions = {}) {
    this.#options = options;
  }

  get containment(): Containment {
    return this.#options.containment ?? 'thread';
  }

  /** Where module bytes come from and who hears of a wedged component: the loader, once. */
  supply(supply: ComponentSupply): void {
    if (this.#supply !== undefined && this.#supply !== supply) throw new Error('a sandbox serves one loader');
    this.#supply = supply;
  }

  /** The worker pool, started on first use. */
  get pool(): SandboxRunner {
    if (!this.#pool) {
      const supply = this.#supply;
      const { containment: _containment, cacheDir: _cacheDir, outputLimits: _outputLimits, tableElements: _tableElements, describeTimeoutMs: _describeTimeoutMs, fetchRemote: _fetchRemote, ...poolOptions } = this.#options;
      this.#pool = this.containment === 'process'
        ? new ProcessSandboxPool({
          ...poolOptions,
          moduleBytes: (componentId, memoryMb) => supply?.moduleBytes(componentId, memoryMb) ?? Promise.reject(new Error(`no component ${componentId} is loaded`)),
        })
        : new SandboxPool(this.#options);
      this.#pool.onWedged((componentId) => supply?.wedged(componentId));
    }
    return this.#pool;
  }

  /** Ask a sandbox process to compile a component ahead of its first call (thread containment compiles in this process). */
  warm(componentId: string, memoryMb: number): void {
    const pool = this.pool;
    if (pool instanceof ProcessSandboxPool) pool.warm(componentId, memoryMb);
  }

  /** The pool's state, once it has started. */
  stats(): SandboxStats | undefined {
    const pool = this.#pool;
    if (!pool) return undefined;
    const stats: SandboxStats = { threads: pool.threads, queueSize: pool.queueSize, utilization: pool.utilization, containment: this.containment };
    stats.clientWaits = { waiting: pool.clientWaits.waiting, ...pool.clientWaits.limits };
    if (pool.process) stats.process = { ...pool.process };
    if (pool.handedBack) stats.handedBack = { ...pool.handedBack };
    if (pool.spins) stats.spins = { ...pool.spins };
    if (pool.warms) stats.warms = { ...pool.warms };
    return stats;
  }

  /** Collect every worker's garbage and read its heap (measurements only; the in-process pool only). */
  async collectWorkerGarbage(): Promise<WorkerHeap[] | undefined> {
    return this.#pool?.collectGarbage?.();
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.close();
  }
}
