/**
 * The sandbox worker: one task at a time runs here, from its task lane
 * (piscina starts the thread and carries only measurement tasks). Untrusted guest
 * code runs only in these threads, never on the main thread, so a runaway
 * guest can always be stopped by terminating its worker.
 */
import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import type { ToolErrorData } from '../../base/errors.js';
import type { CallProfile, CallTask, CallWire, CollectTask, CoreModules, DescribeTask, GuestContent, GuestCapabilities, SandboxTask, TaskAnswer, TaskWire, WorkerAccounting, WorkerHeap, WorkerOutcome } from '../protocol.js';
import { decodeTask, type LaneTask } from '../transport/lane-codec.js';
import { cpuClockKind, cpuTimeMs, threadTid } from './cpu-clock.js';
import { acquire, release, type ComponentRuntime } from './component-runtime.js';
import { GuestInstance, type ActiveCall, type InstantiateFn } from './guest-instance.js';
import { collectTask } from './heap.js';
import { memoryBudget } from './memory-budget.js';
import { keptInstances } from './kept-instances.js';
import type { CompiledModules } from '../load/core-compile.js';
import { DEFAULT_POLICY_DEFAULTS } from '../../policy/execution-policy.js';
import { capToolError, classifyGuestFailure } from './guest-failure.js';
import { contentBytes } from '../load/tool-world.js';
import { HostBridge, OutputLimitExceeded, openLane } from './host-bridge.js';
import { answerPosted, idle, mustWait, releaseNext, taskEnded, taskStarted, waitTurn } from './running-tasks.js';
import { LaneSpin } from '../transport/lane-spin.js';
import { argsCheckReady, argsValidator, checkArgs, describeCheck, loadArgsCheck } from './args-check.js';

/** Tasks come on the worker's lane (transport/worker-end.ts); piscina's own dispatch carries only measurement tasks (collect). */
const lane = openLane(onLaneTask);
/** Spins for the next task after an answer, when the pool welcomes it (see lane-spin.ts). */
const spin = lane ? new LaneSpin(lane.bell, lane, (task) => lane.take(task), idle) : undefined;

// The args checker (ajv, ~100 ms of CPU to load) loads while the new worker is idle, so that a first call
// seldom waits for it (a call that finds it loading waits, off its CPU budget: args-check.ts).
if (lane) setImmediate(() => loadArgsCheck().catch(() => undefined));

/** The control buffers the lane has carried, by id (see lane-codec.ts). */
const controlBuffers = new Map<number, SharedArrayBuffer>();

function onLaneTask(message: LaneTask): void {
  if (!lane) return;
  const taskId = Array.isArray(message) ? message[0] : message.taskId;
  let answer: TaskAnswer | Promise<TaskAnswer>;
  try {
    answer = runInTurn(decodeTask(message, controlBuffers), false);
  } catch (error) {
    lane.fail(taskId, error);
    answered(taskId);
    return;
  }
  if (answer instanceof Promise) {
    answer.then((settled) => {
      lane.answer(taskId, settled);
      answered(taskId);
    }, (error: unknown) => {
      lane.fail(taskId, error);
      answered(taskId);
    });
  } else {
    lane.answer(taskId, answer);
    answered(taskId);
  }
}

/** A task's answer is sent: what waited for it goes on, and the worker may spin for the next task. */
function answered(taskId: number): void {
  answerPosted(taskId);
  spin?.schedule();
}

const runtimes = new Map<string, ComponentRuntime>();
/** Runtimes the memory budget dropped whole, by key, until they are made again (see `runtimeFor`). */
const dropped = new Set<string>();
/** Keys remembered in `dropped` before it starts over (a forgotten one only misses `reinstantiated` in an accounting). */
const MAX_DROPPED = 4096;
const now = (): number => performance.timeOrigin + performance.now();

// Components uncalled for host.pool.idle_release_ms lose their instances (memory-budget.ts); between tasks only.
const sweepEveryMs = memoryBudget.sweepEveryMs;
if (sweepEveryMs !== undefined) setInterval(() => memoryBudget.sweep(now()), sweepEveryMs).unref();

const runtimeKey = (task: SandboxTask): string => `${task.componentId}/${task.memoryMb}`;

