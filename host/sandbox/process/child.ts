/**
 * The sandbox process (process containment): a SandboxPool of its own, run
 * for the host over the IPC channel `child_process.fork` opened. Guest code
 * runs in this process's worker threads, so a fatal error of V8 there (an
 * abort, an out-of-memory inside V8 itself) ends this process, not the host;
 * the host's supervisor (supervisor.ts) fails the calls that were running and
 * starts another.
 *
 * Host calls (state, HTTP) go to the host; the components' core modules are
 * compiled here, from bytes the host capped and checked, once per cap.
 *
 * This thread relays, and never looks into, what guests send: events, host
 * calls and answers cross as the worker posted them, each capped there before
 * it was posted (a client request is JSON text within `client_request_bytes`,
 * made in the worker; events and results within their limits), so its work per
 * message is a bounded copy. Its heartbeat is answered by a thread of its own.
 */
import { ToolhostError, type ToolErrorData } from '../../base/errors.js';
import { tuneGarbageCollection } from '../../base/gc-tuning.js';
import { ChurnTable } from '../../core/churn-table.js';
import { SandboxPool } from '../pool.js';
import type { CoreModules, RpcRequest } from '../protocol.js';
import { compileCoreModules } from '../load/core-compile.js';
import { STATS_INTERVAL_MS, type ChildPoolOptions, type FromChild, type ToChild } from './messages.js';
import { startHeartbeatThread } from './heartbeat-thread.js';

if (process.send === undefined) {
  process.stderr.write('toolhost: the sandbox process runs under a toolhost host (child_process.fork), not on its own\n');
  process.exit(2);
}

// The same V8 settings as the host's own process (base/gc-tuning.ts): this main thread carries every call's lane traffic too.
tuneGarbageCollection();
const options = JSON.parse(process.argv[2] ?? '{}') as ChildPoolOptions;
// The supervisor's queue decides who runs next, and each principal's share (task-queue.ts): tasks reach this
// pool with no principal, at most `threads` and the lookahead at a time, so no share applies here.
const pool = new SandboxPool({ ...options, ...(options.maxQueue === undefined ? {} : { maxQueuePerPrincipal: options.maxQueue }) });

function send(message: FromChild): void {
  // The channel is gone only when the host is: nothing is waiting for this then.
  if (process.connected) process.send!(message);
}

pool.onWedged((componentId, threadId) => send({ type: 'wedged', componentId, threadId }));

type Rpcs = Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>;
/** Tasks here, by the host's id: how each is stopped, cancelled and answered. */
const tasks = new ChurnTable<number, { stop: AbortController; cancel: AbortController; rpcs: Rpcs }>();
/** Tasks waiting for a worker, in order (the host decides which start, see messages.ts). */
const waiting: Array<Extract<ToChild, { type: 'run' }>> = [];
let nextRpcId = 1;

/** Compiled modules per (component, cap), as the host's loader keeps them in thread containment. */
const compiled = new Map<string, Promise<CoreModules>>();
const moduleRequests = new Map<number, { componentId: string; resolve: (modules: CoreModules) => void; reject: (error: Error) => void }>();
let nextModuleRequest = 1;

function modulesFor(componentId: string, memoryMb: number): Promise<CoreModules> {
  const key = `${componentId}\0${memoryMb}`;
  let modules = compiled.get(key);
  if (!modules) {
    modules = new Promise<CoreModules>((resolve, reject) => {
      const requestId = nextModuleRequest++;
      moduleRequests.set(requestId, { componentId, resolve, reject });
      send({ type: 'modules', requestId, componentId, memoryMb });
    });
    modules.catch(() => compiled.delete(key));
    compiled.set(key, modules);
  }
  return modules;
}

function accept(message: Extract<ToChild, { type: 'run' }>): void {
  const task = { stop: new AbortController(), cancel: new AbortController(), rpcs: new Map() as Rpcs };
  if (message.cancelled) task.cancel.abort();
  tasks.set(message.id, task);
  // The host says `start` only when it knows a worker is free (see messages.ts).
  if (message.start) start(message);
  else waiting.push(message);
}

