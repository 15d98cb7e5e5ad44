/**
 * New call ids: random (version 4) UUIDs, made in batches and handed out as
 * flat strings.
 *
 * Node's `randomUUID()` builds each UUID by concatenation, which V8 keeps as
 * a tree of pieces; the tracker remembers finished ids (ALREADY_COMPLETED),
 * so each tree outlived two scavenges and was promoted (~480 bytes a call),
 * and flattening it through a Buffer cost more than making it (~3 µs of the
 * main thread a call, cold, in a profile of C echo at concurrency 1). Here
 * one `randomFillSync` feeds a batch, which is written out as ASCII into one
 * buffer; each id is then one latin1 slice of it: a flat string in one step.
 */
import { randomFillSync } from 'node:crypto';

/** UUIDs made per batch (16 random bytes and 36 characters each). */
const BATCH = 128;
const UUID_CHARS = 36;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const DASH = 0x2d;

export class CallIdSource {
  readonly #random = Buffer.alloc(BATCH * 16);
  readonly #text = Buffer.alloc(BATCH * UUID_CHARS);
  /** Ids left in the current batch. */
  #left = 0;

  /** A new random UUID (version 4, RFC 9562), lowercase. */
  next(): string {
    if (this.#left === 0) this.#refill();
    this.#left -= 1;
    const start = this.#left * UUID_CHARS;
    return this.#text.toString('latin1', start, start + UUID_CHARS);
  }

  #refill(): void {
    const random = randomFillSync(this.#random);
    const text = this.#text;
    let at = 0;
    for (let uuid = 0; uuid < BATCH; uuid += 1) {
      const base = uuid * 16;
      // Version 4 in the high nibble of byte 6; the RFC variant (10xx) in the high bits of byte 8.
      random[base + 6] = (random[base + 6]! & 0x0f) | 0x40;
      random[base + 8] = (random[base + 8]! & 0x3f) | 0x80;
      for (let byte = 0; byte < 16; byte += 1) {
        // The dashes go before bytes 4, 6, 8 and 10 (a Set lookup here was most of a batch's time).
        if (byte === 4 || byte === 6 || byte === 8 || byte === 10) text[at++] = DASH;
        const value = random[base + byte]!;
        text[at++] = HEX[value >> 4]!;
        text[at++] = HEX[value & 0x0f]!;
      }
    }
    this.#left = BATCH;
  }
}
