/**
 * The worker's end of its lane: the one ordered, two-way channel between a
 * sandbox worker and the pool (host-end.ts is the pool's end). Everything a
 * worker sends or receives after its hello goes through here: tasks in,
 * their events and host calls out, host calls' answers in, task answers out.
 *
 * Each way has a port (a MessagePort, which keeps order) and a fast path in
 * shared memory beside it: the task ring in (task-ring.ts) and the answer
 * ring out (answer-ring.ts), each with its kick handshake. A ring entry
 * carries how many messages its writer had posted on the port before it, so
 * the reader takes it exactly between those and the next: order holds by
 * construction, not by counting what a task sent (the pool waited for a
 * task's events by their count before; nothing waits now).
 *
 * A host call's answer comes on the same port: the worker blocks on the
 * doorbell (one Int32 of shared memory, rung by the pool after it posted the
 * answer) and reads the port synchronously. A task that arrives meanwhile is
 * kept, in its place, and run when the worker is free (the guest runs
 * synchronously: Node 20 has no JSPI, so blocking is the only way to answer
 * it mid-call; the main thread is never blocked).
 */
import { MessageChannel, parentPort, receiveMessageOnPort, threadId, type MessagePort } from 'node:worker_threads';
import type { LaneAnswer, RpcRequest, TaskAnswer, WorkerMessage } from '../protocol.js';
import { AnswerRing } from './answer-ring.js';
import { LaneBell } from './lane-bell.js';
import { LANE_KICK, encodeAnswer, isTask, type LaneEvent, type LaneHello, type LaneMessage, type LaneTask } from './lane-codec.js';
import type { SpinSource } from './lane-spin.js';
import { TaskRing } from './task-ring.js';

/** The shared parts of a lane, as buffers (made by the worker; the pool gets views of them from the hello). */
export interface LaneBuffers {
  ring: SharedArrayBuffer;
  answers: SharedArrayBuffer;
  bell: SharedArrayBuffer;
  doorbell: SharedArrayBuffer;
}

/** A task the worker read from its port before it could run it, and the port message it was (1 for the first). */
interface Received {
  task: LaneTask;
  index: number;
}

export class WorkerEnd implements SpinSource<LaneTask> {
  /** How the worker may spin for its next task (see lane-bell.ts, lane-spin.ts). */
  readonly bell: LaneBell;
  readonly #port: MessagePort;
  readonly #ring: TaskRing;
  readonly #answers: AnswerRing;
  readonly #doorbell: Int32Array;
  readonly #run: (task: LaneTask) => void;
  /** Messages posted on the port, and received from it (kicks and host calls' answers included). */
  #posted = 0;
  #received = 0;
  /** Tasks read from the port and not run yet, in order (usually none: they are read when they can run). */
  readonly #kept: Received[] = [];
  #drainScheduled = false;
  /** Host-call ids are unique in the worker, so a late answer to an earlier, timed-out call is told apart. */
  #nextRpcId = 1;

  /**
   * Open the worker's lane: send the pool its other end and the shared parts
   * in the hello, on `parentPort` (the only message that goes there), with
   * `status` (the worker's spare-status block) beside them. `run` runs a task.
   * Undefined outside a worker.
   */
  static hello(status: SharedArrayBuffer, run: (task: LaneTask) => void): WorkerEnd | undefined {
    if (!parentPort) return undefined;
    const lane = new MessageChannel();
    const end = new WorkerEnd(lane.port1, run);
    const hello: LaneHello = { toolhost: 'hello', threadId, port: lane.port2, status, ...end.buffers };
    parentPort.postMessage(hello, [lane.port2]);
    return end;
  }

