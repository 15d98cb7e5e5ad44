/**
 * The worker's side of one task: events go out on the worker's `parentPort`,
 * named by task; the few host calls that need an answer (state, compiled
 * modules, HTTP) block the worker on the control block's doorbell until the
 * main thread replies on the worker's reply port. The guest runs
 * synchronously (Node 20 has no JSPI), so blocking is the only way to answer
 * it mid-call; the main thread is never blocked.
 *
 * The reply port is made once per worker (see `helloMainThread`): a task
 * carries no port of its own, which kept ~30 µs off every call.
 */
import { MessageChannel, parentPort, receiveMessageOnPort, threadId, type MessagePort } from 'node:worker_threads';
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
  CONTROL_RPC_DOORBELL,
  CONTROL_STARTED,
  CONTROL_TID,
  type ControlRef,
  type GuestOutputLimits,
  type RpcReply,
  type RpcRequest,
  type WorkerMessage,
  type WorkerPost,
} from '../protocol.js';
import { LaneBell } from '../transport/lane-bell.js';
import { TaskRing } from '../transport/task-ring.js';
import { AnswerRing } from '../transport/answer-ring.js';
import { SpareStatus } from '../spare-status.js';

let replies: MessagePort | undefined;
/** Host-call ids are unique in the worker, so a late reply to an earlier task's request is told apart. */
let nextRpcId = 1;
/** This worker's status block (see spare-status.ts): spare preparations, read by the pool. */
export const preparation = new SpareStatus();
/** This worker's lane bell (see lane-bell.ts): how it may spin for its next task. */
export const laneBell = new LaneBell();
/** This worker's task ring (see task-ring.ts): plain calls the pool hands it without a post. */
export const laneRing = new TaskRing();
/** This worker's answer ring (see answer-ring.ts): call answers the pool reads without a post. */
export const answerRing = new AnswerRing();

/** Send the main thread this worker's task lane, reply port and status block; once, when the worker starts. Returns the worker's end of the lane. */
export function helloMainThread(): MessagePort | undefined {
  if (replies || !parentPort) return undefined;
  const channel = new MessageChannel();
  replies = channel.port1;
  // Read only with receiveMessageOnPort: the port must not keep the thread alive or dispatch events.
  replies.unref();
  const lane = new MessageChannel();
  // The worker waits in its event loop until its first task: a call put in its ring needs a kick.
  laneRing.listen(true);
  const hello: WorkerPost = { toolhost: 'hello', threadId, tasks: lane.port2, replies: channel.port2, status: preparation.buffer, bell: laneBell.buffer, ring: laneRing.buffer, answers: answerRing.buffer };
  parentPort.postMessage(hello, [lane.port2, channel.port2]);
  return lane.port1;
}

/** Thrown into the guest when it sends more than its limits allow; the call ends with OUTPUT_LIMIT_EXCEEDED. */
export class OutputLimitExceeded extends Error {}

/** How long the worker waits for the main thread to answer a host call. */
const RPC_TIMEOUT_MS = 10_000;
const HTTP_TIMEOUT_MS = 600_000;
/** Host calls that wait on the outside world (a server, the client's model or user): as long as the call may run. */
const LONG_OPS: ReadonlySet<RpcRequest['op']> = new Set(['http', 'sample', 'elicit']);

export class HostBridge {
  readonly #taskId: number;
  readonly #control: Int32Array;
  readonly #times: Float64Array;
  readonly #limits: GuestOutputLimits | undefined;
  #messages = 0;
  #events = 0;
  #eventBytes = 0;
  #hostCalls = 0;
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

  /** Messages posted so far (the main thread waits for all of them before the terminal event). */
  get messages(): number {
    return this.#messages;
  }

  post(message: WorkerMessage): void {
    // Past the host-call limit, the host's own warnings about refused calls
    // (a failed get-state is reported as a log line) would be a flood of their own.
    if (this.#hostCallsExceeded && message.type === 'log' && message.source === 'guest') return;
    this.#messages += 1;
    const post: WorkerPost = { toolhost: 'task', taskId: this.#taskId, threadId, message };
    parentPort?.postMessage(post);
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
   */
  request(request: RpcRequest, timeoutMs = LONG_OPS.has(request.op) ? HTTP_TIMEOUT_MS : RPC_TIMEOUT_MS): unknown {
    const port = replies;
    if (!port) throw new Error('the worker has no channel to the main thread');
    if (request.op !== 'modules' && this.#limits) {
      this.#hostCalls += 1;
      if (this.#hostCalls > this.#limits.maxHostCalls) {
        const message = `the guest made more than ${this.#limits.maxHostCalls} host calls (state, HTTP, sampling, elicitation) in one call`;
        if (!this.#hostCallsExceeded) {
          this.#hostCallsExceeded = true;
          this.post({ type: 'limit', limit: 'host_calls_per_call', message, max: this.#limits.maxHostCalls });
        }
        throw new Error(`OUTPUT_LIMIT_EXCEEDED: ${message}`);
      }
    }
    const id = nextRpcId++;
    Atomics.store(this.#control, CONTROL_RPC_DOORBELL, 0);
    this.post({ type: 'rpc', id, request });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`host did not answer ${request.op} within ${timeoutMs} ms`);
      Atomics.wait(this.#control, CONTROL_RPC_DOORBELL, 0, remaining);
      Atomics.store(this.#control, CONTROL_RPC_DOORBELL, 0);
      // Drain replies; a late reply to an earlier, timed-out request is skipped.
      for (let received = receiveMessageOnPort(port); received; received = receiveMessageOnPort(port)) {
        const reply = received.message as RpcReply;
        if (reply.id !== id) continue;
        if (reply.ok) return reply.value;
        throw new Error(reply.error);
      }
    }
  }
}
