/**
 * Instances made ahead: a second home for a hot component (see
 * component-homes.ts for when a component is hot). The pool sends an idle
 * worker that holds none of the component's instances a warm task (a
 * `describe` marked `warm`: the worker makes an instance, warms it with
 * describe() and snapshots it, as every spare is, and keeps it as the spare),
 * off every call's path.
 *
 * What it guarantees:
 * - guest code it runs (the component's initialization and describe()) has a
 *   budget: the spare budget (`spareTimeoutMs`), from when the guest starts;
 *   past it the worker is stopped (piscina replaces it) and the component is
 *   reported wedged, as a hung spare is (two such hangs quarantine it);
 * - one at a time in the pool, only on a worker idle when it is sent, never
 *   while tasks wait for a worker, and never queued (a warm task whose worker
 *   is gone fails: task-dispatch.ts);
 * - at most once per component (made or failed), until the homes start over.
 * What it does not do: count the instance anywhere but in the worker's memory
 * budget (an instance like any other there), or stop a call that arrives
 * meanwhile from waiting for that worker in a sandbox process (its host counts
 * the worker free: see docs/limits.md).
 */
import { ToolhostError } from '../base/errors.js';
import type { ComponentHome } from './component-homes.js';
import type { PoolTaskHandlers } from './pool-task.js';
import type { CoreModules, DescribeTask, WorkerAccounting, WorkerOutcome } from './protocol.js';
import { TaskStop } from './task-stop.js';

/** A warm task as the pool runs it. */
export type WarmTaskInput = Omit<DescribeTask, 'taskId' | 'control' | 'submittedAt'> & { warm: true };

/** What of the pool a warm needs. */
export interface WarmingPool {
  readonly spareTimeoutMs: number;
  /** Where an idle worker outside the component's homes is found (task-dispatch.ts). */
  readonly dispatch: { idleOutside(home: ComponentHome): number | undefined };
  /** Told that the worker answered: it holds an instance of the component now. */
  readonly homes: { answered(home: ComponentHome, accounting: WorkerAccounting): void };
  /** Told that a warm overran its budget: its worker is being stopped (spare-watch.ts). */
  readonly spares: { reportWedged(componentId: string, threadId: number): void };
  /** Whether the pool is closing (nothing is made then). */
  closing(): boolean;
  /** Run the warm task on `threadId` and nowhere else. */
  run(input: WarmTaskInput, handlers: PoolTaskHandlers, threadId: number): Promise<WorkerOutcome>;
}

/** Instances made ahead, and those that failed. */
export interface MadeAheadCounts {
  readonly made: number;
  readonly failed: number;
}

export class InstancesMadeAhead {
  readonly #pool: WarmingPool;
  /** One is being made (one at a time). */
  #making = false;
  readonly #counts = { made: 0, failed: 0 };

  constructor(pool: WarmingPool) {
    this.#pool = pool;
  }

  get counts(): MadeAheadCounts {
    return this.#counts;
  }

  /**
   * A call of `home`'s component was answered: make an instance of it ahead
   * on an idle worker if the component wants another home and nothing else
   * is being made. `modulesFor` answers the worker's request for its modules.
   */
  consider(home: ComponentHome, component: { componentId: string; memoryMb: number; moduleUrl: string }, modulesFor: (memoryMb: number) => Promise<CoreModules>): void {
    if (!home.wantsAnotherHome || this.#making || this.#pool.closing()) return;
    const threadId = this.#pool.dispatch.idleOutside(home);
    if (threadId === undefined) return;
    this.#making = true;
    home.madeAhead = true;
    const { componentId, memoryMb, moduleUrl } = component;
    const budgetMs = this.#pool.spareTimeoutMs;
    const budget = new TaskStop();
    let timer: NodeJS.Timeout | undefined;
    const handlers: PoolTaskHandlers = {
      signal: budget,
      // The clock starts when the worker is about to run the guest's code (its modules and glue are the host's part).
      onMessage: (message) => {
        if (message.type !== 'guest-starting' || timer !== undefined) return;
        timer = setTimeout(() => {
          budget.abort(new ToolhostError('WALL_TIMEOUT', `an instance made ahead did not initialize within ${budgetMs} ms`));
          this.#pool.spares.reportWedged(componentId, threadId);
        }, budgetMs);
        timer.unref();
      },
      rpc: async (request) => {
        if (request.op === 'modules' && request.componentId === componentId) return modulesFor(request.memoryMb);
        throw new Error(`${request.op} is not available while an instance is made ahead`);
      },
    };
    this.#pool.run({ kind: 'describe', warm: true, componentId, memoryMb, moduleUrl }, handlers, threadId).then((outcome) => {
      if (!outcome.ok) throw new Error(outcome.error.message);
      this.#pool.homes.answered(home, outcome.accounting);
      this.#counts.made += 1;
    }).catch(() => {
      this.#counts.failed += 1;
    }).finally(() => {
      clearTimeout(timer);
      this.#making = false;
      home.servedAtHome();
    });
  }
}
