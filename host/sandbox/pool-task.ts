/**
 * One task of the sandbox pool on the main thread: its control block (cancel
 * flag, host-call doorbell, the guest's start as the worker publishes it),
 * its CPU watchdog, and the routing of its messages (events to the caller,
 * host calls answered through the worker's lane).
 *
 * A class rather than closures made per task: most calls use none of it
 * beyond the control block (no budget, no events, no host calls), and every
 * closure and typed-array view made per call was paid by every call.
 */
import { ToolhostError } from '../base/errors.js';
import type { ControlSlot } from './transport/control-slots.js';
import type { ProfileEntry } from './transport/task-profiles.js';
import { TaskStop, type StopSignal } from './task-stop.js';
import { readThreadCpuMs } from './thread-cpu.js';
import {
  CLAIM_ABANDONED,
  CLAIM_KILLED,
  CLAIM_TAKEN,
  CLAIM_WAITING,
  CONTROL_CANCELLED,
  CONTROL_CLAIM,
  CONTROL_ENDED,
  CONTROL_F64_CPU_USED_MS,
  CONTROL_F64_CPU_START_MS,
  CONTROL_F64_STARTED_AT,
  CONTROL_STARTED,
  CONTROL_TID,
  type RpcReply,
  type RpcRequest,
  type WorkerMessage,
} from './protocol.js';

/** How a task's messages are answered (what a task reads of the pool's `TaskHandlers`). */
export interface PoolTaskHandlers {
  /** Aborting it stops the task now: a queued task leaves the queue, a running one loses its worker. */
  signal?: StopSignal;
  /** Aborting it raises the guest's cooperative `cancelled()` flag. */
  cancelSignal?: AbortSignal;
  /**
   * The same without an AbortSignal (cheaper; used instead of `cancelSignal`
   * when given): calls `raise` when the guest should stop cooperatively (at
   * once if it already should); returns the unsubscribe.
   */
  onCancel?(raise: () => void): () => void;
  /** CPU time the guest's thread may use (ms); past it the worker is terminated with CPU_BUDGET_EXCEEDED. */
  cpuBudgetMs?: number;
  /** Whose share of the queue the task counts against: the call's authenticated principal (task-queue.ts). */
  principal?: string | undefined;
  /** A task's events (after a `limit` message the caller stops the task through `signal`). */
  onMessage(message: Exclude<WorkerMessage, { type: 'rpc' }>): void;
  rpc(request: RpcRequest): Promise<unknown>;
}

/** What the pool knows of a task stopped before its worker answered. */
export interface StoppedMeasures {
  queuedMs?: number;
  cpuMs?: number;
  /** The task was stopped before any worker started its guest: all its time was spent waiting for one. */
  waiting?: boolean;
}

/** The guest's start, as the worker published it in the control block. */
export interface GuestStart {
  tid: number | undefined;
  cpuStartMs: number;
  startedAt: number;
}

