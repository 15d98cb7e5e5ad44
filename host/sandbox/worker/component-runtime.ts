/**
 * A component as a worker knows it (its glue, its compiled modules, its
 * instances) and the lifecycle of those instances between calls: which one a
 * call gets, what becomes of it afterwards by isolation, and how the next
 * call's spare is made (a reset to the snapshot, or a new instance) once the
 * answer has left.
 */
import { performance } from 'node:perf_hooks';
import type { CallTask, WorkerAccounting } from '../protocol.js';
import { GuestInstance, type ActiveCall, type InstantiateFn } from './guest-instance.js';
import { preparation } from './host-bridge.js';
import { keptInstances } from './kept-instances.js';
import type { BudgetedRuntime } from './memory-budget.js';
import { whenNoTaskRuns } from './running-tasks.js';

/** Instances kept per conversation, per component, in `conversation` isolation. */
const CONVERSATION_INSTANCES = 32;

/**
 * A component as this worker knows it, at one memory cap: its glue, its
 * compiled (capped) modules, and instances kept for later.
 */
export interface ComponentRuntime extends BudgetedRuntime {
  instantiate: InstantiateFn;
  modules: Map<string, WebAssembly.Module>;
  /** Made (or reset to its snapshot) while the worker was idle, for the next call. */
  spare?: GuestInstance;
  /** Whether the spare is a used instance reset to its snapshot rather than a new one. */
  spareRestored?: boolean;
  /** Resets refused in a row (see RESETS_BEFORE_GIVING_UP). */
  refusedResets: number;
  /** How long its resets take (ms, moving average; undefined before the first): only short ones are announced quick. */
  resetMs?: number;
  /** The instance the last call left, until it is reset into the spare (or dropped). */
  awaitingReset?: GuestInstance;
  /** New spares made (not resets). */
  sparesMade: number;
  /** Kept between calls in `worker` isolation. */
  kept?: GuestInstance;
  /** Kept between one conversation's calls in `conversation` isolation (least recently used first). */
  conversations: Map<string, GuestInstance>;
}


/**
 * A reset shorter than this is announced quick: the pool then sends the next
 * call to this worker rather than wake a sleeping one (a wake-up costs tens
 * of µs on a VM). A C guest's reset takes a few µs; a componentize-js
 * guest's ~1 ms (9.5 MB compared, a 7,700-entry table): announced quick, a
 * tight loop's every call waited for the last call's reset on the same
 * worker (p50 ~1.5 ms) while the other worker sat ready.
 */
const QUICK_RESET_MS = 0.1;
/** Weight of the newest reset in ComponentRuntime.resetMs (a moving average). */
const RESET_WEIGHT = 0.25;

/** Spares that took less than this to make are warmed with describe() (see prepareSpare). */
const WARM_SPARES_BELOW_MS = 1;

/**
 * A component whose used instances could not be reset this many times in a
 * row (its calls grow memory or create resources every time) stops paying
 * for snapshots: its spares are made as before.
 */
const RESETS_BEFORE_GIVING_UP = 4;
/** ...but one spare in this many is still snapshotted, in case its calls changed. */
const RETRY_SNAPSHOTS_EVERY = 16;

/**
 * Make the runtime's spare instance once the current task has answered; the
 * worker's status block says it is busy until then (the pool routes calls to
 * other idle workers meanwhile). Returns whether a spare will be made.
 *
 * With `used` (an instance that served a call in the default isolation), the
 * spare is that instance reset to the snapshot taken before its first call,
 * when the reset can make it exactly what it was (instance-snapshot.ts): a
 * memcpy instead of an instantiation. Otherwise it is dropped and a new
 * instance is made, as before.
 */
