/**
 * What the loader and the sandboxed tools need from a pool of sandbox workers:
 * the in-process `SandboxPool` (worker threads of this process) and the
 * `ProcessSandboxPool` (the same pool inside a supervised child process) both
 * give it, so the rest of the host does not know which one runs its calls.
 */
import type { TaskHandlers, TaskInput } from './pool.js';
import type { WorkerHeap, WorkerOutcome } from './protocol.js';
import type { ClientWaits } from './client-waits.js';

/** Where guest code runs: worker threads of the host process, or of a supervised child process. */
export type Containment = 'thread' | 'process';

export interface SandboxRunner {
  readonly threads: number;
  /** Tasks waiting for a worker. */
  readonly queueSize: number;
  /** Share of worker time spent running tasks (0..1). */
  readonly utilization: number;
  /**
   * Tasks the pool took back from a worker's port before the worker claimed
   * them (their caller stopped them), and tasks posted again because the
   * worker holding them was lost before it claimed them (see worker-holdings.ts).
   * The in-process pool only.
   */
  readonly handedBack?: { readonly abandoned: number; readonly reposted: number };
  /** Idle workers' spins for their next task: caught one, or ended without (see lane-bell.ts). The in-process pool only. */
  readonly spins?: { readonly caught: number; readonly missed: number };
  /** Instances made ahead for hot components on another worker, and those that failed (see component-homes.ts). */
  readonly warms?: { readonly made: number; readonly failed: number };
  /** The sandbox process, with process containment (for tests and metrics). */
  readonly process?: { readonly pid: number | undefined; readonly restarts: number };
  /** The workers calls may keep waiting for their clients (see client-waits.ts). */
  readonly clientWaits: ClientWaits;
  run(input: TaskInput, handlers: TaskHandlers): Promise<WorkerOutcome>;
  /** Collect every worker's garbage and read its heap (measurements only; the in-process pool only). */
  collectGarbage?(): Promise<WorkerHeap[]>;
  onWedged(listener: (componentId: string, threadId: number) => void): () => void;
  close(): Promise<void>;
}
