/**
 * Whether a core module's code may write a table: a walk of its code section,
 * instruction by instruction, with every immediate read at its real length,
 * looking for `table.set`, `table.fill`, `table.copy`, `table.init` and
 * `table.grow`. The instance-state model (./instance-state-model.ts) uses it:
 * the tables of an instance whose modules cannot write one need no
 * entry-by-entry comparison after a call (a componentize-js guest's 7,700
 * entries were two thirds of its reset).
 *
 * Guarantees: it answers `none` only when it read every function body whole,
 * each ending exactly at its declared size with its final `end` at depth 0,
 * and met no table write. Everything it does not know (an opcode or prefix
 * outside the list below, the GC proposal's 0xFB prefix, a malformed body, a
 * body that ends early or late) is `unreadable`, which callers treat as
 * `writes`. So a wrong answer needs an opcode this file reads with the wrong
 * immediates and that V8 accepts: the list is the WebAssembly 2.0 instruction
 * set plus the proposals Node 20's V8 ships or may ship (legacy and exnref
 * exception handling, tail calls, typed function references' calls and
 * branches, relaxed SIMD, extended constants, multiple memories' memory
 * indices), each with its binary encoding from its specification.
 * Does not: validate the module (V8 does); look at tables written by JS (the
 * glue never writes one after instantiation) or by instantiation itself
 * (active element segments run before any snapshot).
 */

/** What the walk found. */
export type TableWrites = 'none' | 'writes' | 'unreadable';

/** Thrown inside the walk for anything it does not know; caught at the top. */
class Unreadable extends Error {}

const OP = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  try: 0x06,
  end: 0x0b,
  delegate: 0x18,
  tryTable: 0x1f,
  tableSet: 0x26,
  prefixGc: 0xfb,
  prefixMisc: 0xfc,
  prefixSimd: 0xfd,
  prefixAtomic: 0xfe,
} as const;

/**
 * Walk `bytes[code.start, code.end)`, the content of a code section (see the
 * file comment for what each answer means).
 */
export function scanTableWrites(bytes: Uint8Array, code: { start: number; end: number }): TableWrites {
  try {
    return new CodeWalk(bytes, code.start, code.end).run() ? 'writes' : 'none';
  } catch {
    return 'unreadable';
  }
}

class CodeWalk {
  #p: number;
  constructor(
    private readonly bytes: Uint8Array,
    start: number,
    private readonly end: number,
  ) {
    this.#p = start;
  }

  /** Whether some body writes a table. */
  run(): boolean {
    const count = this.#u32();
    let writes = false;
    for (let i = 0; i < count; i += 1) {
      const size = this.#u32();
      const bodyEnd = this.#p + size;
      if (bodyEnd > this.end) throw new Unreadable('a body runs past its section');
      if (this.#body(bodyEnd)) writes = true;
      if (this.#p !== bodyEnd) throw new Unreadable('a body ends before its size');
    }
    if (this.#p !== this.end) throw new Unreadable('bytes after the last body');
    return writes;
  }

  #byte(): number {
    if (this.#p >= this.end) throw new Unreadable('unexpected end of the code section');
    return this.bytes[this.#p++]!;
  }

  /** An unsigned LEB128 of at most 32 bits. */
  #u32(): number {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.#byte();
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
    }
    throw new Unreadable('malformed LEB128');
  }

  /** Any LEB128 (signed or unsigned, up to 64 bits): only its length matters. */
  #skipLeb(maxBytes = 10): void {
    for (let i = 0; i < maxBytes; i += 1) if ((this.#byte() & 0x80) === 0) return;
    throw new Unreadable('malformed LEB128');
  }

  #skip(count: number): void {
    if (this.#p + count > this.end) throw new Unreadable('unexpected end of the code section');
    this.#p += count;
  }

  /** A heap type: an abstract one (one byte, a negative s33) or a type index (s33). */
  #heapType(): void {
    this.#skipLeb(5);
  }

  /** A value type: a one-byte type, or (ref null? ht) with its heap type. */
  #valueType(): void {
    const type = this.#byte();
    if (type === 0x63 || type === 0x64) this.#heapType();
    else if (type < 0x40 || type > 0x7f) throw new Unreadable(`value type 0x${type.toString(16)}`);
  }

  /** A block type: empty (0x40), a value type, or a type index (s33). */
  #blockType(): void {
    const first = this.bytes[this.#p];
    if (first === 0x63 || first === 0x64) {
      this.#p += 1;
      this.#heapType();
    } else this.#skipLeb(5);
  }

  /** A memarg: alignment (bit 6: a memory index follows), then the offset (up to 64 bits). */
  #memarg(): void {
    const align = this.#u32();
    if ((align & 0x40) !== 0) this.#u32();
    this.#skipLeb(10);
  }