function start(message: Extract<ToChild, { type: 'run' }>): void {
  const { id } = message;
  const task = tasks.get(id)!;
  const { input } = message;
  pool.run(input, {
    signal: task.stop.signal,
    // A hot component's instance made ahead on another of this process's workers (instances-made-ahead.ts): its modules come from here too.
    ...(input.kind === 'call' ? { modulesFor: (memoryMb: number) => modulesFor(input.componentId, memoryMb) } : {}),
    cancelSignal: task.cancel.signal,
    ...(message.cpuBudgetMs === undefined ? {} : { cpuBudgetMs: message.cpuBudgetMs }),
    onMessage: (event) => send({ type: 'message', id, message: event }),
    onStopped: (measured) => send({ type: 'stopped', id, measured }),
    rpc: (request: RpcRequest) => {
      if (request.op === 'modules') return modulesFor(request.componentId, request.memoryMb);
      return new Promise((resolve, reject) => {
        const rpcId = nextRpcId++;
        task.rpcs.set(rpcId, { resolve, reject });
        send({ type: 'rpc', id, rpcId, request });
      });
    },
  }).then(
    (outcome) => finish({ type: 'outcome', id, outcome }),
    (error: unknown) => finish({ type: 'failed', id, error: failureData(error) }),
  );
}

/** A task ended: the next waiting one takes its worker, and the host learns both in one message. */
function finish(message: Extract<FromChild, { type: 'outcome' | 'failed' }>): void {
  tasks.delete(message.id);
  statsDue = true;
  const next = waiting.shift();
  if (next) {
    start(next);
    message.next = next.id;
  }
  send(message);
}

function failureData(error: unknown): ToolErrorData {
  return (error instanceof ToolhostError ? error : new ToolhostError('INTERNAL', `the sandbox process failed a task: ${error instanceof Error ? error.message : String(error)}`)).toData();
}

/** Stop a task: one still waiting here leaves at once (it used nothing); a started one is stopped by the pool. */
function abort(id: number, reason: ToolErrorData | undefined): void {
  const task = tasks.get(id);
  if (!task) return;
  const at = waiting.findIndex((message) => message.id === id);
  if (at === -1) {
    task.stop.abort(reason === undefined ? undefined : ToolhostError.fromData(reason));
    return;
  }
  waiting.splice(at, 1);
  tasks.delete(id);
  send({ type: 'failed', id, error: reason ?? new ToolhostError('CANCELLED', 'the call was aborted').toData() });
}

/** Whether a task finished since the pool's utilization was last reported (piscina computes it from a histogram summary). */
let statsDue = false;
setInterval(() => {
  if (!statsDue) return;
  statsDue = false;
  send({ type: 'stats', utilization: pool.utilization, warms: { ...pool.warms } });
}, STATS_INTERVAL_MS).unref();

function onMessage(message: ToChild): void {
  switch (message.type) {
    case 'run':
      accept(message);
      break;
    case 'start': {
      const at = waiting.findIndex((task) => task.id === message.id);
      if (at !== -1) start(waiting.splice(at, 1)[0]!);
      break;
    }
    case 'abort':
      abort(message.id, message.reason);
      break;
    case 'cancel':
      tasks.get(message.id)?.cancel.abort();
      break;
    case 'rpc-reply': {
      const pending = tasks.get(message.id)?.rpcs;
      const waiting = pending?.get(message.rpcId);
      if (!waiting) break;
      pending!.delete(message.rpcId);
      if (message.ok) waiting.resolve(message.value);
      else waiting.reject(new Error(message.error));
      break;
    }
    case 'modules-reply': {
      const waiting = moduleRequests.get(message.requestId);
      if (!waiting) break;
      moduleRequests.delete(message.requestId);
      if (!message.ok) {
        waiting.reject(ToolhostError.fromData(message.error));
        break;
      }
      compileCoreModules(message.modules, `component ${waiting.componentId}`).then(waiting.resolve, waiting.reject);
      break;
    }
    case 'warm':
      // A failure here is the first call's to report.
      modulesFor(message.componentId, message.memoryMb).catch(() => {});
      break;
    case 'close':
      void shutdown(0);
      break;
    case 'ping':
      send({ type: 'pong' });
      break;
  }
}

let closing = false;
async function shutdown(code: number): Promise<void> {
  if (closing) return;
  closing = true;
  await pool.close().catch(() => {});
  process.exit(code);
}

// The heartbeat is answered by a thread of its own, on a pipe of its own (heartbeat-thread.ts): nothing this thread
// relays holds it up. (A `ping` over IPC is still answered below, for a supervisor without the pipe.)
startHeartbeatThread();
process.on('message', onMessage);
// Signals meant for the host reach this process too (Ctrl-C goes to the terminal's process group, systemd signals
// the whole cgroup): the host drains its calls first and then closes this process, or its exit disconnects it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {});
// The host is gone (it exited, or was killed): nobody is left to serve.
process.on('disconnect', () => void shutdown(0));
if (!process.connected) void shutdown(0);
send({ type: 'ready' });
