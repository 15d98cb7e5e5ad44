/**
 * Messages between the host and its sandbox process (process containment).
 * They cross a `child_process` IPC channel with `serialization: 'advanced'`
 * (structured clone: Uint8Arrays and nested values cross as they are; a
 * compiled WebAssembly.Module does not, so module bytes cross and the child
 * compiles them). Each task is named by the host's id for it.
 */
import type { ToolErrorData } from '../../base/errors.js';
import type { StoppedMeasures } from '../pool-task.js';
import type { GuestEventMessage, SandboxPoolOptions, TaskInput } from '../pool.js';
import type { RpcRequest, WorkerOutcome } from '../protocol.js';

/** How often the child reports its pool's utilization while it runs tasks (ms). */
export const STATS_INTERVAL_MS = 1_000;

/** A component's core modules as bytes (capped and checked by the host), by the file name the glue asks for. */
export type CoreModuleBytes = Array<[string, Uint8Array]>;

/** The pool options the child starts its SandboxPool with (passed as its first argument, as JSON). */
export type ChildPoolOptions = SandboxPoolOptions & { threads: number };

/**
 * Tasks the host hands the child beyond one per worker: they wait in the
 * child, so a worker that finishes starts the next at once instead of after a
 * round trip to the host. Which tasks run is the host's to know exactly, with
 * no message spent on it: the host says `start` when it knows a worker is free
 * (the child can only have more free than the host has seen), or `start`s a
 * waiting one later; the child starts a waiting one by itself only when a task
 * ends, and says which in that task's `next`. Those not started when the child
 * died (waiting there) run again on the next child.
 */
export const CHILD_LOOKAHEAD_PER_THREAD = 1;

/** Host → child. */
export type ToChild =
  /**
   * A task: `start` it now (a worker is free), or keep it waiting for one. `cancelled`: its cooperative cancel was
   * raised before it was sent.
   */
  | { type: 'run'; id: number; input: TaskInput; start: boolean; cpuBudgetMs?: number; cancelled?: boolean }
  /** Start a waiting task now (a worker is free; the child ignores it when the task already started or left). */
  | { type: 'start'; id: number }
  /** Stop the task now (its `signal` aborted), with the reason it aborted for when that is a ToolhostError. */
  | { type: 'abort'; id: number; reason?: ToolErrorData }
  /** Raise the task's cooperative cancel flag. */
  | { type: 'cancel'; id: number }
  /** The answer to a task's host call. */
  | { type: 'rpc-reply'; id: number; rpcId: number; ok: true; value: unknown }
  | { type: 'rpc-reply'; id: number; rpcId: number; ok: false; error: string }
  /** The answer to a request for a component's module bytes. */
  | { type: 'modules-reply'; requestId: number; ok: true; modules: CoreModuleBytes }
  | { type: 'modules-reply'; requestId: number; ok: false; error: ToolErrorData }
  /** Compile a component's modules ahead of its first call. */
  | { type: 'warm'; componentId: string; memoryMb: number }
  /** Close the pool and exit. */
  | { type: 'close' }
  /** The supervisor's heartbeat (heartbeat.ts): answered with a `pong` at once, from the main thread. */
  | { type: 'ping' };

/** Child → host. */
export type FromChild =
  /** The child's pool is up. */
  | { type: 'ready' }
  /** The answer to a `ping`: the child's main thread turns. */
  | { type: 'pong' }
  | { type: 'message'; id: number; message: GuestEventMessage }
  /** A task's host call (state, HTTP), answered with an `rpc-reply`. */
  | { type: 'rpc'; id: number; rpcId: number; request: Exclude<RpcRequest, { op: 'modules' }> }
  | { type: 'stopped'; id: number; measured: StoppedMeasures }
  /** A task's end: its outcome, or the error its run rejected with; `next`: the waiting task started in its place. */
  | { type: 'outcome'; id: number; outcome: WorkerOutcome; next?: number }
  | { type: 'failed'; id: number; error: ToolErrorData; next?: number }
  /** The pool's utilization, sent at most once a STATS_INTERVAL_MS while tasks finish (reading it costs ~0.2 ms). */
  | { type: 'stats'; utilization: number; warms?: { made: number; failed: number } }
  /** The child needs a component's module bytes (it compiles them once per cap). */
  | { type: 'modules'; requestId: number; componentId: string; memoryMb: number }
  | { type: 'wedged'; componentId: string; threadId: number };