  /** One function body up to `bodyEnd`: its locals, then its instructions; whether it writes a table. */
  #body(bodyEnd: number): boolean {
    const groups = this.#u32();
    for (let i = 0; i < groups; i += 1) {
      this.#u32();
      this.#valueType();
    }
    let writes = false;
    let depth = 0;
    while (this.#p < bodyEnd) {
      const op = this.#byte();
      switch (op) {
        case OP.block:
        case OP.loop:
        case OP.if:
        case OP.try:
          this.#blockType();
          depth += 1;
          break;
        case OP.tryTable: {
          this.#blockType();
          const catches = this.#u32();
          for (let i = 0; i < catches; i += 1) {
            const kind = this.#byte();
            if (kind > 3) throw new Unreadable(`try_table catch kind ${kind}`);
            if (kind < 2) this.#u32();
            this.#u32();
          }
          depth += 1;
          break;
        }
        case OP.end:
          if (depth === 0) {
            // The body's own end: it must be its last byte.
            if (this.#p !== bodyEnd) throw new Unreadable('a body ends before its size');
            return writes;
          }
          depth -= 1;
          break;
        case OP.delegate:
          // Ends its try like `end` does.
          this.#u32();
          if (depth === 0) throw new Unreadable('delegate outside a try');
          depth -= 1;
          break;
        case OP.tableSet:
          this.#u32();
          writes = true;
          break;
        case OP.prefixMisc:
          if (this.#misc()) writes = true;
          break;
        case OP.prefixSimd:
          this.#simd();
          break;
        case OP.prefixAtomic:
          this.#atomic();
          break;
        default:
          this.#plain(op);
      }
    }
    throw new Unreadable('a body without its end');
  }

  /** Opcodes without a prefix, other than the ones `#body` handles. */
  #plain(op: number): void {
    switch (op) {
      // No immediates: unreachable, nop, else, throw_ref, return, catch_all, drop, select,
      // ref.is_null, ref.eq, ref.as_non_null, and the numeric instructions 0x45-0xC4.
      case 0x00: case 0x01: case 0x05: case 0x0a: case 0x0f: case 0x19: case 0x1a: case 0x1b:
      case 0xd1: case 0xd3: case 0xd4:
        return;
      // One index: catch (tag), throw (tag), rethrow (label), br, br_if, call, return_call, call_ref,
      // return_call_ref, local.get/set/tee, global.get/set, table.get, ref.func, br_on_null, br_on_non_null.
      case 0x07: case 0x08: case 0x09: case 0x0c: case 0x0d: case 0x10: case 0x12: case 0x14: case 0x15:
      case 0x20: case 0x21: case 0x22: case 0x23: case 0x24: case 0x25: case 0xd2: case 0xd5: case 0xd6:
        this.#u32();
        return;
      case 0x0e: {
        // br_table: the labels, then the default.
        const labels = this.#u32();
        for (let i = 0; i <= labels; i += 1) this.#u32();
        return;
      }
      case 0x11:
      case 0x13:
        // call_indirect, return_call_indirect: a type index, a table index.
        this.#u32();
        this.#u32();
        return;
      case 0x1c: {
        // select with its types.
        const types = this.#u32();
        for (let i = 0; i < types; i += 1) this.#valueType();
        return;
      }
      case 0x3f:
      case 0x40:
        // memory.size, memory.grow: a memory index.
        this.#u32();
        return;
      case 0x41:
        this.#skipLeb(5);
        return;
      case 0x42:
        this.#skipLeb(10);
        return;
      case 0x43:
        this.#skip(4);
        return;
      case 0x44:
        this.#skip(8);
        return;
      case 0xd0:
        this.#heapType();
        return;
      default:
        // Loads and stores.
        if (op >= 0x28 && op <= 0x3e) {
          this.#memarg();
          return;
        }
        if (op >= 0x45 && op <= 0xc4) return;
        throw new Unreadable(`opcode 0x${op.toString(16)}`);
    }
  }

  /** After 0xFC: whether it writes a table (table.init, table.copy, table.grow, table.fill). */
  #misc(): boolean {
    const sub = this.#u32();
    if (sub <= 7) return false; // saturating truncations
    switch (sub) {
      case 8: // memory.init: data index, memory index
      case 10: // memory.copy: two memory indices
        this.#u32();
        this.#u32();
        return false;
      case 9: // data.drop
      case 11: // memory.fill
      case 13: // elem.drop
      case 16: // table.size
        this.#u32();
        return false;
      case 12: // table.init: element index, table index
      case 14: // table.copy: two table indices
        this.#u32();
        this.#u32();
        return true;
      case 15: // table.grow
      case 17: // table.fill
        this.#u32();
        return true;
      default:
        throw new Unreadable(`0xfc ${sub}`);
    }
  }

  /** After 0xFD (SIMD and relaxed SIMD). */
  #simd(): void {
    const sub = this.#u32();
    if (sub <= 11 || sub === 92 || sub === 93) this.#memarg(); // loads, store, load_zero
    else if (sub === 12 || sub === 13) this.#skip(16); // v128.const, i8x16.shuffle
    else if (sub >= 21 && sub <= 34) this.#skip(1); // extract and replace lane
    else if (sub >= 84 && sub <= 91) {
      this.#memarg(); // load and store lane
      this.#skip(1);
    } else if (sub > 0x113) throw new Unreadable(`0xfd ${sub}`);
  }

  /** After 0xFE (threads). */
  #atomic(): void {
    const sub = this.#u32();
    if (sub === 3) this.#skip(1); // atomic.fence
    else if (sub <= 2 || (sub >= 0x10 && sub <= 0x4e)) this.#memarg();
    else throw new Unreadable(`0xfe ${sub}`);
  }
}