async function runtimeFor(task: SandboxTask, bridge: HostBridge): Promise<ComponentRuntime> {
  const key = runtimeKey(task);
  const known = runtimes.get(key);
  if (known) return known;
  // Modules are compiled once on the main thread; this worker asks for them the first time only.
  const modules = bridge.request({ op: 'modules', componentId: task.componentId, memoryMb: task.memoryMb }) as CoreModules;
  const glue = (await import(task.moduleUrl)) as { instantiate: InstantiateFn };
  const runtime: ComponentRuntime = { instantiate: glue.instantiate, modules: new Map(modules), conversations: new Map(), refusedResets: 0, sparesMade: 0 };
  runtimes.set(key, runtime);
  // Dropped for the budget or when idle before: its first instance since is a re-instantiation (accounting).
  if (dropped.delete(key)) runtime.evicted = true;
  const imageBytes = (modules as CompiledModules).imageBytes ?? 0;
  if (imageBytes > 0) runtime.imageBytes = imageBytes;
  // A variant beyond the one compiled at load (a call's memory class): its code counts in the budget, evicted whole.
  const callerVariant = task.memoryMb !== DEFAULT_POLICY_DEFAULTS.memoryMb;
  if (callerVariant) runtime.codeBytes = (modules as CompiledModules).codeBytes ?? 0;
  // Evicted (memory-budget.ts): forgotten whole, modules and images too, so a released tool holds nothing here;
  // the next call asks for its modules again. Instances kept per conversation keep a load variant's runtime.
  runtime.drop = () => {
    if (!callerVariant && runtime.conversations.size > 0) return false;
    for (const kept of runtime.conversations.values()) keptInstances.forget(kept);
    runtime.conversations.clear();
    if (runtimes.get(key) === runtime) {
      runtimes.delete(key);
      if (dropped.size >= MAX_DROPPED) dropped.clear();
      dropped.add(key);
    }
    return true;
  };
  return runtime;
}


/**
 * A load's describe, or a warm task (`task.warm`: an instance made ahead, as
 * every spare is: warmed with describe() and snapshotted, then kept as the
 * spare; no tools in the answer).
 */
async function describe(task: DescribeTask, bridge: HostBridge, startedAt: number): Promise<WorkerOutcome> {
  const runtime = await runtimeFor(task, bridge);
  // The schema compiler loads before the clock starts: only the guest's own work is charged to its budget.
  if (task.schemaLimits !== undefined) await loadArgsCheck();
  bridge.post({ type: 'guest-starting' });
  const t0 = now();
  // A warm task that finds a spare (a call came first) has nothing to make.
  const instance = task.warm === true && runtime.spare ? undefined : new GuestInstance(runtime.instantiate, runtime.modules);
  const instantiateMs = now() - t0;
  const tools = instance?.describe() ?? [];
  // describe ran no call: the instance is as fresh as a new one, so keep it as the spare.
  if (instance && !runtime.spare) {
    instance.snapshot();
    runtime.spare = instance;
    runtime.spareRestored = false;
  }
  memoryBudget.touch(runtime, t0);
  memoryBudget.enforce(runtime);
  const accounting: WorkerAccounting = { startedAt, instance: 'fresh', isolation: 'call', instantiateMs, cpuClock: 'none', threadId };
  if (task.warm === true) {
    // Said here so the pool's homes forget this worker's dropped components, and left for the next call to
    // report as its limit hits (memory_budget_mb), as any eviction between calls is.
    if (memoryBudget.unreported > 0) accounting.evictions = memoryBudget.unreported;
    return { ok: true, tools: [], accounting };
  }
  // The tools' schemas are checked here, under the describe budget, never on the main thread (args-check.ts).
  const refused = task.schemaLimits === undefined ? undefined : await describeCheck(tools, task.schemaLimits);
  if (refused !== undefined) return { ok: false, error: refused, refused: true, accounting };
  return { ok: true, tools, accounting };
}


