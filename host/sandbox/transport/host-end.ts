/**
 * The pool's end of one worker's lane: the one ordered, two-way channel
 * between the main thread and a sandbox worker (worker-end.ts is the other
 * end, and says how the two keep order). It sends tasks (on the port, or in
 * the task ring with a kick when the worker listens) and host calls'
 * answers (on the port, then the doorbell), and hands the pool, in the
 * order the worker sent them, each task's events and host calls and its
 * answer (from the port, or from the answer ring).
 *
 * What arrives is delivered in order by construction: an answer in the ring
 * names how many port messages the worker had posted before it, and it is
 * read only once those have been, and before the next one is handled. So a
 * task's answer never overtakes its own events, and the pool needs to wait
 * for nothing once it has the answer.
 */
import type { MessagePort } from 'node:worker_threads';
import type { LaneAnswer, RpcReply, TaskWire, WorkerMessage } from '../protocol.js';
import { AnswerRing } from './answer-ring.js';
import { LaneBell } from './lane-bell.js';
import { LANE_KICK, carriesBuffer, decodeAnswer, encodeTask, type LaneHello, type LaneReply } from './lane-codec.js';
import { TaskRing } from './task-ring.js';

/** What a lane hands the pool. */
export interface HostEndEvents {
  /** A task's answer (or what its task threw in the worker). */
  answer(answer: LaneAnswer): void;
  /** One of a task's events or host calls (a host call is answered with `reply`). */
  event(taskId: number, event: WorkerMessage): void;
  /** The port closed: the worker exited. Then the answers it left in the ring are handed over, then `closed`. */
  closing(): void;
  closed(): void;
}

export class HostEnd {
  readonly #port: MessagePort;
  readonly #events: HostEndEvents;
  /** The worker's lane bell, rung after each task sent (see lane-bell.ts). */
  readonly #bell: LaneBell | undefined;
  /** Where plain calls go without a post (see task-ring.ts). */
  readonly #ring: TaskRing | undefined;
  /** Where the worker leaves call answers (see answer-ring.ts). */
  readonly #answers: AnswerRing | undefined;
  /** Rung after a host call's answer is posted: the worker waits on it. */
  readonly #doorbell: Int32Array | undefined;
  /** The control buffers this lane has carried to its worker, by id (see lane-codec.ts). */
  readonly #sentBuffers = new Set<number>();
  readonly #threadId: number;
  /** Messages posted on the port, and received from it (kicks included). */
  #posted = 0;
  #received = 0;
  #polling = false;

  /** The pool's end of the lane a worker's hello opened (`bell`: the pool's view of the worker's lane bell). */
  static fromHello(hello: LaneHello, events: HostEndEvents, bell?: LaneBell): HostEnd {
    return new HostEnd(hello.threadId, hello.port, events, {
      bell: bell ?? new LaneBell(hello.bell),
      ring: new TaskRing(hello.ring),
      answers: new AnswerRing(hello.answers),
      doorbell: new Int32Array(hello.doorbell),
    });
  }

  /** A lane on `port` (a test's, without shared parts: everything then travels on the port). */
  constructor(threadId: number, port: MessagePort, events: HostEndEvents, shared?: { bell?: LaneBell; ring?: TaskRing; answers?: AnswerRing; doorbell?: Int32Array }) {
    this.#threadId = threadId;
    this.#port = port;
    this.#events = events;
    this.#bell = shared?.bell;
    this.#ring = shared?.ring;
    this.#answers = shared?.answers;
    this.#doorbell = shared?.doorbell;
    port.on('message', (reply: LaneReply) => this.#onMessage(reply));
    port.on('close', () => {
      events.closing();
      // Answers the worker left before it exited are read, not lost with it.
      this.#collect(Number.POSITIVE_INFINITY);
      events.closed();
    });
    // Lanes never keep the process alive: the pool does, while it has tasks.
    port.unref();
  }

  /**
   * Send a task. Throws when it cannot be sent (a value that cannot be
   * cloned): nothing was sent then, and the lane goes on.
   */
  send(wire: TaskWire): void {
    const message = encodeTask(wire, this.#sentBuffers, this.#threadId);
    try {
      const ring = this.#ring;
      if (ring !== undefined && Array.isArray(message) && ring.carries(message) && ring.push(message, this.#posted)) {
        // A worker that runs a task or spins takes it when it looks; one in its event loop needs a kick (one: see task-ring.ts).
        if (ring.claimKick()) this.#post(LANE_KICK);
      } else {
        this.#post(message);
      }
    } catch (error) {
      // A buffer the message carried did not arrive.
      const carried = carriesBuffer(message);
      if (carried !== undefined) this.#sentBuffers.delete(carried);
      throw error;
    }
    // After the post: a spinning worker that sees the bell finds the task in its port or ring.
    this.#bell?.ring();
  }

  /** Answer a host call: the worker is blocked on the doorbell until it reads this. */
  reply(reply: RpcReply): void {
    this.#post(reply);
    const doorbell = this.#doorbell;
    if (doorbell === undefined) return;
    Atomics.store(doorbell, 0, 1);
    Atomics.notify(doorbell, 0);
  }

  #post(message: unknown): void {
    this.#port.postMessage(message);
    this.#posted += 1;
  }

  /**
   * The pool polls the answer ring (true: at every turn of its event loop,
   * so the worker need not kick), or stops (false: it reads it once more).
   */
  polling(on: boolean): void {
    this.#polling = on;
    this.#answers?.polling(on);
    if (!on) this.collect();
  }

  /** Whether the answer ring holds an answer. */
  get pending(): boolean {
    return this.#answers?.pending === true;
  }

  /** Hand over the answers in the ring whose place has come (those that wait for a port message stay until it is read). */
  collect(): void {
    this.#collect(this.#received);
  }

  #onMessage(reply: LaneReply): void {
    // Answers the worker left in the ring before it posted this come first.
    this.#collect(this.#received);
    this.#received += 1;
    if (reply === LANE_KICK) {
      // Cleared before the ring is read (below): an answer the read misses comes with a kick of its own.
      this.#answers?.polling(this.#polling);
    } else if (Array.isArray(reply) || !('event' in reply)) {
      this.#events.answer(decodeAnswer(reply));
    } else {
      this.#events.event(reply.taskId, reply.event);
    }
    // And those that waited for it.
    this.#collect(this.#received);
  }

  /** Hand over the ring's answers that `upTo` port messages or fewer preceded. */
  #collect(upTo: number): void {
    const ring = this.#answers;
    if (ring === undefined) return;
    for (let before = ring.peekPosted(); before !== -1 && before <= upTo; before = ring.peekPosted()) this.#events.answer(decodeAnswer(ring.take()!));
  }
}
