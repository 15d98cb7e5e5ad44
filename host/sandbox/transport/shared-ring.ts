/**
 * A ring of fixed-size slots in shared memory between two threads, one
 * writing and one reading: each slot holds a few numbers and strings. The
 * task lanes use two per worker, one each way (task-ring.ts, answer-ring.ts),
 * so that a call and its answer need no `postMessage` when the other side
 * will look anyway.
 *
 * Strings are written as UTF-16 code units, so they arrive exactly as
 * written (lone surrogates included). A slot that would not hold them is
 * refused (`fits`), and so is a write to a full ring: the caller then posts
 * as before. Besides the two counters, the header has one flag for the
 * ring's wake-up handshake (each ring says what it means).
 */

/** Int32 header slots. */
const WRITTEN = 0;
const READ = 1;
const FLAG = 2;
const HEADER_BYTES = 16;

export interface RingLayout {
  /** Slots in the ring. */
  slots: number;
  /** Bytes of a slot. */
  slotBytes: number;
  /** Numbers (float64) a slot holds. */
  numbers: number;
  /** Strings a slot holds. */
  strings: number;
}

/** Bytes of a ring with `layout`. */
export function ringBytes(layout: RingLayout): number {
  return HEADER_BYTES + layout.slots * layout.slotBytes;
}

export class SharedRing {
  readonly buffer: SharedArrayBuffer;
  readonly #layout: RingLayout;
  readonly #header: Int32Array;
  readonly #numbers: Float64Array;
  readonly #lengths: Int32Array;
  readonly #bytes: Buffer;
  /** Where a slot's strings start, from the slot's start (bytes). */
  readonly #stringsAt: number;
  /** The writer's count of slots written, or the reader's of slots read (each side keeps its own). */
  #count = 0;
  /** The slot being written or read (its byte offset). */
  #slot = 0;
  /** The next string's byte offset in the slot being written or read. */
  #stringAt = 0;

  /** A new ring, or a view of one another thread made (its `buffer`). */
  constructor(layout: RingLayout, buffer: SharedArrayBuffer = new SharedArrayBuffer(ringBytes(layout))) {
    if (buffer.byteLength !== ringBytes(layout)) throw new RangeError(`this ring is ${ringBytes(layout)} bytes, not ${buffer.byteLength}`);
    if (layout.slotBytes % 8 !== 0) throw new RangeError('a slot is a whole number of float64s');
    this.buffer = buffer;
    this.#layout = layout;
    this.#header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.#numbers = new Float64Array(buffer, HEADER_BYTES);
    this.#lengths = new Int32Array(buffer, HEADER_BYTES);
    this.#bytes = Buffer.from(buffer);
    this.#stringsAt = layout.numbers * 8 + layout.strings * 4;
  }

  /** Whether strings of these lengths (in UTF-16 code units, all of a slot's together) fit a slot. */
  fits(codeUnits: number): boolean {
    return this.#stringsAt + codeUnits * 2 <= this.#layout.slotBytes;
  }

  /** Writer: start a slot; false when the ring is full. Then `number`/`string` in order, then `publish`. */
  protected begin(): boolean {
    if (this.#count - Atomics.load(this.#header, READ) >= this.#layout.slots) return false;
    this.#slot = (this.#count % this.#layout.slots) * this.#layout.slotBytes;
    this.#stringAt = this.#stringsAt;
    return true;
  }

  /** Writer: number `index` of the slot begun. */
  protected writeNumber(index: number, value: number): void {
    this.#numbers[this.#slot / 8 + index] = value;
  }

  /** Writer: string `index` of the slot begun, or none (strings are written in order). */
  protected writeString(index: number, value: string | undefined): void {
    const at = (this.#slot + this.#layout.numbers * 8) / 4 + index;
    if (value === undefined) {
      this.#lengths[at] = -1;
      return;
    }
    this.#lengths[at] = value.length;
    this.#bytes.write(value, HEADER_BYTES + this.#slot + this.#stringAt, 'utf16le');
    this.#stringAt += value.length * 2;
  }

  /** Writer: the slot begun is complete; the reader may take it. */
  protected publish(): void {
    this.#count += 1;
    // A release: the reader reads the slot's contents after its load of WRITTEN.
    Atomics.store(this.#header, WRITTEN, this.#count);
  }

  /** Reader: whether a slot is waiting. */
  get pending(): boolean {
    return Atomics.load(this.#header, WRITTEN) !== this.#count;
  }

  /** Reader: start reading the next slot; false when none waits. Then `number`/`string` in order, then `release`. */
  protected next(): boolean {
    if (!this.pending) return false;
    this.#slot = (this.#count % this.#layout.slots) * this.#layout.slotBytes;
    this.#stringAt = this.#stringsAt;
    return true;
  }

  protected readNumber(index: number): number {
    return this.#numbers[this.#slot / 8 + index]!;
  }

  /** String `index` of the slot being read (undefined where none was written). */
  protected readString(index: number): string | undefined {
    const units = this.#lengths[(this.#slot + this.#layout.numbers * 8) / 4 + index]!;
    if (units < 0) return undefined;
    const start = HEADER_BYTES + this.#slot + this.#stringAt;
    this.#stringAt += units * 2;
    return this.#bytes.toString('utf16le', start, start + units * 2);
  }

  /** Reader: the slot read is free for the writer again. */
  protected release(): void {
    this.#count += 1;
    Atomics.store(this.#header, READ, this.#count);
  }

  protected loadFlag(): number {
    return Atomics.load(this.#header, FLAG);
  }

  protected storeFlag(value: number): void {
    Atomics.store(this.#header, FLAG, value);
  }

  /** Sets the flag to `value` if it is `expected`, returning what it was. */
  protected compareExchangeFlag(expected: number, value: number): number {
    return Atomics.compareExchange(this.#header, FLAG, expected, value);
  }

  /** Sets the flag, returning what it was. */
  protected exchangeFlag(value: number): number {
    return Atomics.exchange(this.#header, FLAG, value);
  }
}