  /** `port`: the worker's side of the lane's port; `shared`: buffers to use (a test's), else new ones. */
  constructor(port: MessagePort, run: (task: LaneTask) => void, shared?: Partial<LaneBuffers>) {
    this.#port = port;
    this.#run = run;
    this.#ring = new TaskRing(shared?.ring);
    this.#answers = new AnswerRing(shared?.answers);
    this.bell = new LaneBell(shared?.bell);
    this.#doorbell = new Int32Array(shared?.doorbell ?? new SharedArrayBuffer(4));
    // The worker waits in its event loop until its first task: a call put in its ring needs a kick.
    this.#ring.listen(true);
    port.on('message', (message: LaneMessage) => this.#onMessage(message));
  }

  get buffers(): LaneBuffers {
    return { ring: this.#ring.buffer, answers: this.#answers.buffer, bell: this.bell.buffer, doorbell: this.#doorbell.buffer as SharedArrayBuffer };
  }

  /** The port's message event: keep a task in its place, then run what the lane holds, in order. */
  #onMessage(message: LaneMessage): void {
    this.#received += 1;
    if (isTask(message)) this.#kept.push({ task: message, index: this.#received });
    this.#ring.listen(false);
    this.drain();
  }

  /** A task a spin caught (see lane-spin.ts): run it, then whatever the lane holds. */
  take(task: LaneTask): void {
    this.#ring.listen(false);
    this.#run(task);
    this.drain();
  }

  /**
   * Run every task the lane holds, in order, then listen. After it starts
   * listening it looks at the ring once more: a call put there before the
   * pool could see it listening came with no kick.
   */
  drain(): void {
    const ring = this.#ring;
    for (;;) {
      // (Tasks still on the port come with message events of their own: the port is read here only for what precedes a ring call.)
      while (ring.pending || this.#kept.length > 0) {
        const task = this.next();
        if (task !== undefined) this.#run(task);
      }
      ring.listen(true);
      if (!ring.pending) return;
      ring.listen(false);
    }
  }

  /**
   * The next task the lane holds, in the order the pool sent them: a ring
   * call that `posted` port messages preceded comes after the port's message
   * number `posted` and before the next. (A ring call is published before the
   * pool posts anything after it, so once a port message is read, every ring
   * call before it can be seen; a ring call seen before the port is read has
   * every port message before it already queued.)
   */
  next(): LaneTask | undefined {
    const ring = this.#ring;
    for (;;) {
      const ringFirst = ring.pending;
      const head = this.#kept[0] ?? this.#read();
      const before = ring.peekPosted();
      if (before !== -1) {
        if (head === undefined) {
          // A call that arrived between the two looks: the port is read again first (what precedes it is queued now).
          if (!ringFirst) continue;
          return ring.take();
        }
        if (before < head.index) return ring.take();
      }
      if (head === undefined) return undefined;
      this.#kept.shift();
      return head.task;
    }
  }

  /** Read the port up to its next task (kept, in its place), skipping kicks and late answers; undefined when it holds none. */
  #read(): Received | undefined {
    for (;;) {
      const posted = receiveMessageOnPort(this.#port) as { message: LaneMessage } | undefined;
      if (posted === undefined) return undefined;
      this.#received += 1;
      if (isTask(posted.message)) {
        const received = { task: posted.message, index: this.#received };
        this.#kept.push(received);
        return received;
      }
    }
  }

  /** The worker goes back to its event loop (true: the pool must kick it) or takes tasks without one (false). */
  listen(on: boolean): void {
    this.#ring.listen(on);
  }

  /** One of task `taskId`'s events. */
  event(taskId: number, event: WorkerMessage): void {
    this.#post({ taskId, event } satisfies LaneEvent);
  }

  /**
   * Ask the pool and wait for its answer (blocking the worker); throws when
   * it fails or does not answer within `timeoutMs`. Tasks that arrive
   * meanwhile are kept and run once the worker is free.
   */
  request(taskId: number, request: RpcRequest, timeoutMs: number): unknown {
    const id = this.#nextRpcId++;
    const doorbell = this.#doorbell;
    Atomics.store(doorbell, 0, 0);
    this.#post({ taskId, event: { type: 'rpc', id, request } } satisfies LaneEvent);
    const deadline = Date.now() + timeoutMs;
    // A kick read here is not delivered again: the call it announced is in the ring, and is run from a drain below.
    let kicked = false;
    try {
      for (;;) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Error(`host did not answer ${request.op} within ${timeoutMs} ms`);
        Atomics.wait(doorbell, 0, 0, remaining);
        Atomics.store(doorbell, 0, 0);
        for (let received = receiveMessageOnPort(this.#port) as { message: LaneMessage } | undefined; received; received = receiveMessageOnPort(this.#port) as typeof received) {
          this.#received += 1;
          const { message } = received;
          if (isTask(message)) {
            this.#kept.push({ task: message, index: this.#received });
            continue;
          }
          // A kick (the ring is read when the worker is free), or a late answer to an earlier call.
          if (message === LANE_KICK) {
            kicked = true;
            continue;
          }
          if (message.id !== id) continue;
          if (message.ok) return message.value;
          throw new Error(message.error);
        }
      }
    } finally {
      // Kept tasks get no message event of their own, nor does a call whose kick was read here: they run at the
      // next turn, or sooner from a drain under way. (A task that runs after its drain, as a first call that
      // awaited its glue does, asks the host while its worker listens: the pool then kicks, and that kick was
      // dropped here, leaving the call in the ring of an idle worker; the 100,000-call soak wedged on it.)
      if (this.#kept.length > 0 || kicked) this.#scheduleDrain();
    }
  }

  #scheduleDrain(): void {
    if (this.#drainScheduled) return;
    this.#drainScheduled = true;
    setImmediate(() => {
      this.#drainScheduled = false;
      if (this.#kept.length === 0 && !this.#ring.pending) return;
      this.#ring.listen(false);
      this.drain();
    });
  }

  /**
   * Task `taskId`'s answer: a call's value goes in the answer ring (with a
   * kick only when the pool neither polls nor has one coming, see
   * answer-ring.ts), anything else on the port.
   */
  answer(taskId: number, answer: TaskAnswer): void {
    const reply = encodeAnswer(taskId, answer, this.#posted);
    if (Array.isArray(reply) && this.#answers.push(reply)) {
      if (this.#answers.needsKick()) this.#post(LANE_KICK);
    } else {
      this.#post(reply);
    }
  }

  /** What a task threw (the worker's bug, never the guest's). */
  fail(taskId: number, error: unknown): void {
    this.#post({ taskId, error: error instanceof Error ? error.message : String(error) } satisfies LaneAnswer);
  }

  #post(message: LaneEvent | LaneAnswer | ReturnType<typeof encodeAnswer> | typeof LANE_KICK): void {
    this.#port.postMessage(message);
    this.#posted += 1;
  }
}
