/**
 * A lane's task ring: a few slots of shared memory in which the pool hands a
 * worker its plain calls without a `postMessage` (task-lanes.ts; the worker
 * made it and sent it in its hello).
 *
 * Why: a post costs the main thread ~2.5 µs of serializing and queueing plus
 * an eventfd write (a syscall: ~1.5 µs on this VM; a wake-up IPI besides when
 * the worker sleeps), and the worker a turn of its event loop and a
 * deserialization to receive it. At 8 calls in flight the main thread is
 * the bottleneck, and `postMessage` was its largest single item (~10-18 % of
 * its samples). A busy worker needs no message: it takes the next task from
 * the ring when it finishes the one it runs, and a spinning one watches the
 * ring. Only a worker that has gone back to its event loop (`listening`)
 * is sent a kick, a message that says "look at your ring".
 *
 * The handshake that loses no task: the pool publishes a slot, then claims
 * the kick (`claimKick`); the worker sets `listening`, then looks at the ring
 * once more. (Both with sequentially consistent Atomics: at least one of them
 * sees the other's write.) One producer (the pool), one consumer (the worker).
 *
 * One kick a sleep: the claim turns `listening` into `kicked`, so calls the
 * pool puts in the ring before the worker wakes go without a kick of their
 * own (the kicked worker drains the whole ring). At 8 calls in flight, 67 %
 * of the calls put in a ring were kicked before, 41 % after: each kick is a
 * `postMessage` of ~10 µs on the main thread and a message event in the worker.
 *
 * What goes in the ring: a call whose message is a taskId, control buffer id
 * and offset, submittedAt, profile id, args, call id, the count of port
 * messages before it, and the conversation,
 * session and agent it may name: no buffer carried, no profile, environment
 * or worktree (those still travel on the port, with anything else). A call
 * that does not fit a slot, or finds the ring full, is posted as before
 * (see shared-ring.ts). Each call in the ring names how many messages the
 * pool had posted on the port before it, and the worker takes it right after
 * those (see worker-end.ts): whatever a ring call relies on (its control
 * buffer, its profile) came on the port before it, and a task posted after
 * it does not overtake it.
 */
import type { CallExtras, CallMessage } from './lane-codec.js';
import { SharedRing, ringBytes, type RingLayout } from './shared-ring.js';

/** Slots: more than the tasks a worker holds at once (see worker-holdings.ts). A call whose strings take more than a slot is posted. */
const LAYOUT: RingLayout = { slots: 8, slotBytes: 2048, numbers: 6, strings: 6 };
export const RING_SLOTS = LAYOUT.slots;
/** Bytes of a task ring. */
export const RING_BYTES = ringBytes(LAYOUT);

/** What of a call's extras the ring carries: its conversation, session and agent (strings); a profile, environment or worktree goes on the port. */
type RingExtras = Pick<CallExtras, 'conversationKey' | 'conversationId' | 'sessionId' | 'agentName'>;
const RING_EXTRAS: ReadonlySet<string> = new Set<keyof RingExtras>(['conversationKey', 'conversationId', 'sessionId', 'agentName']);

/** A call message the ring can carry: no control buffer carried, no extras but those strings. */
export type RingCall = CallMessage & { 1: undefined; 8: RingExtras | undefined };

/** The worker's flag: 0 while it takes tasks, LISTENING in its event loop, KICKED once the pool kicked it there. */
const LISTENING = 1;
const KICKED = 2;

function ringExtras(extras: CallExtras | undefined): extras is RingExtras | undefined {
  if (extras === undefined) return true;
  for (const key in extras) if (!RING_EXTRAS.has(key)) return false;
  return true;
}

const length = (value: string | undefined): number => value?.length ?? 0;

export class TaskRing extends SharedRing {
  /** A new ring (the worker's), or a view of one a worker sent (the pool's). */
  constructor(buffer?: SharedArrayBuffer) {
    super(LAYOUT, buffer);
  }

  /** Pool: whether `message` may go in the ring (a call that carries no buffer, no profile, environment or worktree, and whose strings fit a slot). */
  carries(message: CallMessage): message is RingCall {
    const extras = message[8];
    if (message[1] !== undefined || !ringExtras(extras)) return false;
    const units = message[6].length + message[7].length + (extras === undefined ? 0 : length(extras.conversationKey) + length(extras.conversationId) + length(extras.sessionId) + length(extras.agentName));
    return this.fits(units);
  }

  /**
   * Pool: put a call in the ring; false when the ring is full (post it instead).
   * `posted`: the messages the pool had posted on the lane's port before it (the
   * worker takes the call after those and before the next: see worker-end.ts).
   */
  push(message: RingCall, posted = 0): boolean {
    if (!this.begin()) return false;
    this.writeNumber(5, posted);
    this.writeNumber(0, message[0]);
    this.writeNumber(1, message[2]);
    this.writeNumber(2, message[3]);
    this.writeNumber(3, message[4]);
    this.writeNumber(4, message[5]);
    this.writeString(0, message[6]);
    this.writeString(1, message[7]);
    const extras = message[8];
    this.writeString(2, extras?.conversationKey);
    this.writeString(3, extras?.conversationId);
    this.writeString(4, extras?.sessionId);
    this.writeString(5, extras?.agentName);
    this.publish();
    return true;
  }

  /** Whether the worker is in its event loop (kicked or not). */
  get listening(): boolean {
    return this.loadFlag() !== 0;
  }

  /**
   * Pool, after `push`: whether the call needs a kick. True once per return
   * of the worker to its event loop: the worker listens and nobody kicked it
   * yet (the claim is that kick's). A kicked worker drains the whole ring.
   */
  claimKick(): boolean {
    return this.loadFlag() === LISTENING && this.compareExchangeFlag(LISTENING, KICKED) === LISTENING;
  }

  /** Worker: how many port messages came before the next call in the ring (see `push`), or -1 when it holds none. */
  peekPosted(): number {
    return this.next() ? this.readNumber(5) : -1;
  }

  /** Worker: the next call in the ring, if any. */
  take(): RingCall | undefined {
    if (!this.next()) return undefined;
    const taskId = this.readNumber(0);
    const bufferId = this.readNumber(1);
    const offset = this.readNumber(2);
    const submittedAt = this.readNumber(3);
    const profile = this.readNumber(4);
    const args = this.readString(0)!;
    const callId = this.readString(1)!;
    let extras: RingExtras | undefined;
    const extra = (key: keyof RingExtras, value: string | undefined): void => {
      if (value !== undefined) (extras ??= {})[key] = value;
    };
    extra('conversationKey', this.readString(2));
    extra('conversationId', this.readString(3));
    extra('sessionId', this.readString(4));
    extra('agentName', this.readString(5));
    this.release();
    return [taskId, undefined, bufferId, offset, submittedAt, profile, args, callId, extras];
  }

  /** Worker: it goes back to its event loop (true; then it looks at the ring once more) or takes tasks (false). */
  listen(on: boolean): void {
    this.storeFlag(on ? LISTENING : 0);
  }
}
