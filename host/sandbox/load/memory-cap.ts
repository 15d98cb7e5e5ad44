/**
 * Capping a core module's linear memories and tables by rewriting the maxima
 * its memory and table sections declare. Worker `resourceLimits` cover
 * neither WebAssembly memory nor tables (a table grown in a loop exhausts the
 * worker's heap inside V8 and aborts the whole process), so the caps live in
 * the module itself: a `memory.grow` or `table.grow` past them returns -1
 * inside the guest, whatever the guest does.
 *
 * Only defined memories and tables are rewritten; modules that import one
 * accept any smaller maximum, so jco's split modules still link.
 *
 * The memory cap is the component's, not each module's: `planMemoryCaps`
 * splits it over every memory the component's core instances define (a
 * module instantiated 16 times defines 16 memories), so the sum of their
 * maxima is within the cap.
 */

import { WasmReader, concatBytes, encodeLeb } from './wasm-binary.js';

const WASM_PAGE = 64 * 1024;
const TABLE_SECTION = 4;
const MEMORY_SECTION = 5;
/** Elements a component's tables may hold in all unless the host says otherwise (V8's own ceiling is 10 000 000 per table). */
export const DEFAULT_TABLE_ELEMENTS = 100_000;
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
  /** The largest initial size among its tables, in elements. */
  initialTableElements: number;
}

/** The limits (initial size and declared maximum) of each memory or table a module defines. */
function definedLimits(bytes: Uint8Array, section: typeof MEMORY_SECTION | typeof TABLE_SECTION): Array<{ min: number; max: number | undefined }> {
  const found: Array<{ min: number; max: number | undefined }> = [];
  const reader = new WasmReader(bytes, 8);
  while (reader.offset < bytes.length) {
    const id = reader.byte();
    const size = reader.leb();
    const end = reader.offset + size;
    if (id === section) {
      const count = reader.leb();
      for (let i = 0; i < count; i += 1) {
        if (section === TABLE_SECTION) reader.byte(); // a table's element type comes before its limits
        const flags = reader.byte();
        const min = reader.leb();
        found.push({ min, max: (flags & 0x01) !== 0 ? reader.leb() : undefined });
      }
    }
    reader.offset = end;
  }
  return found;
}

/** The memories a module defines: their initial sizes and declared maxima, in pages. */
export function definedMemories(bytes: Uint8Array): Array<{ min: number; max: number | undefined }> {
  return definedLimits(bytes, MEMORY_SECTION);
}

/** The tables a module defines: their initial sizes and declared maxima, in elements. */
export function definedTables(bytes: Uint8Array): Array<{ min: number; max: number | undefined }> {
  return definedLimits(bytes, TABLE_SECTION);
}

/**
 * Bytes of worker heap one table element may cost while a table grows (V8
 * keeps tables on the JS heap; growing copies them). A table that grows past
 * the worker's heap limit aborts the whole process (a V8 fatal error, not a
 * worker exit), so the elements of all of a component's tables are bounded
 * by a quarter of the heap.
 */
const TABLE_ELEMENT_HEAP_BYTES = 24;

/** The most table elements a component may hold in all, for a worker heap of `maxHeapMb`. */
export function tableElementsForHeap(maxHeapMb: number): number {
  return Math.floor((maxHeapMb * 1024 * 1024) / 4 / TABLE_ELEMENT_HEAP_BYTES);
}

/**
 * Split a component's memory cap over the memories its core instances
 * define: `modules` lists each core module with its defined memories and how
 * many times the component instantiates it. A memory whose declared maximum
 * is below a fair share keeps it; the others share the rest equally. Returns
 * the cap (pages) to write into each module's memories, by module name.
 */