export class PoolTask {
  readonly taskId: number;
  /** The task's control block (a reused slot, see control-slots.ts). */
  readonly slot: ControlSlot;
  /** When the main thread submitted the task (epoch ms, sub-ms precision). */
  readonly submittedAt: number;
  /** What the pool watches: aborting it stops the task (the caller's signal, or the budget's controller). */
  readonly signal: StopSignal | undefined;
  /** Whose share of the queue it counts against (PoolTaskHandlers.principal). */
  readonly principal: string | undefined;
  readonly #handlers: PoolTaskHandlers;
  readonly #reply: (threadId: number, reply: RpcReply) => void;
  #budgetAbort: TaskStop | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  /** The last CPU reading, for when the thread is already gone (a stopped worker). */
  #lastUsed: number | undefined;
  #unwatchCancel: (() => void) | undefined;
  readonly #raiseCancel = (): void => {
    Atomics.store(this.slot.flags, CONTROL_CANCELLED, 1);
  };
  readonly #forwardAbort = (): void => this.#budgetAbort!.abort(this.#handlers.signal!.reason);

  /** `reply` answers a host call of worker `threadId` (nothing happens when that worker is gone). */
  constructor(taskId: number, slot: ControlSlot, handlers: PoolTaskHandlers, reply: (threadId: number, reply: RpcReply) => void) {
    this.taskId = taskId;
    this.slot = slot;
    this.submittedAt = performance.timeOrigin + performance.now();
    this.#handlers = handlers;
    this.principal = handlers.principal;
    this.#reply = reply;
    const budget = handlers.cpuBudgetMs;
    if (budget !== undefined) {
      // The caller's signal is forwarded to the budget's controller: the pool watches one signal.
      this.#budgetAbort = new TaskStop();
      if (handlers.signal?.aborted) this.#forwardAbort();
      else handlers.signal?.addEventListener('abort', this.#forwardAbort, { once: true });
      this.#watchdog = setTimeout(() => this.#watch(budget), Math.max(1, budget));
    }
    this.signal = this.#budgetAbort ?? handlers.signal;
    if (handlers.onCancel) {
      this.#unwatchCancel = handlers.onCancel(this.#raiseCancel);
    } else {
      const cancel = handlers.cancelSignal;
      if (cancel?.aborted) this.#raiseCancel();
      else cancel?.addEventListener('abort', this.#raiseCancel, { once: true });
    }
  }

  /** The call's profile (calls only): how long its tool's calls take decides whether a task may wait behind it. */
  profile: ProfileEntry | undefined;
  /** The worker the task was handed to last (see TaskDispatch), while it is there. */
  worker: number | undefined;
  /** When it was handed to that worker (performance.now()). */
  handedAt = 0;
  /** Handed to an awake worker: spinning for its next task, or about to (see lane-bell.ts); it takes the task without a wake-up. */
  toAwakeWorker = false;
  /** A warm task's worker (an instance made ahead there, see component-homes.ts): it goes there and nowhere else. */
  onlyTo: number | undefined;
  /** What becomes of the task until a worker gives it back (the pool's; see SandboxPool.#work). */
  work: Promise<unknown> | undefined;

  /** Whether a worker has claimed the task (it may have run guest code since; see CONTROL_CLAIM). */
  get claimed(): boolean {
    return Atomics.load(this.slot.flags, CONTROL_CLAIM) !== CLAIM_WAITING;
  }

  /**
   * What stopping the task takes: 'taken-back' when no worker had claimed it
   * (the worker holding it answers TaskAbandoned when it gets there), 'kill'
   * when its worker runs it (the worker must be stopped; it will not go on to
   * another task), 'nothing' when the worker is done with it (its answer is on its way).
   */
  stopClaim(): 'taken-back' | 'kill' | 'nothing' {
    const flags = this.slot.flags;
    if (Atomics.compareExchange(flags, CONTROL_CLAIM, CLAIM_WAITING, CLAIM_ABANDONED) === CLAIM_WAITING) return 'taken-back';
    return Atomics.compareExchange(flags, CONTROL_CLAIM, CLAIM_TAKEN, CLAIM_KILLED) === CLAIM_TAKEN ? 'kill' : 'nothing';
  }

  /**
   * `work` (what becomes of the task), or the task's stop, whichever
   * comes first. At the stop the task is taken back if no worker has claimed
   * it, and `terminate` stops the worker that runs it (see stopClaim); either
   * way the caller is answered at once, with the stop's reason.
   */
  untilStopped<T>(work: Promise<T>, terminate: (threadId: number) => void): Promise<T> {
    const signal = this.signal;
    if (signal === undefined) return work;
    return new Promise<T>((resolve, reject) => {
      const stop = (): void => {
        if (this.stopClaim() === 'kill' && this.worker !== undefined) terminate(this.worker);
        reject(signal.reason);
      };
      if (signal.aborted) {
        stop();
      } else {
        signal.addEventListener('abort', stop, { once: true });
        work.then(
          (value) => {
            signal.removeEventListener('abort', stop);
            resolve(value);
          },
          (error: unknown) => {
            signal.removeEventListener('abort', stop);
            reject(error);
          },
        );
      }
      // Given back after the caller was answered: nobody waits for it.
      work.catch(() => {});
    });
  }

  /** The guest's start, once the worker has published it. */
  guestStart(): GuestStart | undefined {
    const { flags, times } = this.slot;
    if (Atomics.load(flags, CONTROL_STARTED) === 0) return undefined;
    const tid = Atomics.load(flags, CONTROL_TID);
    return { tid: tid === 0 ? undefined : tid, cpuStartMs: times[CONTROL_F64_CPU_START_MS]!, startedAt: times[CONTROL_F64_STARTED_AT]! };
  }

  /** Whether the guest has returned (its CPU time is then final; see CONTROL_ENDED). */
  get ended(): boolean {
    return Atomics.load(this.slot.flags, CONTROL_ENDED) !== 0;
  }

  /** CPU time the guest has used so far (wall time without a per-thread clock); undefined before it starts. */
  cpuUsed(): number | undefined {
    if (this.ended) return (this.#lastUsed = this.slot.times[CONTROL_F64_CPU_USED_MS]!);
    const guest = this.guestStart();
    if (!guest) return undefined;
    if (guest.tid === undefined) return (this.#lastUsed = performance.timeOrigin + performance.now() - guest.startedAt);
    const now = readThreadCpuMs(guest.tid);
    if (now !== undefined) this.#lastUsed = now - guest.cpuStartMs;
    return this.#lastUsed;
  }

  /**
   * The CPU watchdog: once the guest starts, read its thread's CPU clock and
   * stop the worker when the budget is spent. A thread's CPU time never runs
   * ahead of wall time, so the first look can wait `budget` ms, and each
   * later one the budget that remains: the overshoot is one timer's lateness.
   * (A task still queued has used nothing: look again later.)
   */
  #watch(budgetMs: number): void {
    // Once the guest returned, its own CPU time is final: what the thread does next (posting the answer, making the
    // next spare) is not the call's, however late this look comes.
    const ended = this.ended;
    const used = this.cpuUsed();
    if (used === undefined) {
      this.#watchdog = setTimeout(() => this.#watch(budgetMs), Math.max(1, Math.min(budgetMs, 25)));
      return;
    }
    if (used >= budgetMs) {
      const clock = this.guestStart()?.tid === undefined ? 'wall time (no per-thread CPU clock here)' : 'CPU time';
      this.#budgetAbort!.abort(new ToolhostError('CPU_BUDGET_EXCEEDED', `the guest used ${Math.round(used)} ms of ${clock}, over its budget of ${budgetMs} ms`, {
        details: { budgetMs, usedMs: Math.round(used * 1000) / 1000 },
      }));
      return;
    }
    if (ended) return;
    this.#watchdog = setTimeout(() => this.#watch(budgetMs), Math.max(1, Math.min(budgetMs - used, 25)));
  }

  /** Stop watching the CPU clock (the task's worker answered or is gone). */
  stopWatchdog(): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = undefined;
  }

  /** One of the task's messages, from worker `threadId` (all of them reach the task before its answer). */
  receive(message: WorkerMessage, threadId: number): void {
    if (message.type === 'rpc') {
      this.#handlers.rpc(message.request).then(
        (value) => this.#reply(threadId, { id: message.id, ok: true, value }),
        (error: unknown) => this.#reply(threadId, { id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) }),
      );
    } else {
      this.#handlers.onMessage(message);
    }
  }

  /** Release what the task listens to. */
  dispose(): void {
    this.stopWatchdog();
    if (this.#unwatchCancel) this.#unwatchCancel();
    else this.#handlers.cancelSignal?.removeEventListener('abort', this.#raiseCancel);
    if (this.#budgetAbort) this.#handlers.signal?.removeEventListener('abort', this.#forwardAbort);
  }
}
