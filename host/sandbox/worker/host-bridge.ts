/**
 * The worker's side of one task: its events and host calls go to the pool on
 * the worker's lane (transport/worker-end.ts, one ordered channel per
 * worker, opened once when the worker starts: a task carries no port of its
 * own, which kept ~30 µs off every call). The few host calls that need an
 * answer (state, compiled modules, HTTP) block the worker until the main
 * thread answers; the main thread is never blocked.
 */
import {
  CONTROL_BYTES,
  CONTROL_CANCELLED,
  CONTROL_ENDED,
  CONTROL_F64_CPU_START_MS,
  CONTROL_F64_CPU_USED_MS,
  CONTROL_CLAIM,
  CLAIM_DONE,
  CLAIM_KILLED,
  CLAIM_TAKEN,
  CLAIM_WAITING,
  DEFAULT_GUEST_OUTPUT_LIMITS,
  CONTROL_F64_STARTED_AT,
  CONTROL_STARTED,
  CONTROL_TID,
  type ControlRef,
  type GuestOutputLimits,
  type RpcRequest,
  type WorkerMessage,
} from '../protocol.js';
import type { ClientAllowances, ClientRequestKind } from '../../core/client-requests.js';
import type { LaneTask } from '../transport/lane-codec.js';
import { WorkerEnd } from '../transport/worker-end.js';
import { SpareStatus } from '../spare-status.js';

/** This worker's status block (see spare-status.ts): spare preparations, read by the pool. */
export const preparation = new SpareStatus();

/** This worker's lane (undefined until it is open, and outside a worker). */
let lane: WorkerEnd | undefined;

/** Open this worker's lane, once, when the worker starts (its hello carries the status block); `run` runs each task it brings. */
export function openLane(run: (task: LaneTask) => void): WorkerEnd | undefined {
  lane ??= WorkerEnd.hello(preparation.buffer, run);
  return lane;
}

/** Thrown into the guest when it sends more than its limits allow; the call ends with OUTPUT_LIMIT_EXCEEDED. */
export class OutputLimitExceeded extends Error {}

/** Characters of guest input a host warning quotes at most. */
export const QUOTED_GUEST_CHARS = 64;

/**
 * Guest input as a host warning quotes it: JSON-quoted, at most
 * QUOTED_GUEST_CHARS characters of it, and its size when it is longer
 * (`"abc…" (1048576 bytes)`). Costs O(QUOTED_GUEST_CHARS) plus one byte count.
 */