/** One call on a component this worker knows (synchronous: the guest runs to its end here). */
function call(runtime: ComponentRuntime, task: CallTask, bridge: HostBridge, startedAt: number): WorkerOutcome {
  const active: ActiveCall = { bridge, context: task.context, capabilities: task.capabilities, stdioBudget: task.limits.stdioBytes, stdioTruncated: false };
  memoryBudget.touch(runtime, startedAt);
  const { instance, source, instantiateMs, reinstantiated } = acquire(runtime, task, active);
  const capBytes = task.memoryMb * 1024 * 1024;
  // The input schema, compiled once per worker (under the call's wall budget: see args-check.ts).
  const validator = task.argsSchema === undefined ? undefined : argsValidator(task.tool, task.argsSchema);

  const cpuBefore = cpuTimeMs();
  bridge.guestStarting(threadTid, cpuBefore, startedAt);
  let outcome: { ok: true; value: string; content?: GuestContent[]; noValue?: true } | { ok: false; error: ToolErrorData; refused?: true };
  // The args are checked under the call's CPU and wall budgets, before the guest runs.
  const refused = validator === undefined ? undefined : checkArgs(validator, task.args, task.context.callId);
  if (refused !== undefined) {
    outcome = { ok: false, error: refused, refused: true };
  } else try {
    const output = instance.call(active, task.tool, task.args);
    // Content items count against the same limit as the value (their payloads, plus 64 bytes an item).
    let bytes = output.value === undefined ? 0 : Buffer.byteLength(output.value);
    for (const item of output.content ?? []) bytes += contentBytes(item);
    if (bytes > task.limits.maxResultBytes) {
      outcome = { ok: false, error: { code: 'OUTPUT_LIMIT_EXCEEDED', message: `the result is ${bytes} bytes, over the limit of ${task.limits.maxResultBytes}`, details: { reason: 'result', bytes, limit: task.limits.maxResultBytes } } };
    } else {
      outcome = { ok: true, value: output.value ?? '' };
      if (output.content !== undefined) outcome.content = output.content;
      if (output.value === undefined) outcome.noValue = true;
    }
  } catch (error) {
    const failure = bridge.exceeded === undefined
      ? classifyGuestFailure(error, { bytes: instance.memoryBytes(), capBytes })
      : classifyGuestFailure(new OutputLimitExceeded(bridge.exceeded));
    if (failure.poisoned) instance.poisoned = true;
    outcome = { ok: false, error: capToolError(failure, task.limits.maxResultBytes).error };
  }
  const cpuMs = cpuTimeMs() - cpuBefore;
  bridge.guestEnded(cpuMs);
  const peakMemoryBytes = instance.memoryBytes();
  const { preparing, keptEvicted } = release(runtime, task, instance);
  // Within the worker's share of the memory budget: the least recently called components' instances go first.
  memoryBudget.enforce(runtime);
  const evictions = memoryBudget.takeUnreported();
  const accounting: WorkerAccounting = {
    startedAt,
    ranMs: now() - startedAt,
    instance: source,
    isolation: task.isolation,
    instantiateMs,
    cpuMs,
    cpuClock: cpuClockKind,
    peakMemoryBytes,
    threadId,
  };
  if (preparing) accounting.preparing = true;
  if (keptEvicted !== undefined) accounting.keptEvicted = keptEvicted;
  if (evictions > 0) accounting.evictions = evictions;
  if (reinstantiated === true) accounting.reinstantiated = true;
  if (!outcome.ok) return outcome.refused === true ? { ok: false, error: outcome.error, refused: true, accounting } : { ok: false, error: outcome.error, accounting };
  // One shape for a plain value (a spread made the answer's shape depend on the outcome's).
  if (outcome.content === undefined && outcome.noValue === undefined) return { ok: true, value: outcome.value, accounting };
  return { ...outcome, accounting };
}

function instantiateFailure(task: SandboxTask, bridge: HostBridge, startedAt: number, error: unknown): WorkerOutcome {
  const message = error instanceof Error ? error.message : String(error);
  const accounting: WorkerAccounting = { startedAt, instance: 'fresh', isolation: task.kind === 'call' ? task.isolation : 'call', instantiateMs: 0, cpuClock: 'none', threadId };
  return { ok: false, error: { code: 'TOOL_CRASHED', message: `the component could not be instantiated: ${message}`, details: { reason: 'instantiate' } }, accounting };
}

