/**
 * Control blocks for the pool's tasks, as slots of a few SharedArrayBuffers
 * that are reused: a SharedArrayBuffer made per task cost ~5-20 µs to post
 * (more than the rest of a small call task), one already posted costs little,
 * and a task lane carries each buffer to its worker only once (lane-codec.ts).
 *
 * A slot goes back to the free list only when its task ended with the
 * worker's answer: that worker has then stopped writing to it. A task whose
 * worker was stopped (a budget, a cancel, a crash) never gives its slot
 * back, since a dying worker may still write there for a few milliseconds;
 * the slot is forgotten, and its buffer freed once none of its slots is held.
 */
import { CONTROL_BYTES, type ControlRef } from '../protocol.js';

/** Slots per buffer. */
const SLOTS_PER_BUFFER = 64;

/** One task's control block: what is posted (`ref`), and the main thread's views, made once. */
export interface ControlSlot {
  ref: ControlRef;
  flags: Int32Array;
  times: Float64Array;
}

export class ControlSlots {
  readonly #free: ControlSlot[] = [];
  #buffers = 0;

  /** A zeroed slot. */
  acquire(): ControlSlot {
    const slot = this.#free.pop() ?? this.#grow();
    slot.flags.fill(0);
    slot.times.fill(0);
    return slot;
  }

  /** Give back the slot of a task its worker answered (see the header for why only those). */
  release(slot: ControlSlot): void {
    this.#free.push(slot);
  }

  #grow(): ControlSlot {
    const buffer = new SharedArrayBuffer(SLOTS_PER_BUFFER * CONTROL_BYTES);
    const bufferId = this.#buffers++;
    for (let i = SLOTS_PER_BUFFER - 1; i > 0; i -= 1) this.#free.push(slotAt(buffer, bufferId, i * CONTROL_BYTES));
    return slotAt(buffer, bufferId, 0);
  }
}

function slotAt(buffer: SharedArrayBuffer, bufferId: number, offset: number): ControlSlot {
  return {
    ref: { buffer, bufferId, offset },
    flags: new Int32Array(buffer, offset, CONTROL_BYTES / Int32Array.BYTES_PER_ELEMENT),
    times: new Float64Array(buffer, offset, CONTROL_BYTES / Float64Array.BYTES_PER_ELEMENT),
  };
}
