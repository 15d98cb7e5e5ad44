/**
 * What the supervisor (supervisor.ts) knows of each sandbox process it started and of each task it holds: which
 * child a task was handed to, whether that child started it, and the child's heartbeat. Records only: every
 * decision on them is the supervisor's.
 */
import type { ChildProcess } from 'node:child_process';
import type { ToolhostError } from '../../base/errors.js';
import type { ChurnTable } from '../../core/churn-table.js';
import type { TaskHandlers, TaskInput } from '../pool.js';
import type { WorkerOutcome } from '../protocol.js';
import type { Heartbeat } from './heartbeat.js';

export interface Job {
  id: number;
  input: TaskInput;
  handlers: TaskHandlers;
  resolve(outcome: WorkerOutcome): void;
  reject(error: ToolhostError): void;
  /** The child it was handed to (undefined while it waits here). */
  child?: SandboxChild;
  /** The child started it (a death of the child now ends it; before, it runs again on the next). */
  started?: boolean;
  /** The caller asked the guest to stop cooperatively (told through `handlers.onCancel`). */
  cancelled?: boolean;
  submittedAt: number; // performance.now() when it was handed to the pool
}

export interface SandboxChild {
  process: ChildProcess;
  ready: boolean;
  /** Tasks it finished (whatever their outcome): a child that finished any was not looping. */
  finished: number;
  /** Tasks it started and has not finished, as far as this side knows (the child may have finished more). */
  running: number;
  jobs: ChurnTable<number, Job>;
  exited: boolean;
  heartbeat?: Heartbeat;
  /** Set when the heartbeat found it silent this long (ms) and killed it. */
  silentMs?: number;
}
