/**
 * The sandbox worker: piscina runs one task at a time here. Untrusted guest
 * code runs only in these threads, never on the main thread, so a runaway
 * guest can always be stopped by terminating its worker.
 */
import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import type { ToolErrorData } from '../../core/errors.js';
import type { CallTask, CoreModules, DescribeTask, SandboxTask, WorkerAccounting, WorkerOutcome } from '../protocol.js';
import { cpuClockKind, cpuTimeMs } from './cpu-clock.js';
import { GuestInstance, type InstantiateFn } from './guest-instance.js';
import { HostBridge } from './host-bridge.js';

/** A component as this worker knows it: its glue, its compiled modules, and instances kept for later. */
interface ComponentRuntime {
  instantiate: InstantiateFn;
  modules: Map<string, WebAssembly.Module>;
  /** Made while the worker was idle, for the next call. */
  spare?: GuestInstance;
  /** Kept between calls in `worker` isolation. */
  kept?: GuestInstance;
}

const runtimes = new Map<string, ComponentRuntime>();
const now = (): number => performance.timeOrigin + performance.now();

async function runtimeFor(task: SandboxTask, bridge: HostBridge): Promise<ComponentRuntime> {
  const known = runtimes.get(task.componentId);
  if (known) return known;
  // Modules are compiled once on the main thread; this worker asks for them the first time only.
  const modules = bridge.request({ op: 'modules', componentId: task.componentId }) as CoreModules;
  const glue = (await import(task.moduleUrl)) as { instantiate: InstantiateFn };
  const runtime: ComponentRuntime = { instantiate: glue.instantiate, modules: new Map(modules) };
  runtimes.set(task.componentId, runtime);
  return runtime;
}

function prepareSpare(runtime: ComponentRuntime): void {
  setImmediate(() => {
    if (runtime.spare) return;
    try {
      runtime.spare = new GuestInstance(runtime.instantiate, runtime.modules);
    } catch {
      // The next call instantiates in the foreground and reports the failure.
    }
  });
}

/** Turn what a guest call threw into error data; says whether the instance is unusable. */
export function classifyGuestFailure(error: unknown): { error: ToolErrorData; poisoned: boolean } {
  if (typeof error === 'object' && error !== null && !(error instanceof Error)) {
    const payload = error as { code?: unknown; message?: unknown; details?: unknown };
    if (typeof payload.code === 'string' && typeof payload.message === 'string') {
      const details: Record<string, unknown> = { code: payload.code };
      if (typeof payload.details === 'string') details.details = parseMaybeJson(payload.details);
      return { error: { code: 'TOOL_ERROR', message: payload.message, details }, poisoned: false };
    }
  }
  const exit = error as { exitError?: unknown; code?: unknown };
  if (typeof error === 'object' && error !== null && exit.exitError === true) {
    // wasi:cli/exit carries only ok or err: the shim reports them as status 0 or 1.
    const status = exit.code === 0 ? 'success' : 'failure';
    return { error: { code: 'TOOL_CRASHED', message: `the guest called exit with a ${status} status; the call ended without a result`, details: { reason: 'exit', status } }, poisoned: true };
  }
  if (error instanceof WebAssembly.RuntimeError) {
    return { error: { code: 'TOOL_CRASHED', message: `the guest trapped: ${error.message}`, details: { reason: 'trap' } }, poisoned: true };
  }
  if (error instanceof RangeError && /call stack/i.test((error as Error).message)) {
    return { error: { code: 'TOOL_CRASHED', message: 'the guest overflowed its stack', details: { reason: 'stack-overflow' } }, poisoned: true };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { error: { code: 'TOOL_CRASHED', message: `the guest failed: ${message}`, details: { reason: 'host-error' } }, poisoned: true };
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function describe(task: DescribeTask, bridge: HostBridge, startedAt: number): Promise<WorkerOutcome> {
  const runtime = await runtimeFor(task, bridge);
  const t0 = now();
  const instance = new GuestInstance(runtime.instantiate, runtime.modules);
  const instantiateMs = now() - t0;
  const tools = instance.describe();
  // describe ran no call: the instance is as fresh as a new one, so keep it as the spare.
  runtime.spare ??= instance;
  const accounting: WorkerAccounting = { startedAt, instance: 'fresh', isolation: 'call', instantiateMs, cpuClock: 'none', messages: bridge.messages, threadId };
  return { ok: true, tools, accounting };
}

async function call(task: CallTask, bridge: HostBridge, startedAt: number): Promise<WorkerOutcome> {
  const runtime = await runtimeFor(task, bridge);
  let instance: GuestInstance;
  let source: WorkerAccounting['instance'];
  let instantiateMs = 0;
  if (task.isolation === 'worker' && runtime.kept) {
    instance = runtime.kept;
    source = 'reused';
  } else if (runtime.spare) {
    instance = runtime.spare;
    runtime.spare = undefined;
    source = 'prewarmed';
  } else {
    const t0 = now();
    instance = new GuestInstance(runtime.instantiate, runtime.modules);
    instantiateMs = now() - t0;
    source = 'fresh';
  }

  const cpuBefore = cpuTimeMs();
  let outcome: { ok: true; value: string } | { ok: false; error: ToolErrorData };
  try {
    const value = instance.call({ bridge, context: task.context, stdioBudget: task.limits.stdioBytes, stdioTruncated: false }, task.tool, task.args);
    outcome = { ok: true, value };
  } catch (error) {
    const failure = classifyGuestFailure(error);
    if (failure.poisoned) instance.poisoned = true;
    outcome = { ok: false, error: failure.error };
  }
  const cpuMs = cpuTimeMs() - cpuBefore;

  if (task.isolation === 'worker' && !instance.poisoned) {
    runtime.kept = instance;
  } else {
    if (runtime.kept === instance) runtime.kept = undefined;
    prepareSpare(runtime);
  }
  const accounting: WorkerAccounting = {
    startedAt,
    instance: source,
    isolation: task.isolation,
    instantiateMs,
    cpuMs,
    cpuClock: cpuClockKind,
    messages: bridge.messages,
    threadId,
  };
  return { ...outcome, accounting };
}

export default async function runTask(task: SandboxTask): Promise<WorkerOutcome> {
  const startedAt = now();
  const bridge = new HostBridge(task.port, task.control);
  try {
    return task.kind === 'describe' ? await describe(task, bridge, startedAt) : await call(task, bridge, startedAt);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const accounting: WorkerAccounting = { startedAt, instance: 'fresh', isolation: task.kind === 'call' ? task.isolation : 'call', instantiateMs: 0, cpuClock: 'none', messages: bridge.messages, threadId };
    return { ok: false, error: { code: 'TOOL_CRASHED', message: `the component could not be instantiated: ${message}`, details: { reason: 'instantiate' } }, accounting };
  }
}
