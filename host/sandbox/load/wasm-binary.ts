/**
 * Reading and writing the WebAssembly binary format where the sandbox rewrites
 * core modules (memory and table caps, snapshot exports, the instance-state
 * model): a cursor over the bytes with unsigned LEB128 and the type and
 * constant-expression forms, the section list, and the LEB128 encoder.
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

/** A cursor that also reads the type and constant-expression forms of module sections. */
export class ModuleReader extends WasmReader {
  /** A value type or reference type (the one-byte forms, and (ref null? ht) with a heap type). */
  valueType(): void {
    const type = this.byte();
    if (type === 0x63 || type === 0x64) this.heapType();
  }

  heapType(): void {
    // Abstract heap types are one byte (negative s33); a concrete one is a type index (s33 LEB).
    const first = this.bytes[this.offset];
    if (first !== undefined && first >= 0x40 && first < 0x80) {
      this.byte();
      return;
    }
    this.leb();
  }

  limits(): void {
    const flags = this.byte();
    this.leb();
    if ((flags & 0x01) !== 0) this.leb();
  }

  tableType(): void {
    this.valueType();
    this.limits();
  }

  /** A constant expression, up to and including its `end`. */
  constExpr(): void {
    for (;;) {
      const op = this.byte();
      switch (op) {
        case 0x0b:
          return;
        case 0x41: // i32.const
        case 0x42: // i64.const (signed LEB: skipping bytes is enough)
          this.leb();
          break;
        case 0x43:
          this.skip(4);
          break;
        case 0x44:
          this.skip(8);
          break;
        case 0x23: // global.get
        case 0xd2: // ref.func
          this.leb();
          break;
        case 0xd0: // ref.null
          this.heapType();
          break;
        case 0x6a: case 0x6b: case 0x6c: case 0x7c: case 0x7d: case 0x7e: // extended-const arithmetic
          break;
        case 0xfd: // v128.const
          this.leb();
          this.skip(16);
          break;
        default:
          throw new Error(`unsupported opcode 0x${op.toString(16)} in a constant expression`);
      }
    }
  }
}


/** A section of a core module: its id and where it and its content start and end. */
export interface Section {
  id: number;
  start: number;
  contentStart: number;
  end: number;
}

/** The sections of a core module, in order (reads only their headers). */
export function moduleSections(bytes: Uint8Array): Section[] {
  const reader = new ModuleReader(bytes, 8);
  const found: Section[] = [];
  while (reader.offset < bytes.length) {
    const start = reader.offset;
    const id = reader.byte();
    const size = reader.leb();
    const contentStart = reader.offset;
    reader.skip(size);
    found.push({ id, start, contentStart, end: reader.offset });
  }
  return found;
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
