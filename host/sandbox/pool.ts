/**
 * The sandbox pool: piscina workers that run guest code, one task at a time
 * per worker (a worker may hold the next one, behind a short one: see
 * worker-holdings.ts), with a bounded queue. piscina starts, replaces and
 * caps the workers; tasks travel on each worker's task lane (task-lanes.ts),
 * and wait in the pool's own queue when no worker fits. A stop is the pool's,
 * not piscina's: a task no worker has claimed is taken back, a claimed one
 * loses its worker (PoolTask.untilStopped). Each task gets an id and a
 * shared control block for its flags (pool-task.ts; a reused slot, control-slots.ts); a call
 * carries its profile's id rather than its fixed parts (task-profiles.ts).
 * How anything travels to a worker and back is the transport's
 * (transport/host-end.ts): one ordered channel per worker, so a task's
 * events and host calls reach the pool before its answer.
 */
import { Piscina } from 'piscina';
import { ToolhostError } from '../base/errors.js';
import { ChurnTable } from '../core/churn-table.js';
import { ControlSlots } from './transport/control-slots.js';
import { resolveOptions, workerScript, type ResolvedPoolOptions, type SandboxPoolOptions } from './pool-options.js';
import { ClientWaits } from './client-waits.js';
import { PoolTask, type PoolTaskHandlers, type StoppedMeasures } from './pool-task.js';
import { WorkerHoldings } from './worker-holdings.js';
import { WorkerStops } from './worker-stops.js';
import { AnswerPoll } from './transport/answer-poll.js';
import { LaneBells, type SpinCounts } from './transport/lane-bell.js';
import { KeepAlive } from './transport/keep-alive.js';
import { isHello } from './transport/lane-codec.js';
import { SpareWatch } from './spare-watch.js';
import { TaskDispatch } from './task-dispatch.js';
import { LaneClosed } from './transport/task-lanes.js';
import { TaskProfiles, recordRun, type ProfileEntry } from './transport/task-profiles.js';
import { InstancesMadeAhead, type MadeAheadCounts } from './instances-made-ahead.js';
import type { StopSignal } from './task-stop.js';
import {
  CLAIM_DONE,
  CONTROL_CLAIM,
  type CallProfile,
  type CallTask,
  type CollectTask,
  type CoreModules,
  type DescribeTask,
  type SandboxWorkerData,
  type TaskAbandoned,
  type RpcReply,
  type TaskWire,
  type WorkerMessage,
  type WorkerHeap,
  type WorkerOutcome,
} from './protocol.js';

/** Messages a task's caller sees (the pool handles host calls itself). */
export type GuestEventMessage = Exclude<WorkerMessage, { type: 'rpc' }>;

/** How a task's messages are answered. */
export interface TaskHandlers extends PoolTaskHandlers {
  /** What the pool measured about a task whose worker was stopped (no worker accounting exists then). */
  onStopped?(measured: StoppedMeasures): void;
  /** The call's component's modules at a cap, for an instance made ahead elsewhere (instances-made-ahead.ts); without it, none is. */
  modulesFor?(memoryMb: number): Promise<CoreModules>;
}

export type TaskInput = Omit<CallTask, 'taskId' | 'control' | 'submittedAt'> | Omit<DescribeTask, 'taskId' | 'control' | 'submittedAt'>;

/** Times a task that no worker claimed is posted again after the worker holding it was lost. */
const REPOSTS = 3;

export type { SandboxPoolOptions } from './pool-options.js';
export { resolveOptions } from './pool-options.js';

