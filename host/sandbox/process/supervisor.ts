/**
 * Process containment: the SandboxPool runs in a child process (child.ts) and this supervisor stands in for it in
 * the host, with the same surface. A fatal error of V8 in a sandbox worker (an abort, an out-of-memory inside V8
 * itself) then ends the child, never the host:
 * - the calls the child was running end with TOOL_CRASHED (one each), naming the signal or exit code;
 * - calls not yet handed to it wait here and run on the next child (started at once);
 * - a child that answers no heartbeat for `heartbeatMs` (stopped with SIGSTOP, or its main thread wedged) is
 *   killed with SIGKILL and counts as such a death (heartbeat.ts), its calls ending with
 *   `details.reason: "sandbox-process-unresponsive"`;
 * - a child that dies without running anything (it cannot start) is started again after a growing delay, and
 *   after MAX_IDLE_DEATHS such deaths in a row calls fail at once with a clear TOOL_CRASHED for CRASH_LOOP_COOLDOWN_MS.
 *
 * The child holds a few tasks beyond one per worker (so a worker never waits
 * for a round trip to the host); this side knows which of them started, and
 * only those end with it (see CHILD_LOOKAHEAD_PER_THREAD).
 */
import { fork } from 'node:child_process';
import { guestProcessEnv } from '../malloc-env.js';
import { ToolhostError } from '../../base/errors.js';
import { ChurnTable } from '../../core/churn-table.js';
import { resolveOptions, type SandboxPoolOptions, type TaskHandlers, type TaskInput } from '../pool.js';
import type { WorkerOutcome } from '../protocol.js';
import type { SandboxRunner } from '../sandbox-runner.js';
import type { StopSignal } from '../task-stop.js';
import { TaskQueue } from '../task-queue.js';
import { ClientWaits } from '../client-waits.js';
import { childScript } from './child-script.js';
import type { Job, SandboxChild } from './child-record.js';
import { DEFAULT_HEARTBEAT_MS, Heartbeat, HeartbeatPipe } from './heartbeat.js';
import { HEARTBEAT_FD } from './heartbeat-thread.js';
import { CHILD_LOOKAHEAD_PER_THREAD, type ChildPoolOptions, type CoreModuleBytes, type FromChild, type ToChild } from './messages.js';

export interface ProcessPoolOptions extends SandboxPoolOptions {
  /** A component's core modules at a memory cap, as bytes (the loader caps and checks them; the child compiles). */
  moduleBytes(componentId: string, memoryMb: number): Promise<CoreModuleBytes>;
  /**
   * How long the sandbox process may leave heartbeats unanswered before it is killed (SIGKILL) and replaced
   * (ms, default DEFAULT_HEARTBEAT_MS; 0: never checked). Its calls in flight then end with TOOL_CRASHED.
   */
  heartbeatMs?: number;
}

/** Deaths in a row of children that ran nothing before calls fail at once instead of starting another. */
export const MAX_IDLE_DEATHS = 5;
/** How long calls then fail at once before a child is tried again (ms). */
export const CRASH_LOOP_COOLDOWN_MS = 30_000;
/** The longest wait before starting the next child (ms). */
const MAX_RESTART_DELAY_MS = 2_000;
/** How long `close()` waits for the child to exit before it is killed (ms). */
const CLOSE_GRACE_MS = 5_000;

function abortFailure(signal: StopSignal): ToolhostError {
  const reason: unknown = signal.reason;
  return reason instanceof ToolhostError ? reason : new ToolhostError('CANCELLED', 'the call was aborted');
}

export class ProcessSandboxPool implements SandboxRunner {
  readonly #options: ChildPoolOptions;
  readonly #moduleBytes: ProcessPoolOptions['moduleBytes'];
  readonly #heartbeatMs: number;
  /** The sandbox's queue (task-queue.ts, as in thread containment): admission, and the jobs not yet handed to a child. */
  readonly #queue: TaskQueue<Job>;
  readonly clientWaits: ClientWaits;
  readonly #wedgedListeners = new Set<(componentId: string, threadId: number) => void>();
  /** Components compiled ahead of their first call, again in every new child. */
  readonly #warm = new Map<string, { componentId: string; memoryMb: number }>();
  #child: SandboxChild | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #nextId = 1;
  #restarts = 0;
  #idleDeaths = 0;
  #brokenUntil = 0;
  #lastDeath = '';
  #utilization = 0;
  /** Instances the sandbox process made ahead for hot components (component-homes.ts), as it last said; they start over with it. */
  readonly warms = { made: 0, failed: 0 };
  #closed = false;

