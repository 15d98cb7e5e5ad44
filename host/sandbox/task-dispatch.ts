/**
 * Which worker takes a task, and the queue of tasks no worker fits yet.
 *
 * A task goes to an idle worker, and first to one that holds its component
 * (its home, see component-homes.ts): it serves the call from an instance it
 * has instead of making one; a call of a component no worker holds goes to
 * the idle worker that holds the fewest (each worker's memory budget is its
 * share of the pool's). Among the rest, an awake worker comes first (it
 * spins for its next task, or will once its quick reset is done: no wake-up,
 * see lane-bell.ts), then one that is not preparing a spare (one that is
 * would start the task only once its spare is made; a quick reset of the last
 * instance does not count), then one that is; else the task waits behind a
 * short task (see worker-holdings.ts); otherwise it waits here, in order,
 * until a worker's lane frees up or a new worker says hello. A task taken
 * back while it waits (its caller stopped it) leaves without ever reaching a
 * worker.
 */
import { CLAIM_ABANDONED, CONTROL_CLAIM, type TaskAnswer, type TaskWire } from './protocol.js';
import type { ComponentHome } from './component-homes.js';
import type { PoolTask } from './pool-task.js';
import { TaskQueue } from './task-queue.js';
import { LaneClosed, TaskLanes, type TaskLaneEvents } from './transport/task-lanes.js';
import type { WorkerHoldings } from './worker-holdings.js';

/** What the pool knows of its workers that decides where a task goes. */
export interface WorkerStates {
  /** Being stopped: given nothing. */
  isDying(threadId: number): boolean;
  /** Making a spare instance after its last answer. */
  isPreparing(threadId: number): boolean;
  /** Awake: spinning for its next task, or finishing a quick reset after which it spins; it takes a task without a wake-up (see lane-bell.ts). */
  isAwake(threadId: number): boolean;
  /** How many components the worker is believed to hold (component-homes.ts); absent: not known. */
  homes?(threadId: number): number;
  /** When the worker's running preparation started (epoch ms), undefined when none has started; absent: not known. */
  preparingSince?(threadId: number): number | undefined;
}

interface QueuedTask {
  task: PoolTask;
  wire: TaskWire;
  resolve(answer: TaskAnswer): void;
  reject(error: Error): void;
}

export class TaskDispatch {
  /** Each worker's task lane, by thread id (opened at its hello). */
  readonly lanes: TaskLanes;
  readonly #workers: WorkerStates;
  readonly #held: WorkerHoldings;
  /** The sandbox's queue (task-queue.ts): its admission is the pool's (SandboxPool.run), its waiting list this dispatch's. */
  readonly queue: TaskQueue<QueuedTask>;

  /**
   * `queue`: the pool's limits (a queue of its own, unbounded, by default: a test's);
   * `lanes`: where the lanes hand a task's events and host calls, and say a worker's lane closed.
   */
  constructor(workers: WorkerStates, held: WorkerHoldings, lanes: Pick<TaskLaneEvents, 'event' | 'closed'> = {}, limits?: { threads: number; maxQueue: number; maxQueuePerPrincipal?: number }) {
    const maxQueue = limits?.maxQueue ?? Number.POSITIVE_INFINITY;
    this.queue = new TaskQueue(limits?.threads ?? 1, maxQueue, (queued: QueuedTask) => queued.task.principal, limits?.maxQueuePerPrincipal ?? maxQueue);
    this.#workers = workers;
    this.#held = held;
    this.lanes = new TaskLanes({ ...lanes, freed: () => this.drain(), stopping: (threadId) => workers.isDying(threadId) });
  }