export function quoteGuest(text: string): string {
  if (text.length <= QUOTED_GUEST_CHARS) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTED_GUEST_CHARS))}…(${Buffer.byteLength(text)} bytes)`;
}

/** How long the worker waits for the main thread to answer a host call. */
const RPC_TIMEOUT_MS = 10_000;
const HTTP_TIMEOUT_MS = 600_000;
/**
 * A component's modules: made again from the transpile cache when the main thread released them (issue 37,
 * load/module-variants.ts): reading, capping and compiling a 12 MB module takes seconds on a loaded machine.
 */
const MODULES_TIMEOUT_MS = 60_000;
/** Host calls that wait on the outside world (a server, the client's model or user): as long as the call may run. */
const LONG_OPS: ReadonlySet<RpcRequest['op']> = new Set(['http', 'sample', 'elicit', 'ask']);

export class HostBridge {
  readonly #taskId: number;
  readonly #control: Int32Array;
  readonly #times: Float64Array;
  readonly #limits: GuestOutputLimits | undefined;
  #events = 0;
  #eventBytes = 0;
  #hostCalls = 0;
  /** Requests to the client this call made, by kind (worker/client-requests.ts counts them against the grant). */
  readonly clientCounts: Record<ClientRequestKind, number> = { sampling: 0, elicitation: 0, roots: 0 };
  /** Set once the guest went past its host-call limit: later host calls are refused here. */
  #hostCallsExceeded = false;
  /** Why the call went over its output limits, once it has. */
  exceeded: string | undefined;

  constructor(taskId: number, control: ControlRef, limits?: GuestOutputLimits) {
    this.#taskId = taskId;
    this.#control = new Int32Array(control.buffer, control.offset, CONTROL_BYTES / Int32Array.BYTES_PER_ELEMENT);
    this.#times = new Float64Array(control.buffer, control.offset, CONTROL_BYTES / Float64Array.BYTES_PER_ELEMENT);
    this.#limits = limits;
  }

  /**
   * Send a guest event (progress, delta, log), counting it against the call's
   * limits. Past them, it throws into the guest, which ends the call.
   */
  event(message: WorkerMessage, payloadBytes: number): void {
    if (this.exceeded !== undefined) throw new OutputLimitExceeded(this.exceeded);
    const limits = this.#limits;
    if (limits) {
      this.#events += 1;
      this.#eventBytes += payloadBytes;
      if (this.#events > limits.maxEvents) {
        this.exceeded = `the guest sent more than ${limits.maxEvents} events`;
      } else if (this.#eventBytes > limits.maxEventBytes) {
        this.exceeded = `the guest's events carried more than ${limits.maxEventBytes} bytes`;
      }
      if (this.exceeded !== undefined) throw new OutputLimitExceeded(this.exceeded);
    }
    this.post(message);
  }

  /**
   * A host warning about the guest's input (a refused get-state, ...): an
   * event of the call like the guest's own log lines, so it counts against
   * the same event and byte limits (past them the call ends), and it quotes
   * guest input only through `quoteGuest`. Past the host-call limit it is
   * dropped: the limit already ends the call, and the refusals would be a flood of their own.
   */
  warn(message: string): void {
    if (this.#hostCallsExceeded) return;
    this.event({ type: 'log', level: 'warn', message, source: 'guest' }, Buffer.byteLength(message));
  }

  post(message: WorkerMessage): void {
    // Past the host-call limit, the host's own warnings about refused calls
    // (a failed get-state is reported as a log line) would be a flood of their own.
    if (this.#hostCallsExceeded && message.type === 'log' && message.source === 'guest') return;
    lane?.event(this.#taskId, message);
  }

  /** Take the task for this worker; false when the pool abandoned it first (see CONTROL_CLAIM). */
  claim(): boolean {
    return Atomics.compareExchange(this.#control, CONTROL_CLAIM, CLAIM_WAITING, CLAIM_TAKEN) === CLAIM_WAITING;
  }

  /**
   * The task is done (its answer is returned next). When the pool is stopping
   * this worker for it meanwhile (CLAIM_KILLED), the worker must not go on to
   * the next task it holds, which would die with it: it waits for its end.
   */
  finish(): void {
    if (Atomics.compareExchange(this.#control, CONTROL_CLAIM, CLAIM_TAKEN, CLAIM_DONE) !== CLAIM_KILLED) return;
    // Bounded waits: termination is seen between two of them at the latest.
    for (;;) Atomics.wait(this.#control, CONTROL_CLAIM, CLAIM_KILLED, 50);
  }

  /**
   * The guest is about to run: publish where to read its thread's CPU clock
   * and the reading now, for the main thread's CPU watchdog. The flag is
   * stored last, so a reader that sees it sees the rest.
   */
  guestStarting(tid: number | undefined, cpuMs: number, startedAt: number): void {
    this.#times[CONTROL_F64_CPU_START_MS] = cpuMs;
    this.#times[CONTROL_F64_STARTED_AT] = startedAt;
    Atomics.store(this.#control, CONTROL_TID, tid ?? 0);
    Atomics.store(this.#control, CONTROL_STARTED, 1);
  }

  /** The guest returned (or threw) having used `cpuUsedMs`: the CPU watchdog stops here. */
  guestEnded(cpuUsedMs: number): void {
    this.#times[CONTROL_F64_CPU_USED_MS] = cpuUsedMs;
    Atomics.store(this.#control, CONTROL_ENDED, 1);
  }

  /** What the call's tool may ask its caller, when the main thread said (see GuestOutputLimits.clientRequests). */
  get clientRequests(): ClientAllowances | undefined {
    return this.#limits?.clientRequests;
  }

  /** Resource handles the guest may hold during this call. */
  get maxHandles(): number {
    return this.#limits?.maxHandles ?? DEFAULT_GUEST_OUTPUT_LIMITS.maxHandles;
  }

  /** The guest tried to hold more handles than it may: the call ends with OUTPUT_LIMIT_EXCEEDED (thrown into the guest). */
  handlesExceeded(): never {
    const max = this.maxHandles;
    const message = `the guest held more than ${max} resource handles (WASI streams, pollables, descriptors, HTTP resources) at once`;
    if (this.exceeded === undefined) {
      this.exceeded = message;
      this.post({ type: 'limit', limit: 'handles_per_call', message, max });
    }
    throw new OutputLimitExceeded(message);
  }

  /** Whether the caller asked the call to stop (one atomic load; no round trip). */
  cancelled(): boolean {
    return Atomics.load(this.#control, CONTROL_CANCELLED) !== 0;
  }

  /**
   * Ask the main thread and wait for its answer; throws when it fails or does
   * not answer in time. Outgoing HTTP, sampling and elicitation may take as
   * long as the call may (the call's wall clock stops the worker), so they wait longer.
   * `counted`: the caller counted it already (`countHostCall`).
   */
  request(request: RpcRequest, timeoutMs = LONG_OPS.has(request.op) ? HTTP_TIMEOUT_MS : request.op === 'modules' ? MODULES_TIMEOUT_MS : RPC_TIMEOUT_MS, counted = false): unknown {
    if (!lane) throw new Error('the worker has no channel to the main thread');
    if (request.op !== 'modules' && !counted) this.countHostCall();
    return lane.request(this.#taskId, request, timeoutMs);
  }

  /**
   * Count one host call against the call's limit (a call the worker refuses
   * itself, without asking the main thread, counts too); throws past the limit.
   */
  countHostCall(): void {
    if (!this.#limits) return;
    this.#hostCalls += 1;
    if (this.#hostCalls <= this.#limits.maxHostCalls) return;
    const message = `the guest made more than ${this.#limits.maxHostCalls} host calls (state, HTTP, sampling, elicitation) in one call`;
    if (!this.#hostCallsExceeded) {
      this.#hostCallsExceeded = true;
      this.post({ type: 'limit', limit: 'host_calls_per_call', message, max: this.#limits.maxHostCalls });
    }
    throw new Error(`OUTPUT_LIMIT_EXCEEDED: ${message}`);
  }
}
