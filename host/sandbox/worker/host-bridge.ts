/**
 * The worker's side of one task's channel: events go out as messages; the
 * few host calls that need an answer (state, compiled modules) block the
 * worker on the control buffer's doorbell until the main thread replies.
 * The guest runs synchronously (Node 20 has no JSPI), so blocking is the only
 * way to answer it mid-call; the main thread is never blocked.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { CONTROL_CANCELLED, CONTROL_RPC_DOORBELL, type GuestOutputLimits, type RpcReply, type RpcRequest, type WorkerMessage } from '../protocol.js';

/** Thrown into the guest when it sends more than its limits allow; the call ends with OUTPUT_LIMIT_EXCEEDED. */
export class OutputLimitExceeded extends Error {}

/** How long the worker waits for the main thread to answer a host call. */
const RPC_TIMEOUT_MS = 10_000;
const HTTP_TIMEOUT_MS = 600_000;

export class HostBridge {
  readonly #port: MessagePort;
  readonly #control: Int32Array;
  readonly #limits: GuestOutputLimits | undefined;
  #nextId = 1;
  #messages = 0;
  #events = 0;
  #eventBytes = 0;
  /** Why the call went over its output limits, once it has. */
  exceeded: string | undefined;

  constructor(port: MessagePort, control: SharedArrayBuffer, limits?: GuestOutputLimits) {
    this.#port = port;
    this.#control = new Int32Array(control);
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
    this.#messages += 1;
    this.#port.postMessage(message);
  }

  /** Whether the caller asked the call to stop (one atomic load; no round trip). */
  cancelled(): boolean {
    return Atomics.load(this.#control, CONTROL_CANCELLED) !== 0;
  }

  /**
   * Ask the main thread and wait for its answer; throws when it fails or does
   * not answer in time. Outgoing HTTP may take as long as the call may (the
   * call's wall clock stops the worker), so it waits longer.
   */
  request(request: RpcRequest, timeoutMs = request.op === 'http' ? HTTP_TIMEOUT_MS : RPC_TIMEOUT_MS): unknown {
    const id = this.#nextId++;
    Atomics.store(this.#control, CONTROL_RPC_DOORBELL, 0);
    this.post({ type: 'rpc', id, request });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`host did not answer ${request.op} within ${timeoutMs} ms`);
      Atomics.wait(this.#control, CONTROL_RPC_DOORBELL, 0, remaining);
      Atomics.store(this.#control, CONTROL_RPC_DOORBELL, 0);
      // Drain replies; a late reply to an earlier, timed-out request is skipped.
      for (let received = receiveMessageOnPort(this.#port); received; received = receiveMessageOnPort(this.#port)) {
        const reply = received.message as RpcReply;
        if (reply.id !== id) continue;
        if (reply.ok) return reply.value;
        throw new Error(reply.error);
      }
    }
  }

  close(): void {
    this.#port.close();
  }
}