  /** Post `wire` to a worker that fits now, or queue it until one does. */
  dispatch(task: PoolTask, wire: TaskWire): Promise<TaskAnswer> {
    // A warm task goes to the worker it was made for (the pool saw it idle, see `idleOutside`), or fails: never queued.
    const onlyTo = task.onlyTo;
    if (onlyTo !== undefined) {
      if (this.#workers.isDying(onlyTo)) return Promise.reject(new LaneClosed(onlyTo, true));
      return this.lanes.post(this.#held.handOver(onlyTo, task), wire);
    }
    if (this.queue.length === 0) {
      const threadId = this.#pick(task);
      if (threadId !== undefined) return this.lanes.post(threadId, wire);
    }
    return new Promise<TaskAnswer>((resolve, reject) => {
      this.queue.push({ task, wire, resolve, reject });
    });
  }

  /** Hand queued tasks to workers, oldest first, while one fits (a lane was freed, or a worker said hello). */
  drain(): void {
    for (let head = this.queue.head(); head !== undefined; head = this.queue.head()) {
      if (Atomics.load(head.task.slot.flags, CONTROL_CLAIM) === CLAIM_ABANDONED) {
        this.queue.shift();
        head.resolve({ abandoned: head.task.taskId });
        continue;
      }
      const threadId = this.#pick(head.task);
      if (threadId === undefined) return;
      this.queue.shift();
      this.lanes.send(threadId, head.wire, head.resolve, head.reject);
    }
  }

  /** Fail every queued task (the pool closes, or no worker can start). */
  failQueued(error: Error): void {
    for (const queued of this.queue.takeAll()) queued.reject(error);
  }

  /**
   * A worker for `task` (recorded as handed over), or undefined when none fits.
   * Among idle workers, one that holds the task's component (its home, see
   * component-homes.ts) comes first: awake, then asleep, then, when a new
   * instance of the component is costly, busy preparing (a reset, ~1 ms for
   * componentize-js, against a new instance's 10-40 ms); then the others as
   * before: awake, asleep, preparing, behind a short task.
   */
  #pick(task: PoolTask): number | undefined {
    const home = task.profile?.home;
    const homes = home !== undefined && home.threads.size > 0 ? home.threads : undefined;
    // A component no worker holds yet: a new instance wherever it goes, so it goes where fewer are held.
    if (home !== undefined && homes === undefined && this.#workers.homes !== undefined) return this.#leastHeld(task, this.#workers.homes);
    let awake: number | undefined;
    let idle: number | undefined;
    let preparing: number | undefined;
    let homeIdle: number | undefined;
    let homePreparing: number | undefined;
    let behind: number | undefined;
    for (const threadId of this.lanes.threads()) {
      if (this.#workers.isDying(threadId)) continue;
      const load = this.lanes.load(threadId);
      if (load === 0) {
        const isHome = homes?.has(threadId) === true;
        // An awake worker (spinning, or about to once its quick reset is done) takes the task without a wake-up.
        if (this.#workers.isAwake(threadId)) {
          if (isHome) home!.servedAtHome();
          if (isHome || homes === undefined) return this.#toAwake(threadId, task);
          awake ??= threadId;
        } else if (!this.#workers.isPreparing(threadId)) {
          if (isHome) homeIdle ??= threadId;
          else idle ??= threadId;
        } else if (isHome) {
          // Of two homes busy preparing, the one that started first is done first (an unstarted one is last).
          if (homePreparing === undefined || this.#startedEarlier(threadId, homePreparing)) homePreparing = threadId;
        } else {
          preparing ??= threadId;
        }
      } else if (behind === undefined && this.#held.mayWaitBehind(threadId, load)) {
        behind = threadId;
      }
    }
    const atHome = homeIdle ?? (home?.costly === true ? homePreparing : undefined);
    if (atHome !== undefined) {
      // Waiting for a busy home while a worker outside it idles: calls back to back (component-homes.ts).
      if (atHome === homeIdle) home!.servedAtHome();
      else if (awake !== undefined || idle !== undefined) home!.waitedForBusyHome();
    }
    if (atHome === undefined && awake !== undefined) return this.#toAwake(awake, task);
    const pick = atHome ?? idle ?? homePreparing ?? preparing ?? behind;
    return pick === undefined ? undefined : this.#held.handOver(pick, task);
  }

  /**
   * For a call of a component no worker holds: the idle worker holding the fewest components (an awake one on a
   * tie, one preparing only when no other is idle), else one a short task may wait behind. Each worker's
   * memory budget is its share of the pool's: a run of first calls of distinct tools sent to the awake worker
   * filled its budget and evicted them all before their second calls while the other worker held none.
   */
  #leastHeld(task: PoolTask, homes: (threadId: number) => number): number | undefined {
    let best: number | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let behind: number | undefined;
    for (const threadId of this.lanes.threads()) {
      if (this.#workers.isDying(threadId)) continue;
      const load = this.lanes.load(threadId);
      if (load !== 0) {
        if (behind === undefined && this.#held.mayWaitBehind(threadId, load)) behind = threadId;
        continue;
      }
      const awake = this.#workers.isAwake(threadId);
      // Preparing outranks any count; a held component counts 2, so one held fewer beats awake.
      const rank = (!awake && this.#workers.isPreparing(threadId) ? 1e9 : 0) + 2 * homes(threadId) + (awake ? 0 : 1);
      if (rank < bestRank) {
        best = threadId;
        bestRank = rank;
      }
    }
    if (best !== undefined && this.#workers.isAwake(best)) return this.#toAwake(best, task);
    const pick = best ?? behind;
    return pick === undefined ? undefined : this.#held.handOver(pick, task);
  }

  /**
   * A worker that could take an instance of `home`'s component made ahead
   * now: idle (no task, no preparation, not being stopped), holding none of
   * its instances; undefined when none is, or tasks are waiting (they come first).
   */
  idleOutside(home: ComponentHome): number | undefined {
    if (this.queue.length > 0) return undefined;
    for (const threadId of this.lanes.threads()) {
      if (home.threads.has(threadId) || this.#workers.isDying(threadId) || this.lanes.load(threadId) !== 0) continue;
      if (this.#workers.isPreparing(threadId)) continue;
      return threadId;
    }
    return undefined;
  }

  #startedEarlier(a: number, b: number): boolean {
    const since = this.#workers.preparingSince;
    if (since === undefined) return false;
    return (since(a) ?? Number.POSITIVE_INFINITY) < (since(b) ?? Number.POSITIVE_INFINITY);
  }

  #toAwake(threadId: number, task: PoolTask): number {
    task.toAwakeWorker = true;
    return this.#held.handOver(threadId, task);
  }
}