export function planMemoryCaps(modules: Array<{ name: string; memories: Array<{ min: number; max: number | undefined }>; instances: number }>, capPages: number, unbounded = MAX_PAGES_32): Map<string, number> {
  type Slot = { name: string; max: number; weight: number };
  const slots: Slot[] = [];
  for (const module of modules) {
    for (const memory of module.memories) slots.push({ name: module.name, max: Math.min(memory.max ?? unbounded, unbounded), weight: Math.max(1, module.instances) });
  }
  const caps = new Map<string, number>();
  let remaining = capPages;
  let open = slots.slice().sort((a, b) => a.max - b.max);
  // Water-filling: settle the slots whose own maximum is below the fair share first.
  while (open.length > 0) {
    const weight = open.reduce((sum, slot) => sum + slot.weight, 0);
    const share = Math.floor(remaining / weight);
    const small = open.filter((slot) => slot.max <= share);
    if (small.length === 0) {
      for (const slot of open) caps.set(slot.name, Math.max(caps.get(slot.name) ?? 0, share));
      break;
    }
    for (const slot of small) {
      caps.set(slot.name, Math.max(caps.get(slot.name) ?? 0, slot.max));
      remaining -= slot.max * slot.weight;
    }
    open = open.filter((slot) => slot.max > share);
  }
  return caps;
}

/**
 * How many times jco's glue instantiates each core module (by file name):
 * the glue names each module once (`const moduleN = getCoreModule('file')`)
 * and instantiates it with `instantiateCore(moduleN, ...)` once per core
 * instance of the component (nested components are flattened by then).
 */
export function coreInstantiations(glue: string): Map<string, number> {
  const files = new Map<string, string>();
  for (const match of glue.matchAll(/\bconst (\w+) = getCoreModule\('([^']+)'\)/g)) files.set(match[1]!, match[2]!);
  const counts = new Map<string, number>();
  for (const match of glue.matchAll(/\binstantiateCore\((\w+)/g)) {
    const file = files.get(match[1]!);
    if (file !== undefined) counts.set(file, (counts.get(file) ?? 0) + 1);
  }
  return counts;
}



/**
 * Rewrite every memory the module defines to a maximum of at most
 * `maxPages`, and every table to at most `maxTableElements` elements.
 */
export function capModuleMemory(bytes: Uint8Array, maxPages: number, maxTableElements = DEFAULT_TABLE_ELEMENTS): CappedModule {
  const reader = new WasmReader(bytes, 8);
  const chunks: Uint8Array[] = [bytes.subarray(0, 8)];
  let definesMemory = false;
  let initialPages = 0;
  let initialTableElements = 0;
  while (reader.offset < bytes.length) {
    const sectionStart = reader.offset;
    const id = reader.byte();
    const size = reader.leb();
    const contentStart = reader.offset;
    const contentEnd = contentStart + size;
    if (id === TABLE_SECTION) {
      const count = reader.leb();
      const content: number[] = [...encodeLeb(count)];
      for (let i = 0; i < count; i += 1) {
        const refType = reader.byte();
        // 0x40: a table with an initializer expression (function references), not supported by this host's engine.
        if (refType !== 0x70 && refType !== 0x6f) throw new Error(`unsupported table type 0x${refType.toString(16)}`);
        const flags = reader.byte();
        if ((flags & ~0x01) !== 0) throw new Error(`unsupported table limits 0x${flags.toString(16)}`);
        const min = reader.leb();
        const max = (flags & 0x01) !== 0 ? reader.leb() : undefined;
        initialTableElements = Math.max(initialTableElements, min);
        const limit = Math.max(min, Math.min(max ?? Number.MAX_SAFE_INTEGER, maxTableElements));
        content.push(refType, 0x01, ...encodeLeb(min), ...encodeLeb(limit));
      }
      if (reader.offset !== contentEnd) throw new Error('malformed table section');
      chunks.push(Uint8Array.from([id, ...encodeLeb(content.length), ...content]));
      continue;
    }
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
      // Shared (0x02) or 64-bit (0x04) memories: refused rather than capped wrongly.
      if ((flags & ~0x01) !== 0) throw new Error(`unsupported memory limits 0x${flags.toString(16)}`);
      const min = reader.leb();
      const max = (flags & 0x01) !== 0 ? reader.leb() : undefined;
      initialPages = Math.max(initialPages, min);
      const limit = Math.max(min, Math.min(max ?? Number.MAX_SAFE_INTEGER, maxPages));
      content.push(flags | 0x01, ...encodeLeb(min), ...encodeLeb(limit));
    }
    if (reader.offset !== contentEnd) throw new Error('malformed memory section');
    chunks.push(Uint8Array.from([id, ...encodeLeb(content.length), ...content]));
  }
  return { bytes: concatBytes(chunks), definesMemory, initialPages, initialTableElements };
}