  constructor(options: ProcessPoolOptions) {
    const { moduleBytes, heartbeatMs = DEFAULT_HEARTBEAT_MS, ...pool } = options;
    if (!Number.isFinite(heartbeatMs) || heartbeatMs < 0) throw new TypeError('options.heartbeatMs must be a non-negative number');
    this.#heartbeatMs = heartbeatMs;
    // Checked here, where a bad option is a TypeError for the caller, not a child that cannot start.
    const resolved = resolveOptions(pool);
    // The child's own queue never fills: it is given at most `threads` tasks (and the lookahead) at a time.
    this.#options = resolved;
    this.clientWaits = new ClientWaits(resolved.clientWaitLimits);
    this.#queue = new TaskQueue(resolved.threads, resolved.maxQueue, (job: Job) => job.handlers.principal, resolved.maxQueuePerPrincipal);
    this.#moduleBytes = moduleBytes;
    this.#start();
  }

  get threads(): number {
    return this.#options.threads;
  }

  get queueSize(): number {
    return this.#queue.size;
  }

  get utilization(): number {
    return this.#utilization;
  }

  /** The sandbox process's pid (undefined between a death and the next start) and how many times it was restarted. */
  get process(): { pid: number | undefined; restarts: number } {
    return { pid: this.#child?.exited === false ? this.#child.process.pid : undefined, restarts: this.#restarts };
  }

  onWedged(listener: (componentId: string, threadId: number) => void): () => void {
    this.#wedgedListeners.add(listener);
    return () => this.#wedgedListeners.delete(listener);
  }

  /** Compile a component's modules in the sandbox process before its first call (and again in each new one). */
  warm(componentId: string, memoryMb: number): void {
    this.#warm.set(`${componentId}\0${memoryMb}`, { componentId, memoryMb });
    if (this.#child?.ready) this.#send(this.#child, { type: 'warm', componentId, memoryMb });
  }

  async run(input: TaskInput, handlers: TaskHandlers): Promise<WorkerOutcome> {
    if (this.#closed) throw new ToolhostError('TOOL_CRASHED', 'the sandbox pool is closed', { details: { reason: 'worker-exit' } });
    const refusal = this.#queue.refusal(handlers.principal);
    if (refusal) throw refusal;
    if (Date.now() < this.#brokenUntil) throw this.#crashLoopError();
    if (handlers.signal?.aborted) throw abortFailure(handlers.signal);
    this.#queue.accept(handlers.principal);
    try {
      return await new Promise<WorkerOutcome>((resolve, reject) => {
        const job: Job = { id: this.#nextId++, input, handlers, resolve, reject, submittedAt: performance.now() };
        const onAbort = (): void => {
          if (job.child) {
            if (!job.started) handlers.onStopped?.({ waiting: true, queuedMs: performance.now() - job.submittedAt }); // never ran; told now, before the child answers
            const reason: unknown = handlers.signal!.reason;
            this.#send(job.child, { type: 'abort', id: job.id, ...(reason instanceof ToolhostError ? { reason: reason.toData() } : {}) });
            return;
          }
          // Still waiting here: it leaves the queue, having used nothing.
          this.#queue.remove(job);
          handlers.onStopped?.({ waiting: true, queuedMs: performance.now() - job.submittedAt });
          job.reject(abortFailure(handlers.signal!));
        };
        const onCancel = (): void => {
          job.cancelled = true;
          if (job.child) this.#send(job.child, { type: 'cancel', id: job.id });
        };
        handlers.signal?.addEventListener('abort', onAbort, { once: true });
        const unwatchCancel = handlers.onCancel?.(onCancel);
        if (!handlers.onCancel) handlers.cancelSignal?.addEventListener('abort', onCancel, { once: true });
        const settle = (): void => {
          handlers.signal?.removeEventListener('abort', onAbort);
          unwatchCancel?.();
          handlers.cancelSignal?.removeEventListener('abort', onCancel);
        };
        job.resolve = (outcome) => {
          settle();
          resolve(outcome);
        };
        job.reject = (error) => {
          settle();
          reject(error);
        };
        this.#queue.push(job);
        this.#dispatch();
      });
    } finally {
      this.#queue.giveBack(handlers.principal);
    }
  }

  /** Hand waiting tasks to the child while it has an idle worker for each. */
  #dispatch(): void {
    const child = this.#child;
    if (!child?.ready) return;
    const { threads } = this.#options;
    // Free workers first go to tasks already waiting in the child, oldest first (its order).
    for (const job of child.jobs.values()) {
      if (child.running >= threads) break;
      if (job.started || job.handlers.signal?.aborted) continue;
      job.started = true;
      child.running += 1;
      this.#send(child, { type: 'start', id: job.id });
    }
    while (child.jobs.size < threads * (1 + CHILD_LOOKAHEAD_PER_THREAD) && this.#queue.length > 0) {
      const job = this.#queue.shift()!;
      job.child = child;
      child.jobs.set(job.id, job);
      const start = child.running < threads;
      if (start) {
        job.started = true;
        child.running += 1;
      }
      const { cpuBudgetMs, cancelSignal } = job.handlers;
      this.#send(child, {
        type: 'run',
        id: job.id,
        input: job.input,
        start,
        ...(cpuBudgetMs === undefined ? {} : { cpuBudgetMs }),
        ...(job.cancelled === true || cancelSignal?.aborted === true ? { cancelled: true } : {}),
      });
    }
  }

  #start(): void {
    this.#restartTimer = undefined;
    if (this.#closed) return;
    const script = childScript();
    const spawned = fork(script.path, [JSON.stringify(this.#options)], {
      serialization: 'advanced',
      execArgv: script.execArgv,
      // Freed large blocks go back to the system (../malloc-env.ts).
      env: guestProcessEnv(),
      // The child's stdout goes to the host's stderr: over MCP stdio, stdout carries the protocol and nothing else.
      // fd 4 (HEARTBEAT_FD): the heartbeat's own pipe, answered by a thread of the child's (heartbeat-thread.ts).
      stdio: ['ignore', 2, 'inherit', 'ipc', 'pipe'],
    });
    const child: SandboxChild = { process: spawned, ready: false, finished: 0, running: 0, jobs: new ChurnTable(), exited: false };
    this.#child = child;
    const pipe = HeartbeatPipe.of(spawned.stdio[HEARTBEAT_FD]);
    if (this.#heartbeatMs > 0) {
      child.heartbeat = new Heartbeat(this.#heartbeatMs, () => pipe?.ping() ?? this.#send(child, { type: 'ping' }), (silentMs) => {
        // Stopped (SIGSTOP), dead or wedged: SIGKILL ends even a stopped process; its 'close' ends its calls as any death does.
        child.silentMs = silentMs;
        child.process.kill('SIGKILL');
      });
      pipe?.onAnswer((loopStalledMs) => child.heartbeat?.answered(loopStalledMs));
    }
    spawned.on('message', (message: FromChild) => this.#onMessage(child, message));
    // 'close', not 'exit': it comes after the IPC channel closed, so every message the child sent (a `next`) was read.
    spawned.on('close', (code: number | null, signal: NodeJS.Signals | null) => this.#onExit(child, code, signal));
    // A child that could not be spawned emits 'error' (and maybe no 'exit').
    spawned.on('error', (error) => this.#onExit(child, null, null, error.message));
  }

  #send(child: SandboxChild, message: ToChild): void {
    if (child.exited || !child.process.connected) return;
    // A send that fails means the child is going: its exit fails what it held.
    child.process.send(message, (error: Error | null) => {
      if (error) child.process.kill('SIGKILL');
    });
  }

  #onMessage(child: SandboxChild, message: FromChild): void {
    if (child.exited) return;
    child.heartbeat?.answered();
    switch (message.type) {
      case 'pong':
        return;
      case 'ready':
        child.ready = true;
        for (const { componentId, memoryMb } of this.#warm.values()) this.#send(child, { type: 'warm', componentId, memoryMb });
        this.#dispatch();
        return;
      case 'message':
        child.jobs.get(message.id)?.handlers.onMessage(message.message);
        return;
      case 'stopped':
        child.jobs.get(message.id)?.handlers.onStopped?.(message.measured);
        return;
      case 'rpc': {
        const job = child.jobs.get(message.id);
        if (!job) return;
        const { id, rpcId } = message;
        job.handlers.rpc(message.request).then(
          (value) => this.#send(child, { type: 'rpc-reply', id, rpcId, ok: true, value }),
          (error: unknown) => this.#send(child, { type: 'rpc-reply', id, rpcId, ok: false, error: error instanceof Error ? error.message : String(error) }),
        );
        return;
      }
      case 'stats':
        this.#utilization = message.utilization;
        Object.assign(this.warms, message.warms);
        return;
      case 'outcome':
      case 'failed': {
        const job = child.jobs.get(message.id);
        if (!job) return;
        child.jobs.delete(message.id);
        if (job.started) child.running -= 1;
        if (message.next !== undefined) {
          // Started by the child in this task's place (unless this side had already said `start` for it).
          const next = child.jobs.get(message.next);
          if (next && !next.started) {
            next.started = true;
            child.running += 1;
          }
        }
        child.finished += 1;
        this.#idleDeaths = 0;
        // Stopped before it started (it waited in the child): nothing was measured.
        if (!job.started) job.handlers.onStopped?.({});
        if (message.type === 'outcome') job.resolve(message.outcome);
        // The host's own abort reason, not the copy that went through the child.
        else job.reject(job.handlers.signal?.aborted ? abortFailure(job.handlers.signal) : ToolhostError.fromData(message.error));
        this.#dispatch();
        return;
      }
      case 'modules': {
        const { requestId } = message;
        this.#moduleBytes(message.componentId, message.memoryMb).then(
          (modules) => this.#send(child, { type: 'modules-reply', requestId, ok: true, modules }),
          (error: unknown) => {
            const failure = error instanceof ToolhostError ? error : new ToolhostError('INTERNAL', `could not prepare the component's modules: ${error instanceof Error ? error.message : String(error)}`);
            this.#send(child, { type: 'modules-reply', requestId, ok: false, error: failure.toData() });
          },
        );
        return;
      }
      case 'wedged':
        for (const listener of this.#wedgedListeners) listener(message.componentId, message.threadId);
        return;
    }
  }

  #onExit(child: SandboxChild, code: number | null, signal: NodeJS.Signals | null, spawnError?: string): void {
    if (child.exited) return;
    child.exited = true;
    child.heartbeat?.stop();
    if (spawnError !== undefined) child.process.kill('SIGKILL');
    if (this.#child === child) this.#child = undefined;
    const silent = child.silentMs !== undefined;
    const how = spawnError !== undefined
      ? `could not be started: ${spawnError}`
      : silent
        ? `answered no heartbeat for ${Math.round(child.silentMs!)} ms (host.pool.heartbeat_ms: ${this.#heartbeatMs}: stopped or wedged) and was killed`
        : signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
    const pid = child.process.pid;
    this.#lastDeath = how;
    let ended = 0;
    const again: Job[] = [];
    for (const job of child.jobs.values()) {
      if (job.handlers.signal?.aborted) {
        job.handlers.onStopped?.({});
        job.reject(abortFailure(job.handlers.signal));
      } else if (this.#closed) {
        job.reject(new ToolhostError('TOOL_CRASHED', 'the sandbox pool was closed while the call ran', { details: { reason: 'worker-exit' } }));
      } else if (!job.started) {
        // It never ran: it goes back to the front of the queue, in its order.
        job.child = undefined;
        again.push(job);
      } else {
        ended += 1;
        job.handlers.onStopped?.({});
        job.reject(new ToolhostError('TOOL_CRASHED', `the sandbox process (pid ${pid}) ${how} while the call ran; a new one is being started`, {
          details: {
            ...(silent ? { reason: 'sandbox-process-unresponsive', limit: 'heartbeat_ms', heartbeatMs: this.#heartbeatMs } : { reason: 'sandbox-process-death' }),
            pid, ...(signal === null ? {} : { signal }), ...(code === null ? {} : { exitCode: code }),
          },
        }));
      }
    }
    this.#queue.returnToFront(again.sort((a, b) => a.id - b.id));
    child.jobs.clear();
    if (this.#closed) return;
    // A death that ended calls was paid for by them; one that ended none, in a child that finished nothing, is a loop.
    if (child.finished > 0 || ended > 0) this.#idleDeaths = 0;
    else this.#idleDeaths += 1;
    this.#restarts += 1;
    this.#utilization = 0;
    if (this.#idleDeaths >= MAX_IDLE_DEATHS) {
      this.#brokenUntil = Date.now() + CRASH_LOOP_COOLDOWN_MS;
      for (const job of this.#queue.takeAll()) job.reject(this.#crashLoopError());
      // One more try once the cool-down is over (and one more death breaks again).
      this.#idleDeaths = MAX_IDLE_DEATHS - 1;
      this.#restartTimer = setTimeout(() => this.#start(), CRASH_LOOP_COOLDOWN_MS);
      this.#restartTimer.unref();
      return;
    }
    const delay = this.#idleDeaths === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 50 * 2 ** (this.#idleDeaths - 1));
    if (delay === 0) this.#start();
    else this.#restartTimer = setTimeout(() => this.#start(), delay);
  }

  #crashLoopError(): ToolhostError {
    return new ToolhostError('TOOL_CRASHED', `the sandbox process died ${MAX_IDLE_DEATHS} times in a row before it ran anything (last: it ${this.#lastDeath}); calls fail for ${CRASH_LOOP_COOLDOWN_MS / 1000} s before it is started again`, {
      details: { reason: 'sandbox-process-crash-loop' },
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    for (const job of this.#queue.takeAll()) job.reject(new ToolhostError('TOOL_CRASHED', 'the sandbox pool was closed before the call ran', { details: { reason: 'worker-exit' } }));
    const child = this.#child;
    if (!child || child.exited) return;
    child.heartbeat?.stop();
    const exited = new Promise<void>((resolve) => child.process.once('close', () => resolve()));
    // One still starting may not listen yet (nothing runs there): it is killed. One that listens closes its pool first.
    if (child.ready) this.#send(child, { type: 'close' });
    else child.process.kill('SIGKILL');
    const timer = setTimeout(() => child.process.kill('SIGKILL'), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }
}
