/**
 * Capping a core module's linear memory by rewriting the maximum its memory
 * section declares. Worker `resourceLimits` do not cover WebAssembly memory,
 * so the cap lives in the module itself: a `memory.grow` past it returns -1
 * inside the guest (or the guest's allocator traps), whatever the guest does.
 *
 * Only defined memories are rewritten; modules that import a memory accept
 * any smaller maximum, so jco's split modules still link.
 */

const WASM_PAGE = 64 * 1024;
const MEMORY_SECTION = 5;
const MAX_PAGES_32 = 65_536;

export function pagesForMb(mb: number): number {
  return Math.min(MAX_PAGES_32, Math.floor((mb * 1024 * 1024) / WASM_PAGE));
}

export interface CappedModule {
  bytes: Uint8Array;
  /** Whether the module defines a memory at all. */
  definesMemory: boolean;
  /** The largest initial size among its memories, in pages (a cap below it cannot be met). */
  initialPages: number;
}

class Reader {
  offset: number;
  constructor(readonly bytes: Uint8Array, offset: number) {
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
}

function encodeLeb(value: number): number[] {
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

/** Rewrite every memory the module defines to a maximum of at most `maxPages`. */
export function capModuleMemory(bytes: Uint8Array, maxPages: number): CappedModule {
  const reader = new Reader(bytes, 8);
  const chunks: Uint8Array[] = [bytes.subarray(0, 8)];
  let definesMemory = false;
  let initialPages = 0;
  while (reader.offset < bytes.length) {
    const sectionStart = reader.offset;
    const id = reader.byte();
    const size = reader.leb();
    const contentStart = reader.offset;
    const contentEnd = contentStart + size;
    if (id !== MEMORY_SECTION) {
      chunks.push(bytes.subarray(sectionStart, contentEnd));
      reader.offset = contentEnd;
      continue;
    }
    definesMemory = true;
    const count = reader.leb();
    const content: number[] = [...encodeLeb(count)];
    for (let i = 0; i < count; i += 1) {
      const flags = reader.byte();
      const min = reader.leb();
      const max = (flags & 0x01) !== 0 ? reader.leb() : undefined;
      initialPages = Math.max(initialPages, min);
      const limit = Math.max(min, Math.min(max ?? Number.MAX_SAFE_INTEGER, maxPages));
      content.push(flags | 0x01, ...encodeLeb(min), ...encodeLeb(limit));
    }
    if (reader.offset !== contentEnd) throw new Error('malformed memory section');
    chunks.push(Uint8Array.from([id, ...encodeLeb(content.length), ...content]));
  }
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return { bytes: out, definesMemory, initialPages };
}
