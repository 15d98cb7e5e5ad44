/**
 * Reading and writing the WebAssembly binary format where the sandbox rewrites
 * core modules (memory and table caps, snapshot exports): a cursor over the
 * bytes with unsigned LEB128, and the LEB128 encoder.
 */

/** A cursor over a module's bytes; every read checks the end. */
export class WasmReader {
  offset: number;
  constructor(readonly bytes: Uint8Array, offset = 0) {
    this.offset = offset;
  }

  byte(): number {
    const value = this.bytes[this.offset];
    if (value === undefined) throw new Error('unexpected end of the module');
    this.offset += 1;
    return value;
  }

  /** An unsigned LEB128 (u32 or u64; returned as a number, exact up to 2^53). */
  leb(): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      result += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return result;
      scale *= 128;
      if (scale > 2 ** 63) throw new Error('malformed LEB128');
    }
  }

  skip(count: number): void {
    this.offset += count;
    if (this.offset > this.bytes.length) throw new Error('unexpected end of the module');
  }

  /** A length-prefixed UTF-8 name. */
  name(): string {
    const length = this.leb();
    const start = this.offset;
    this.skip(length);
    return Buffer.from(this.bytes.subarray(start, start + length)).toString('utf8');
  }
}

/** `value` as an unsigned LEB128. */
export function encodeLeb(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    out.push(byte);
  } while (rest > 0);
  return out;
}

/** The chunks of a rewritten module, joined into one buffer. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