/** Call profiles this worker was sent, by id (see CallProfile), with the capabilities of a call that brings none of its own. */
const profiles = new Map<number, { profile: CallProfile; bare: GuestCapabilities }>();
/** Profiles kept before the table starts over (the pool sends a dropped one again on a ProfileMiss). */
const MAX_PROFILES = 1024;

/** The call a wire message stands for, or undefined when its profile is unknown here. */
function resolveCall(wire: CallWire): CallTask | undefined {
  let known = profiles.get(wire.profile);
  if (wire.fixed && !known) {
    if (profiles.size >= MAX_PROFILES) profiles.clear();
    known = { profile: wire.fixed, bare: { env: [], network: wire.fixed.network } };
    profiles.set(wire.profile, known);
  }
  if (!known) return undefined;
  const { profile } = known;
  const capabilities: GuestCapabilities = wire.env === undefined && wire.filesystem === undefined
    ? known.bare
    : { env: wire.env ?? [], ...(wire.filesystem ? { filesystem: wire.filesystem } : {}), network: profile.network };
  const task: CallTask = {
    kind: 'call',
    componentId: profile.componentId,
    memoryMb: profile.memoryMb,
    moduleUrl: profile.moduleUrl,
    tool: profile.tool,
    isolation: profile.isolation,
    limits: profile.limits,
    capabilities,
    args: wire.args,
    context: wire.context,
    taskId: wire.taskId,
    control: wire.control,
    submittedAt: wire.submittedAt,
  };
  if (wire.conversationKey !== undefined) task.conversationKey = wire.conversationKey;
  if (profile.argsSchema !== undefined) task.argsSchema = profile.argsSchema;
  return task;
}

/** `outcome`, once the bridge has marked the task done (see HostBridge.finish). */
function finished(bridge: HostBridge, taskId: number, outcome: WorkerOutcome): WorkerOutcome {
  bridge.finish();
  taskEnded(taskId);
  return outcome;
}

/**
 * Run one task. A call on a component this worker already knows is answered
 * synchronously (no promise and no microtask hops on the path of every call);
 * the first one loads the component's glue and modules first. A `collect`
 * task (measurements only) collects the worker's garbage.
 */
export default function runTask(wire: TaskWire | CollectTask): TaskAnswer | WorkerHeap | Promise<TaskAnswer> {
  if (wire.kind === 'collect') return collectTask(wire, runtimes.size);
  return runInTurn(wire, false);
}

/** One task at a time, even while one awaits (see running-tasks.ts): a task is claimed only when its turn comes. */
function runInTurn(wire: TaskWire, hasTurn: boolean): TaskAnswer | Promise<TaskAnswer> {
  if (mustWait(hasTurn)) {
    return waitTurn(hasTurn).then(() => {
      const answer = runInTurn(wire, true);
      // It may not have claimed anything (taken back, or a profile it lacks): the next one goes.
      releaseNext();
      return answer;
    });
  }
  const startedAt = now();
  let task: SandboxTask;
  if (wire.kind === 'call') {
    const resolved = resolveCall(wire);
    if (!resolved) return { profileMiss: wire.profile };
    task = resolved;
  } else {
    task = wire;
  }
  const bridge = new HostBridge(task.taskId, task.control, task.kind === 'call' ? task.limits : undefined);
  if (!bridge.claim()) return { abandoned: task.taskId };
  taskStarted();
  // A call whose args need checking waits for the checker to load the first time (off the call's CPU budget).
  const known = task.kind === 'call' && (task.argsSchema === undefined || argsCheckReady()) ? runtimes.get(runtimeKey(task)) : undefined;
  if (known && task.kind === 'call') {
    try {
      return finished(bridge, task.taskId, call(known, task, bridge, startedAt));
    } catch (error) {
      return finished(bridge, task.taskId, instantiateFailure(task, bridge, startedAt, error));
    }
  }
  const first = task;
  return (async (): Promise<WorkerOutcome> => {
    try {
      if (first.kind === 'describe') return finished(bridge, first.taskId, await describe(first, bridge, startedAt));
      if (first.argsSchema !== undefined) await loadArgsCheck();
      return finished(bridge, first.taskId, call(await runtimeFor(first, bridge), first, bridge, startedAt));
    } catch (error) {
      return finished(bridge, first.taskId, instantiateFailure(first, bridge, startedAt, error));
    }
  })();
}
