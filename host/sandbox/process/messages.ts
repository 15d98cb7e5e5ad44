/**
 * Messages between the host and its sandbox process (process containment).
 * They cross a `child_process` IPC channel with `serialization: 'advanced'`
 * (structured clone: Uint8Arrays and nested values cross as they are; a
 * compiled WebAssembly.Module does not, so module bytes cross and the child
 * compiles them). Each task is named by the host's id for it.
 */
import type { ToolErrorData } from '../../core/errors.js';
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
 * round trip to the host. The child starts at most `threads` at a time and
 * says which it started: `started` for one started on arrival, `next` on the
 * message that ends the task whose worker a waiting one takes. Those not
 * started when it died (waiting there, or still in the channel) run again.
 */
export const CHILD_LOOKAHEAD_PER_THREAD = 1;

/** Host → child. */
export type ToChild =
  /** Run a task; `cancelled`: its cooperative cancel was raised before it was sent. */
  | { type: 'run'; id: number; input: TaskInput; cpuBudgetMs?: number; cancelled?: boolean }
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
  | { type: 'close' };

/** Child → host. */
export type FromChild =
  /** The child's pool is up. */
  | { type: 'ready' }
  /** The child handed the task to its pool at once (from now on a death of the child ends it; before, it runs on the next). */
  | { type: 'started'; id: number }
  | { type: 'message'; id: number; message: GuestEventMessage }
  /** A task's host call (state, HTTP), answered with an `rpc-reply`. */
  | { type: 'rpc'; id: number; rpcId: number; request: Exclude<RpcRequest, { op: 'modules' }> }
  | { type: 'stopped'; id: number; measured: { queuedMs?: number; cpuMs?: number } }
  /** A task's end: its outcome, or the error its run rejected with; `next`: the waiting task started in its place. */
  | { type: 'outcome'; id: number; outcome: WorkerOutcome; next?: number }
  | { type: 'failed'; id: number; error: ToolErrorData; next?: number }
  /** The pool's utilization, sent at most once a STATS_INTERVAL_MS while tasks finish (reading it costs ~0.2 ms). */
  | { type: 'stats'; utilization: number }
  /** The child needs a component's module bytes (it compiles them once per cap). */
  | { type: 'modules'; requestId: number; componentId: string; memoryMb: number }
  | { type: 'wedged'; componentId: string; threadId: number };
