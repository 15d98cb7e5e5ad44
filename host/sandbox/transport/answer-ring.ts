/**
 * A lane's answer ring: where a worker leaves the answers of its calls (a
 * value and its accounting) for the pool, without a `postMessage` when the
 * pool will look anyway (see shared-ring.ts; the worker made it and sent it
 * in its hello).
 *
 * Why: a posted answer cost the worker ~2.5 µs of serializing and queueing
 * plus an eventfd write, and the main thread a message event and a
 * deserialization, on the critical path of every call. While the pool polls
 * for a short call's answer (answer-poll.ts) it reads the ring at every turn
 * of its event loop; otherwise the worker sends one kick (LANE_KICK) and
 * answers that arrive before the pool has read the ring ride on it: at 8
 * calls in flight the main thread reads several answers per message.
 *
 * The handshake: the ring's flag says a kick is outstanding, or the pool
 * polls. The worker pushes, then sets the flag and kicks only if it was
 * clear. The pool clears it, then reads the ring to the end (on a kick, and
 * when it stops polling). With sequentially consistent Atomics either the
 * pool's last read sees the answer or the worker sees the flag clear.
 */
import type { ValueMessage } from './lane-codec.js';
import { SharedRing, ringBytes, type RingLayout } from './shared-ring.js';

const LAYOUT: RingLayout = { slots: 8, slotBytes: 4096, numbers: 13, strings: 1 };
/** Bytes of an answer ring. */
export const ANSWER_RING_BYTES = ringBytes(LAYOUT);
/** Answers a ring holds before the worker posts instead. */
export const ANSWER_RING_SLOTS = LAYOUT.slots;

/** A number that may be absent travels as NaN. */
const orNaN = (value: number | undefined): number => value ?? Number.NaN;
const orUndefined = (value: number): number | undefined => (Number.isNaN(value) ? undefined : value);

export class AnswerRing extends SharedRing {
  /** A new ring (the worker's), or a view of one a worker sent (the pool's). */
  constructor(buffer?: SharedArrayBuffer) {
    super(LAYOUT, buffer);
  }

  /** Worker: put an answer in the ring; false when its value does not fit a slot or the ring is full (post it instead). */
  push(reply: ValueMessage): boolean {
    if (!this.fits(reply[1].length) || !this.begin()) return false;
    this.writeNumber(0, reply[0]);
    this.writeNumber(1, reply[2]);
    this.writeNumber(2, reply[3]);
    this.writeNumber(3, reply[4]);
    this.writeNumber(4, reply[5]);
    this.writeNumber(5, orNaN(reply[6]));
    this.writeNumber(6, reply[7]);
    this.writeNumber(7, orNaN(reply[8]));
    this.writeNumber(8, reply[9]);
    this.writeNumber(9, reply[10]);
    this.writeNumber(10, reply[11]);
    this.writeNumber(11, orNaN(reply[12]));
    this.writeNumber(12, orNaN(reply[13]));
    this.writeString(0, reply[1]);
    this.publish();
    return true;
  }

  /** Worker, after `push`: whether to kick the pool (no kick was outstanding, and it does not poll). */
  needsKick(): boolean {
    return this.exchangeFlag(1) === 0;
  }

  /** Pool: how many port messages the worker had posted before the next answer in the ring (its slot 9, see lane-codec.ts), or -1 when it holds none. */
  peekPosted(): number {
    return this.next() ? this.readNumber(8) : -1;
  }

  /** Pool: the next answer in the ring, if any. */
  take(): ValueMessage | undefined {
    if (!this.next()) return undefined;
    const reply: ValueMessage = [
      this.readNumber(0), this.readString(0)!, this.readNumber(1), this.readNumber(2), this.readNumber(3), this.readNumber(4),
      orUndefined(this.readNumber(5)), this.readNumber(6), orUndefined(this.readNumber(7)), this.readNumber(8), this.readNumber(9), this.readNumber(10),
      orUndefined(this.readNumber(11)), orUndefined(this.readNumber(12)),
    ];
    this.release();
    return reply;
  }

  /** Pool: it polls the ring (true: the worker need not kick), or it has read a kick or stopped polling (false: the next answer kicks). Read the ring after clearing. */
  polling(on: boolean): void {
    this.storeFlag(on ? 1 : 0);
  }
}