export class SandboxPool {
  readonly #piscina: Piscina;
  readonly #options: ResolvedPoolOptions;
  #nextTaskId = 1;
  readonly #slots = new ControlSlots();
  readonly #profiles = new TaskProfiles();
  /** Where each running task's messages go, by task id (a ChurnTable, not a Map: see churn-table.ts). */
  readonly #routes = new ChurnTable<number, PoolTask>();
  /** Each worker's spare preparations, watched against their budget (see spare-watch.ts). */
  readonly #spares: SpareWatch;
  /** Each worker's lane bell (from its hello): may it spin for its next task, and does it (see lane-bell.ts). */
  readonly #bells: LaneBells;
  /** Keeps the event loop turning while a short task's answer is out (see answer-poll.ts). */
  readonly #answerPoll = new AnswerPoll({
    outstanding: () => this.#dispatch.lanes.hasUnanswered(),
    polling: (on) => this.#dispatch.lanes.polling(on),
    collect: () => this.#dispatch.lanes.collect(),
  });
  /** How a worker is stopped (after the answers it already posted are read, see worker-stops.ts). */
  readonly #stops = new WorkerStops((threadId) => this.#piscina.threads.find((worker) => worker.threadId === threadId)?.terminate());
  /** Where tasks go: each worker's task lane, and the queue of those no worker fits yet. */
  readonly #dispatch: TaskDispatch;
  /** Set by close(): every worker is being stopped. */
  #closing = false;
  /** What the last worker that died on its own said (a worker that fails as it starts never says hello). */
  #lastWorkerError: Error | undefined;
  /** Keeps the process alive while the pool has tasks (see keep-alive.ts). */
  readonly #keepAlive = new KeepAlive();
  /** Tasks taken back before a worker claimed them, and tasks posted again (see SandboxRunner.handedBack). */
  readonly #handedBack = { abandoned: 0, reposted: 0 };
  /** Which tasks each worker holds (what decides whether a task may wait behind another). */
  readonly #held: WorkerHoldings;
  readonly clientWaits: ClientWaits;
  /** Instances of hot components made ahead on another worker (a second home). */
  readonly #madeAhead: InstancesMadeAhead;

  constructor(options: SandboxPoolOptions = {}) {
    this.#options = resolveOptions(options);
    this.clientWaits = new ClientWaits(this.#options.clientWaitLimits);
    this.#held = new WorkerHoldings(this.#options.waitBehind);
    this.#bells = new LaneBells(this.#options.threads, this.#options.spinMicros);
    this.#spares = new SpareWatch(this.#options.spareTimeoutMs, (threadId) => this.#terminate(threadId));
    this.#dispatch = new TaskDispatch({
      isDying: (threadId) => this.#closing || this.#stops.isDying(threadId),
      isPreparing: (threadId) => this.#spares.isPreparing(threadId),
      isAwake: (threadId) => this.#bells.isSpinning(threadId) || this.#spares.isQuickPreparing(threadId),
      homes: (threadId) => this.#profiles.homes.count(threadId),
      preparingSince: (threadId) => this.#spares.preparingSince(threadId),
    }, this.#held, {
      // A task whose caller already gave up (its worker was stopped) has no route: drop the message.
      event: (threadId, taskId, message) => this.#routes.get(taskId)?.receive(message, threadId),
      closed: (threadId) => this.#forgetWorker(threadId),
    }, this.#options);
    this.#madeAhead = new InstancesMadeAhead({ spareTimeoutMs: this.#options.spareTimeoutMs, dispatch: this.#dispatch, homes: this.#profiles.homes,
      spares: this.#spares, closing: () => this.#closing, run: (input, handlers, threadId) => this.#run(input, handlers, threadId) });
    const script = workerScript();
    this.#piscina = new Piscina({
      filename: script.filename,
      execArgv: script.execArgv,
      minThreads: this.#options.threads,
      maxThreads: this.#options.threads,
      idleTimeout: this.#options.idleTimeoutMs,
      // Measurement tasks only (collect): one per worker.
      concurrentTasksPerWorker: 1,
      // Idle workers must run their event loop: that is when they read their
      // task lane and prepare the next call's spare instance. (With piscina's
      // default 'sync', an idle worker blocks in Atomics.wait.)
      atomics: 'async',
      resourceLimits: { maxOldGenerationSizeMb: this.#options.maxHeapMb },
      // A worker's env is its own empty copy: guest glue never sees the host's.
      env: {},
      workerData: {
        keptInstanceBytes: this.#options.keptInstanceMb * 1024 * 1024,
        // The host's memory budget, split evenly over the workers (worker/memory-budget.ts).
        memoryBudgetBytes: Math.floor((this.#options.memoryBudgetMb * 1024 * 1024) / this.#options.threads),
        idleReleaseMs: this.#options.idleReleaseMs,
      } satisfies SandboxWorkerData,
      // Only measurement tasks (collect) go through piscina's dispatch: any idle worker the pool is not stopping.
      loadBalancer: (_task, workers) => workers.find((worker) => worker.currentUsage === 0 && !this.#stops.isDying(worker.id)) ?? null,
    });
    this.#piscina.on('message', (post: unknown) => this.#onWorkerPost(post));
    // A worker that dies with no piscina task (all of ours travel on lanes) is reported here, not to a task:
    // its lane's tasks fail when the lane closes. Unheard, piscina's 'error' event would throw.
    this.#piscina.on('error', (error: unknown) => this.#workerDied(error instanceof Error ? error : new Error(String(error))));
  }

  /**
   * Be told when a worker was terminated because it did not finish preparing
   * a component's spare instance in time (its initialization hangs).
   */
  onWedged(listener: (componentId: string, threadId: number) => void): () => void {
    return this.#spares.onWedged(listener);
  }

  /** Spins of idle workers for their next task that caught one, and those that did not (see lane-bell.ts). */
  get spins(): SpinCounts {
    return this.#bells.spins();
  }

  get handedBack(): { readonly abandoned: number; readonly reposted: number } {
    return this.#handedBack;
  }

  /** Instances made ahead for hot components on a second worker, and those that failed (instances-made-ahead.ts). */
  get warms(): MadeAheadCounts {
    return this.#madeAhead.counts;
  }

  get threads(): number {
    return this.#options.threads;
  }

  /** Tasks waiting for a worker (see task-queue.ts). */
  get queueSize(): number {
    return this.#dispatch.queue.size;
  }

  /** Share of worker time spent with a task since the pool started (0..1). */
  get utilization(): number {
    return this.#dispatch.lanes.utilization(this.#options.threads);
  }

  /**
   * Run one task. Resolves with the worker's outcome once every message the
   * worker sent has been handled; rejects with a ToolhostError (OVERLOADED,
   * TOOL_CRASHED for a dead worker, or the abort reason).
   */
  run(input: TaskInput, handlers: TaskHandlers): Promise<WorkerOutcome> {
    const refusal = this.#dispatch.queue.refusal(handlers.principal);
    if (refusal) return Promise.reject(refusal);
    // Not async itself: an async function returning #run's promise would add turns to every call's answer.
    return this.#run(input, handlers);
  }

  readonly #reply = (threadId: number, reply: RpcReply): void => this.#dispatch.lanes.reply(threadId, reply);

  async #run(input: TaskInput, handlers: TaskHandlers, onlyToWorker?: number): Promise<WorkerOutcome> {
    const slot = this.#slots.acquire();
    const task = new PoolTask(this.#nextTaskId++, slot, handlers, this.#reply);
    if (onlyToWorker !== undefined) task.onlyTo = onlyToWorker;
    const { taskId } = task;
    this.#routes.set(taskId, task);
    try {
      const base = { taskId, control: slot.ref, submittedAt: task.submittedAt };
      const profile = input.kind === 'call' ? this.#profiles.entry(input) : undefined;
      const message: TaskWire = input.kind === 'call' ? this.#profiles.wire(input, profile!, base, this.#dispatch.lanes.threads()) : { ...input, ...base };
      task.profile = profile;
      let outcome: WorkerOutcome | TaskAbandoned;
      try {
        const work = this.#work(task, message, profile);
        task.work = work;
        outcome = await task.untilStopped(work, this.#terminateFor);
      } catch (error) {
        const used = task.cpuUsed();
        const guest = task.guestStart();
        handlers.onStopped?.({
          ...(guest ? { queuedMs: Math.max(0, guest.startedAt - task.submittedAt) } : { queuedMs: Math.max(0, performance.timeOrigin + performance.now() - task.submittedAt), waiting: true }),
          ...(used === undefined ? {} : { cpuMs: used }),
        });
        throw this.#taskFailure(error, task.signal);
      } finally {
        task.stopWatchdog();
      }
      if ('abandoned' in outcome) throw new ToolhostError('INTERNAL', 'a task the pool did not take back was answered as abandoned');
      const { accounting } = outcome;
      if (message.kind === 'call' && message.fixed) profile!.knownBy.add(accounting.threadId);
      accounting.queuedMs = Math.max(0, accounting.startedAt - task.submittedAt);
      if (profile) {
        recordRun(profile, accounting.ranMs ?? performance.timeOrigin + performance.now() - accounting.startedAt);
        this.#profiles.homes.answered(profile.home, accounting);
        if (profile.home.wantsAnotherHome && handlers.modulesFor !== undefined) this.#madeAhead.consider(profile.home, input, handlers.modulesFor);
      }
      if (accounting.preparing) this.#spares.watch(accounting.threadId, taskId, input.componentId);
      // Its events and host calls were all handled: the lane delivers them before the answer (see transport/host-end.ts).
      return outcome;
    } finally {
      task.dispose();
      this.#routes.delete(taskId);
    }
  }

  /**
   * What becomes of a task, until a worker gives it back: the worker's answer
   * (or TaskAbandoned, for a task the caller stopped before a worker claimed
   * it). A task no worker claimed is posted again when the worker holding it
   * is lost (stopped for another task, or dead): nothing of it ran. Its slot goes back only when a worker answered (control-slots.ts).
   */
  async #work(task: PoolTask, message: TaskWire, profile: ProfileEntry | undefined): Promise<WorkerOutcome | TaskAbandoned> {
    const queue = this.#dispatch.queue;
    const accepted = queue.accept(task.principal);
    if (accepted === 1) this.#keepAlive.ref();
    this.#bells.inFlight(accepted);
    let answered = false;
    try {
      for (let reposts = 0; ; reposts += 1) {
        try {
          const answer = this.#dispatch.dispatch(task, message);
          this.#pollIfShort(task, profile);
          let outcome = await answer;
          // A worker that lacks the call's profile (new, or it dropped its profiles) ran nothing: send the profile along.
          if ('profileMiss' in outcome) outcome = await this.#postWithProfile(task, message, profile?.profile);
          answered = true;
          if ('abandoned' in outcome) this.#handedBack.abandoned += 1;
          return outcome;
        } catch (error) {
          this.#held.release(task);
          if (task.signal?.aborted || task.claimed || reposts >= REPOSTS) throw error;
          this.#handedBack.reposted += 1;
        }
      }
    } finally {
      this.#held.release(task);
      const left = queue.giveBack(task.principal);
      if (left === 0) this.#keepAlive.unref();
      this.#bells.inFlight(left);
      if (answered) this.#slots.release(task.slot);
    }
  }

  /**
   * Hand a task to a worker again, with its call profile. (Inline in #work
   * for the first post: an async function around it cost every call a turn.)
   */
  async #postWithProfile(task: PoolTask, message: TaskWire, profile: CallProfile | undefined): Promise<WorkerOutcome | TaskAbandoned> {
    this.#held.release(task);
    if (message.kind === 'call' && profile) {
      // The worker said it lacks the profile, whatever the pool believed: it goes along.
      message.fixed = profile;
      delete message.knownBy;
    }
    const again = await this.#dispatch.dispatch(task, message);
    if ('profileMiss' in again) throw new ToolhostError('INTERNAL', 'a worker did not take the call profile it was sent');
    return again;
  }

  /** A stopped task's worker had claimed it: the worker is stopped (piscina replaces it; the task it held next is posted again). */
  readonly #terminateFor = (threadId: number): void => this.#terminate(threadId);

  /**
   * A call whose runs are usually shorter than a spin, handed to an awake
   * worker (spinning for it, or about to): the loop turns until its answer. Calls that
   * come back to back keep both sides awake; a call to a sleeping worker
   * (sparse traffic) lets the main thread sleep too (polling through that
   * worker's wake-up cost ~50 µs of CPU a call at 1 call a millisecond).
   * How long a call runs is the worker's own measure (WorkerAccounting.ranMs):
   * timed on the main thread it also counted how late the answer was read,
   * and one 5 ms scavenge turned polling off for the next ~10 calls.
   */
  #pollIfShort(task: PoolTask, profile: ProfileEntry | undefined): void {
    const micros = this.#bells.spinMicros;
    const runMs = profile?.runMs;
    if (task.toAwakeWorker && micros > 0 && runMs !== undefined && runMs * 1000 < micros) this.#answerPoll.start(micros);
  }

  /** Stop one worker once the answers it already posted are read (see worker-stops.ts); piscina replaces it. */
  #terminate(threadId: number): void {
    // The tasks it answered whose answers are still on their way (their claim says done; not read yet).
    const answering: Promise<unknown>[] = [];
    for (const task of this.#routes.values()) {
      if (task.worker === threadId && task.work !== undefined && Atomics.load(task.slot.flags, CONTROL_CLAIM) === CLAIM_DONE) answering.push(task.work);
    }
    this.#stops.stop(threadId, answering);
  }

  /** A message a worker posted on its parentPort: its hello (everything else travels on its lane). */
  #onWorkerPost(post: unknown): void {
    if (!isHello(post)) return;
    const { threadId } = post;
    this.#spares.add(threadId, post.status);
    this.#dispatch.lanes.welcome(post, this.#bells.add(threadId, post.bell));
    this.#lastWorkerError = undefined;
    this.#dispatch.drain();
  }

  /** A worker's lane closed: it exited (stopped by a budget, or by the pool). */
  #forgetWorker(threadId: number): void {
    this.#spares.forget(threadId);
    this.#bells.forget(threadId);
    this.#stops.forget(threadId);
    this.#held.forget(threadId);
    this.#profiles.forget(threadId);
  }

  /**
   * Collect every worker's garbage and read its heap, for measurements only: one
   * task per worker, all at once, each held at a barrier until all arrived (worker/heap.ts).
   */
  async collectGarbage(): Promise<WorkerHeap[]> {
    const workers = this.#options.threads;
    const task: CollectTask = { kind: 'collect', barrier: new SharedArrayBuffer(4), workers };
    const heaps = await Promise.all(Array.from({ length: workers }, () => this.#piscina.run(task) as Promise<WorkerHeap>));
    // A worker that ran two (one was busy past the barrier's timeout) is counted once.
    return [...new Map(heaps.map((heap) => [heap.threadId, heap])).values()];
  }

  #taskFailure(error: unknown, signal: StopSignal | undefined): ToolhostError {
    if (signal?.aborted) {
      const reason: unknown = signal.reason;
      return reason instanceof ToolhostError ? reason : new ToolhostError('CANCELLED', 'the call was aborted');
    }
    if (error instanceof ToolhostError) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof LaneClosed && !error.stopped && this.#lastWorkerError !== undefined) {
      return new ToolhostError('TOOL_CRASHED', `the sandbox worker died: ${this.#lastWorkerError.message}`, { details: { reason: 'worker-death' } });
    }
    if ((error instanceof LaneClosed && error.stopped) || message.includes('pool is closed') || message === 'Terminating worker thread') {
      return new ToolhostError('TOOL_CRASHED', `the sandbox worker was stopped: ${message}`, { details: { reason: 'worker-exit' } });
    }
    return new ToolhostError('TOOL_CRASHED', `the sandbox worker died: ${message}`, { details: { reason: 'worker-death' } });
  }

  /**
   * A worker died on its own (piscina's 'error'). Its lane's tasks fail as its
   * lane closes; with no worker left at all (they fail as they start, so none
   * will say hello), the queued tasks fail too rather than wait forever.
   */
  #workerDied(error: Error): void {
    this.#lastWorkerError = error;
    if (this.#dispatch.lanes.size === 0) this.#dispatch.failQueued(error);
  }

  async close(): Promise<void> {
    // Tasks still on a lane end as stopped (worker-exit), not as if their worker had died.
    this.#closing = true;
    this.#spares.stop();
    this.#dispatch.failQueued(new ToolhostError('TOOL_CRASHED', 'the sandbox pool was closed before the task ran', { details: { reason: 'worker-exit' } }));
    await this.#piscina.destroy();
    this.#keepAlive.close();
  }
}
