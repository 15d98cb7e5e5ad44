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
 * The handshake that loses no task: the pool publishes a slot, then reads
 * `listening`; the worker sets `listening`, then looks at the ring once more.
 * (Both with sequentially consistent Atomics: at least one of them sees the
 * other's write.) One producer (the pool), one consumer (the worker).
 *
 * What goes in the ring: a call whose message is a taskId, control buffer id
 * and offset, submittedAt, profile id, args and call id: no buffer carried,
 * no extras (those still travel on the port, with anything else). The two
 * strings are written as UTF-16 code units, so they arrive exactly as sent
 * (lone surrogates included). A call that does not fit a slot, or finds the
 * ring full, is posted as before. The worker reads its port before its ring
 * (see worker/lane-reader.ts): whatever a ring call relies on (its control
 * buffer, its profile) came on the port, before it.
 */
import type { CallMessage } from './lane-codec.js';

/** Int32 header slots. */
const WRITTEN = 0;
const READ = 1;
const LISTENING = 2;
const HEADER_BYTES = 16;

/** Slots in a ring: more than the tasks a worker holds at once (see worker-holdings.ts). */
export const RING_SLOTS = 8;
/** Bytes of a slot: 5 numbers, 2 string lengths, the strings (a call whose strings take more is posted). */
export const RING_SLOT_BYTES = 2048;
const SLOT_NUMBERS = 5;
const SLOT_STRINGS_AT = SLOT_NUMBERS * 8 + 2 * 4;
const STRING_BYTES = RING_SLOT_BYTES - SLOT_STRINGS_AT;

/** Bytes of a ring. */
export const RING_BYTES = HEADER_BYTES + RING_SLOTS * RING_SLOT_BYTES;

/** A call message the ring can carry, or undefined. */
export type RingCall = CallMessage & { 1: undefined; 8: undefined };

export function fitsRing(message: CallMessage): message is RingCall {
  return message[1] === undefined && message[8] === undefined && (message[6].length + message[7].length) * 2 <= STRING_BYTES;
}

export class TaskRing {
  readonly buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #numbers: Float64Array;
  readonly #lengths: Int32Array;
  readonly #bytes: Buffer;
  /** The pool's count of slots written, or the worker's of slots read (each side keeps its own). */
  #count = 0;

  /** A new ring (the worker's), or a view of one a worker sent (the pool's). */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(RING_BYTES)) {
    if (buffer.byteLength !== RING_BYTES) throw new RangeError(`a task ring is ${RING_BYTES} bytes, not ${buffer.byteLength}`);
    this.buffer = buffer;
    this.#header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.#numbers = new Float64Array(buffer, HEADER_BYTES);
    this.#lengths = new Int32Array(buffer, HEADER_BYTES);
    this.#bytes = Buffer.from(buffer);
  }

  /** Pool: put a call in the ring; false when the ring is full (post it instead). */
  push(message: RingCall): boolean {
    const written = this.#count;
    if (written - Atomics.load(this.#header, READ) >= RING_SLOTS) return false;
    const slot = HEADER_BYTES + (written % RING_SLOTS) * RING_SLOT_BYTES;
    const n = (slot - HEADER_BYTES) / 8;
    const numbers = this.#numbers;
    numbers[n] = message[0];
    numbers[n + 1] = message[2];
    numbers[n + 2] = message[3];
    numbers[n + 3] = message[4];
    numbers[n + 4] = message[5];
    const args = message[6];
    const callId = message[7];
    const lengths = (slot - HEADER_BYTES + SLOT_NUMBERS * 8) / 4;
    this.#lengths[lengths] = args.length;
    this.#lengths[lengths + 1] = callId.length;
    const strings = slot + SLOT_STRINGS_AT;
    this.#bytes.write(args, strings, 'utf16le');
    this.#bytes.write(callId, strings + args.length * 2, 'utf16le');
    this.#count = written + 1;
    // Publishes the slot's contents (a release: the worker reads them after its load of WRITTEN).
    Atomics.store(this.#header, WRITTEN, written + 1);
    return true;
  }

  /** Pool: whether the worker has gone back to its event loop (a call put in the ring then needs a kick). Read after `push`. */
  get listening(): boolean {
    return Atomics.load(this.#header, LISTENING) === 1;
  }

  /** Worker: the next call in the ring, if any. */
  take(): RingCall | undefined {
    const read = this.#count;
    if (Atomics.load(this.#header, WRITTEN) === read) return undefined;
    const slot = HEADER_BYTES + (read % RING_SLOTS) * RING_SLOT_BYTES;
    const n = (slot - HEADER_BYTES) / 8;
    const numbers = this.#numbers;
    const lengths = (slot - HEADER_BYTES + SLOT_NUMBERS * 8) / 4;
    const argsEnd = slot + SLOT_STRINGS_AT + this.#lengths[lengths]! * 2;
    const args = this.#bytes.toString('utf16le', slot + SLOT_STRINGS_AT, argsEnd);
    const callId = this.#bytes.toString('utf16le', argsEnd, argsEnd + this.#lengths[lengths + 1]! * 2);
    const message: RingCall = [numbers[n]!, undefined, numbers[n + 1]!, numbers[n + 2]!, numbers[n + 3]!, numbers[n + 4]!, args, callId, undefined];
    this.#count = read + 1;
    // The slot is free for the pool once read.
    Atomics.store(this.#header, READ, read + 1);
    return message;
  }

  /** Worker: whether a call is in the ring (without taking it). */
  get pending(): boolean {
    return Atomics.load(this.#header, WRITTEN) !== this.#count;
  }

  /** Worker: it goes back to its event loop (true; then it looks at the ring once more) or takes tasks (false). */
  listen(on: boolean): void {
    Atomics.store(this.#header, LISTENING, on ? 1 : 0);
  }
}