export function prepareSpare(runtime: ComponentRuntime, taskId: number, used?: GuestInstance): boolean {
  if (runtime.spare) return false;
  // A call may reach the worker before this runs: it then resets the instance itself (acquire).
  runtime.awaitingReset = used;
  // A reset is a memcpy: the pool may send the next call here meanwhile rather than wake a sleeping worker.
  const quick = used !== undefined && used.resettable && runtime.refusedResets === 0 && (runtime.resetMs ?? 0) < QUICK_RESET_MS;
  preparation.announce(quick);
  whenNoTaskRuns(() => {
    preparation.start(taskId);
    try {
      // Dropped for the memory budget since (memory-budget.ts): its next call makes a new instance.
      if (runtime.evicted === true) return;
      resetAwaiting(runtime);
      if (!runtime.spare) {
        const t0 = performance.now();
        const spare = new GuestInstance(runtime.instantiate, runtime.modules);
        // A small guest is warmed with describe() (no call's data; every spare
        // does the same): the glue's lazy per-instance state and the guest's
        // first-run paths are then paid here, not by the call (C echo's first
        // call 0.18 -> 0.04 ms). A large one is not: its describe() costs more
        // than it saves (componentize-js: ~8 ms to save ~1.4 ms) and would keep
        // the worker busy that much longer.
        // An instance that will be snapshotted is always warmed: the snapshot
        // then holds the allocator's grown heap and the glue's lazy state, so
        // a call that fits in it leaves memory the size it was (a reset needs
        // that), and the warming is paid once, not per call.
        runtime.sparesMade += 1;
        const snapshots = runtime.refusedResets < RESETS_BEFORE_GIVING_UP || runtime.sparesMade % RETRY_SNAPSHOTS_EVERY === 0;
        if (snapshots || performance.now() - t0 < WARM_SPARES_BELOW_MS) spare.describe();
        if (snapshots) spare.snapshot();
        runtime.spare = spare;
        runtime.spareRestored = false;
      }
    } catch {
      // The next call instantiates in the foreground and reports the failure.
    } finally {
      preparation.end(quick);
    }
  });
  return true;
}

/** Reset the instance a call left (if any) into the spare; returns whether it became the spare. */
export function resetAwaiting(runtime: ComponentRuntime): boolean {
  const used = runtime.awaitingReset;
  runtime.awaitingReset = undefined;
  if (runtime.spare || used === undefined) return false;
  const t0 = performance.now();
  const refusal = used.reset();
  // Averaged: one reset the VM preempted must not send the next call to a sleeping worker.
  const ms = performance.now() - t0;
  runtime.resetMs = runtime.resetMs === undefined ? ms : runtime.resetMs + RESET_WEIGHT * (ms - runtime.resetMs);
  if (refusal === undefined) {
    runtime.spare = used;
    runtime.spareRestored = true;
    runtime.refusedResets = 0;
    return true;
  }
  // A crash says nothing about whether this component's calls can be reset; the rest does.
  if (refusal !== 'poisoned') runtime.refusedResets += 1;
  return false;
}

/** The instance for a call, and where it came from. */
export function acquire(runtime: ComponentRuntime, task: CallTask, active: ActiveCall): Acquired {
  const acquired = acquireInstance(runtime, task, active);
  // The first instance since the worker dropped this component's (memory-budget.ts): made anew, as for a first call.
  if (runtime.evicted === true && acquired.instance.boundTo === undefined) {
    runtime.evicted = false;
    if (acquired.source === 'fresh') acquired.reinstantiated = true;
  }
  return acquired;
}

/** The instance for a call, where it came from, and whether it replaces instances the worker dropped. */
export interface Acquired {
  instance: GuestInstance;
  source: WorkerAccounting['instance'];
  instantiateMs: number;
  reinstantiated?: true;
}

function acquireInstance(runtime: ComponentRuntime, task: CallTask, active: ActiveCall): Acquired {
  if (GuestInstance.needsBinding(active)) {
    // A worktree or an environment is read while the guest initializes: make
    // an instance for this call alone, with the call bound from the start.
    const t0 = performance.now();
    const instance = new GuestInstance(runtime.instantiate, runtime.modules, active);
    return { instance, source: 'fresh', instantiateMs: performance.now() - t0 };
  }
  const conversation = task.isolation === 'conversation' ? task.conversationKey : undefined;
  const kept = task.isolation === 'worker' ? runtime.kept : conversation !== undefined ? runtime.conversations.get(conversation) : undefined;
  if (kept) return { instance: kept, source: 'reused', instantiateMs: 0 };
  // The previous call's instance not reset yet (this call came first): a reset is far cheaper than a new instance.
  const t0 = performance.now();
  if (!runtime.spare && resetAwaiting(runtime)) {
    const instance = runtime.spare!;
    runtime.spare = undefined;
    return { instance, source: 'restored', instantiateMs: performance.now() - t0 };
  }
  if (runtime.spare) {
    const instance = runtime.spare;
    runtime.spare = undefined;
    return { instance, source: runtime.spareRestored === true ? 'restored' : 'prewarmed', instantiateMs: 0 };
  }
  const instance = task.isolation === 'call' && runtime.refusedResets < RESETS_BEFORE_GIVING_UP ? snapshottedInstance(runtime) : new GuestInstance(runtime.instantiate, runtime.modules);
  return { instance, source: 'fresh', instantiateMs: performance.now() - t0 };
}

/**
 * A new instance for a call in the default isolation, warmed with describe()
 * and recorded before the call, as every spare is (prepareSpare), so it may be
 * reset afterwards instead of replaced. Unwarmed, the reset of a first call's
 * instance was always refused for a componentize-js guest: jco's glue makes
 * its per-component async state at the first export call (glue-state-changed),
 * so a tool's second call on a worker waited for a new spare (10-40 ms)
 * instead of a reset (~1 ms). Warming costs the first call describe() (a few
 * ms for componentize-js, µs for C), and the first call now sees what every
 * later call sees: a warmed instance. If describe() throws, the call gets an
 * unwarmed instance without a snapshot.
 */
function snapshottedInstance(runtime: ComponentRuntime): GuestInstance {
  const instance = new GuestInstance(runtime.instantiate, runtime.modules);
  try {
    instance.describe();
  } catch {
    return new GuestInstance(runtime.instantiate, runtime.modules);
  }
  instance.snapshot();
  return instance;
}

/** What {@link release} did. */
export interface Released {
  /** Whether a spare will be prepared. */
  preparing: boolean;
  /** Kept instances dropped to stay within the worker's budget (kept-instances.ts), when any. */
  keptEvicted?: number;
}

/** Keep or drop the instance after a call, by isolation; prepare the next spare. */
export function release(runtime: ComponentRuntime, task: CallTask, instance: GuestInstance): Released {
  if (instance.boundTo !== undefined) {
    // Made for one call's capabilities: never kept; the spare (if any) is untouched.
    return { preparing: prepareSpare(runtime, task.taskId) };
  }
  const conversation = task.isolation === 'conversation' ? task.conversationKey : undefined;
  let keptEvicted = 0;
  if (task.isolation === 'worker') {
    runtime.kept = instance.poisoned ? undefined : instance;
  } else if (conversation !== undefined) {
    runtime.conversations.delete(conversation);
    if (instance.poisoned) {
      keptInstances.forget(instance);
    } else {
      // Kept as the most recently used, within the worker's budget over every component's kept instances.
      keptEvicted = keptInstances.keep(runtime.conversations, conversation, instance);
      if (runtime.conversations.size > CONVERSATION_INSTANCES) {
        const [oldest, dropped] = runtime.conversations.entries().next().value ?? [];
        if (oldest !== undefined && dropped !== undefined) {
          runtime.conversations.delete(oldest);
          keptInstances.forget(dropped);
        }
      }
    }
  }
  const evicted = keptEvicted === 0 ? {} : { keptEvicted };
  // Reused modes keep their instance: a spare serves only their first call, or one after a crash.
  if (task.isolation !== 'call' && !instance.poisoned) return { preparing: false, ...evicted };
  return { preparing: prepareSpare(runtime, task.taskId, task.isolation === 'call' ? instance : undefined), ...evicted };
}
