/**
 * Snapshot-and-restore of one component instance: what its core instances
 * hold (every memory, mutable global and table, made reachable by
 * ../snapshot-exports.ts) and a digest of the glue's JS state (../glue-patch.ts),
 * recorded before the instance serves any call; after a call, everything is
 * put back, so the next call sees what a new instance would, for the price of
 * a memcpy instead of an instantiation.
 *
 * A restore refuses (and the instance is replaced) whenever it could not make
 * the instance what it was:
 * - a memory grew (memory never shrinks) or a table changed size;
 * - the glue's state differs: a resource was created (even if dropped), a
 *   borrow or task was left behind, the component is marked trapped;
 * - the snapshot could not see everything (a core instance without the
 *   snapshot exports, glue without the digest);
 * - a core module was marked unresettable at load (../instance-state-model.ts:
 *   it may drop a passive data or element segment, a flag JS cannot put back):
 *   no snapshot is taken, so every call gets a new instance.
 * A table's entries are compared and put back only when some core module of
 * the component may write a table from its code; when every module holding a
 * table is marked as never writing one (`SNAPSHOT_TABLES_UNWRITTEN`, decided
 * by ../load/instance-state-model.ts), only its size is checked.
 * One exception to the second rule: handles made to host objects that hold
 * nothing of a call (the stdout and stderr streams a guest's first write asks
 * for: `resettable`) are dropped by putting the glue's resource tables back
 * as they were (`GlueResources`), together with the memory that names them;
 * the glue's digest must then be what it was. Any other resource refuses.
 * Calls that trapped, exited, overflowed, went over an output limit or were
 * killed never get here: their instance is poisoned or their worker is gone.
 */
import { GLUE_RESOURCES, GLUE_STATE, type GlueResources, type GlueStateDigest } from '../load/glue-patch.js';
import { SNAPSHOT_EXPORT_PREFIX, SNAPSHOT_REFUSE_PREFIX, SNAPSHOT_TABLES_UNWRITTEN } from '../load/snapshot-exports.js';

/** The parts of WasmGlobal and WasmTable used here (Node's typings do not declare them). */
interface WasmGlobal {
  value: unknown;
}
interface WasmTable {
  readonly length: number;
  get(index: number): unknown;
  set(index: number, value: unknown): void;
}
const { Global: WasmGlobalClass, Table: WasmTableClass } = WebAssembly as unknown as {
  Global: abstract new (...args: never[]) => WasmGlobal;
  Table: abstract new (...args: never[]) => WasmTable;
};

/** A memory and its bytes when the snapshot was taken (only its non-zero pages are held). */
export interface SavedMemory {
  memory: WebAssembly.Memory;
  /** The memory's size then. */
  byteLength: number;
  /** Bytes the snapshot holds: its non-zero runs, copied into one buffer. */
  held: number;
  /** A view of the memory as it is, kept while the memory keeps its buffer (a grow replaces it; such a reset refuses anyway). */
  live?: Buffer;
  /** The snapshot as runs of zero and non-zero pages (see `saveMemory`). */
  runs: readonly MemoryRun[];
}

/**
 * A stretch of a memory's snapshot, in whole pages: `source` holds its
 * bytes, or it is undefined for a stretch that was all zeros then.
 */
export interface MemoryRun {
  start: number;
  end: number;
  source: Buffer | undefined;
}

/** Memories larger than this are put back chunk by chunk, writing only the chunks a call changed. */
const COMPARE_ABOVE_BYTES = 1024 * 1024;
const CHUNK_BYTES = 16 * 1024;
/** Zeros to compare a large memory's zero runs with (small enough to stay in the L1 cache). */
const ZERO_CHUNK = Buffer.alloc(CHUNK_BYTES);
/** The granularity of a snapshot's runs (a wasm page is 16 of them). */
const RUN_BYTES = 4 * 1024;

/**
 * Record a memory as it is now, split into runs of zero and non-zero pages
 * (once: a reset reuses them). Snapshots are mostly zeros: a C guest's
 * 128 KiB is ~94 % zero pages (an empty stack and heap), a componentize-js
 * guest's 9.5 MB ~67 %. Only the non-zero runs are copied (into one buffer):
 * a componentize-js snapshot held 9.5 MB, zeros included, and now ~3 MB
 * (issue 28: memory follows use). A reset never reads the zero pages: a small
 * memory's are written with a memset (which reads nothing), a large one's are
 * compared with a chunk of zeros that stays in the cache.
 */
export function saveMemory(memory: WebAssembly.Memory): SavedMemory {
  const view = Buffer.from(memory.buffer);
  const spans: Array<{ start: number; end: number; zero: boolean }> = [];
  for (let start = 0; start < view.byteLength; start += RUN_BYTES) {
    const end = Math.min(view.byteLength, start + RUN_BYTES);
    const zero = ZERO_CHUNK.compare(view, start, end, 0, end - start) === 0;
    const last = spans.at(-1);
    if (last !== undefined && last.zero === zero) last.end = end;
    else spans.push({ start, end, zero });
  }
  const held = spans.reduce((sum, span) => sum + (span.zero ? 0 : span.end - span.start), 0);
  const copy = Buffer.allocUnsafeSlow(held);
  let offset = 0;
  const runs: MemoryRun[] = spans.map(({ start, end, zero }) => {
    if (zero) return { start, end, source: undefined };
    const source = copy.subarray(offset, offset + (end - start));
    view.copy(source, 0, start, end);
    offset += end - start;
    return { start, end, source };
  });
  return { memory, byteLength: view.byteLength, held, runs };
}

/** The memory as the snapshot holds it, whole (zeros included): for tests and checks. */
export function savedImage(saved: SavedMemory): Buffer {
  const image = Buffer.alloc(saved.byteLength);
  for (const run of saved.runs) if (run.source !== undefined) image.set(run.source, run.start);
  return image;
}

/**
 * Put a memory back as it was, run by run (see `saveMemory`). A small one
 * (C guests: 128 KiB) is written whole: writing it is cheaper than comparing
 * it (the workers' memmove was ~19 % of their CPU at 8 C echo calls in
 * flight when the reset copied all 128 KiB; with zero runs set, ~2 %). A
 * large one is compared chunk by chunk (memcmp) and only the chunks that
 * differ are written: a call of a componentize-js guest changes a small part
 * of its 9.5 MB, and writing the whole of it cost more than reading it
 * twice; its zero runs are read once, not twice (~1.0 ms a reset before).
 */
export function restoreMemory(saved: SavedMemory): void {
  const { runs } = saved;
  const buffer = saved.memory.buffer;
  let live = saved.live;
  if (live?.buffer !== buffer) live = saved.live = Buffer.from(buffer);
  const compare = saved.byteLength > COMPARE_ABOVE_BYTES;
  for (let i = 0; i < runs.length; i += 1) {
    const { start, end, source } = runs[i]!;
    if (!compare) {
      if (source === undefined) live.fill(0, start, end);
      else live.set(source, start);
      continue;
    }
    for (let chunk = start; chunk < end; chunk += CHUNK_BYTES) {
      const chunkEnd = Math.min(end, chunk + CHUNK_BYTES);
      if (source === undefined) {
        if (ZERO_CHUNK.compare(live, chunk, chunkEnd, 0, chunkEnd - chunk) !== 0) live.fill(0, chunk, chunkEnd);
      } else if (source.compare(live, chunk, chunkEnd, chunk - start, chunkEnd - start) !== 0) {
        source.copy(live, chunk, chunk - start, chunkEnd - start);
      }
    }
  }
}

interface SavedGlobal {
  global: WasmGlobal;
  value: unknown;
}

interface SavedTable {
  table: WasmTable;
  length: number;
  /** Its entries then; undefined when no module can write a table (the entries need no comparison). */
  entries: unknown[] | undefined;
}

/** One of the glue's resource tables as it was: its handle array, the reps it had created, its capture table. */
interface SavedResourceTable {
  handles: unknown[];
  created: unknown[] | undefined;
  captures: Array<[unknown, unknown]> | undefined;
}

interface SavedResources {
  glue: GlueResources;
  tables: SavedResourceTable[];
  counters: Array<number | undefined>;
}

/** What a reset may leave behind of a call besides memory, globals and tables (the stdio streams, see capabilities.ts). */
export interface ResettableHost {
  /** Host objects whose handles a reset may drop. */
  resettable: ReadonlySet<unknown>;
  /** Put those objects back as a new instance has them; false when impossible. */
  resetStreams(): boolean;
}

/** Why an instance cannot be reset, or undefined when it can. */
export type RestoreRefusal = 'no-snapshot' | 'memory-grew' | 'table-changed' | 'glue-state-changed';

export class InstanceSnapshot {
  readonly #memories: SavedMemory[];
  readonly #globals: SavedGlobal[];
  readonly #tables: SavedTable[];
  readonly #glueState: () => GlueStateDigest;
  readonly #glueDigest: GlueStateDigest;
  readonly #resources: SavedResources | undefined;
  readonly #host: ResettableHost | undefined;

  private constructor(memories: SavedMemory[], globals: SavedGlobal[], tables: SavedTable[], glueState: () => GlueStateDigest, resources: SavedResources | undefined, host: ResettableHost | undefined) {
    this.#memories = memories;
    this.#globals = globals;
    this.#tables = tables;
    this.#glueState = glueState;
    this.#glueDigest = glueState();
    this.#resources = resources;
    this.#host = host;
  }

  /**
   * Record the instance now. `coreExports` are the exports of every core
   * instance the glue made; `componentExports` is what the glue returned.
   * Undefined when the instance cannot be snapshotted safely.
   */
  static take(coreExports: readonly WebAssembly.Exports[], componentExports: Record<string, unknown>, host?: ResettableHost): InstanceSnapshot | undefined {
    const glueState = (componentExports as Record<symbol, unknown>)[GLUE_STATE];
    const glueResources = (componentExports as Record<symbol, unknown>)[GLUE_RESOURCES] as GlueResources | undefined;
    if (typeof glueState !== 'function') return undefined;
    const memories = new Set<WebAssembly.Memory>();
    const globals = new Set<WasmGlobal>();
    const tables = new Set<WasmTable>();
    // Whether some core module holding a table may write one (see the file comment): then every table's entries are compared.
    let tablesWritable = false;
    for (const exports of coreExports) {
      let marked = false;
      let holdsTable = false;
      let unwritten = false;
      for (const [name, value] of Object.entries(exports)) {
        if (!name.startsWith(SNAPSHOT_EXPORT_PREFIX)) continue;
        if (name.startsWith(SNAPSHOT_REFUSE_PREFIX)) return undefined;
        marked = true;
        // Only the rewrite makes this name (a module exporting the prefix itself is refused at load: instance-state-model.ts).
        if (name === SNAPSHOT_TABLES_UNWRITTEN && value instanceof WasmTableClass) unwritten = true;
        if (value instanceof WebAssembly.Memory) memories.add(value);
        else if (value instanceof WasmGlobalClass) globals.add(value);
        else if (value instanceof WasmTableClass) {
          tables.add(value);
          holdsTable = true;
        }
      }
      if (holdsTable && !unwritten) tablesWritable = true;
      // A core instance with state but no snapshot exports was not rewritten: its state is out of reach.
      const hasState = Object.values(exports).some((value) => value instanceof WebAssembly.Memory || value instanceof WasmTableClass || value instanceof WasmGlobalClass);
      if (hasState && !marked) return undefined;
    }
    return new InstanceSnapshot(
      [...memories].map(saveMemory),
      [...globals].map((global) => ({ global, value: global.value })),
      [...tables].map((table) => ({ table, length: table.length, entries: tablesWritable ? Array.from({ length: table.length }, (_, i) => table.get(i)) : undefined })),
      glueState as () => GlueStateDigest,
      glueResources && host ? saveResources(glueResources) : undefined,
      host,
    );
  }

  /** Bytes of memory the snapshot holds (the non-zero pages of every linear memory). */
  get bytes(): number {
    return this.#memories.reduce((sum, saved) => sum + saved.held, 0);
  }

  /** Whether the instance can be put back as it was (checks only; changes nothing). */
  check(): RestoreRefusal | undefined {
    for (const saved of this.#memories) if (saved.memory.buffer.byteLength !== saved.byteLength) return 'memory-grew';
    for (const saved of this.#tables) if (saved.table.length !== saved.length) return 'table-changed';
    if (!sameItems(this.#glueState(), this.#glueDigest)) return 'glue-state-changed';
    return undefined;
  }

  /**
   * Put the instance back as it was; returns why it could not. A refused
   * restore may have put the glue's resource tables back already: the
   * instance must then be dropped (as every refused one is).
   */
  restore(): RestoreRefusal | undefined {
    let refusal = this.check();
    if (refusal === 'glue-state-changed' && this.#restoreResources()) refusal = this.check();
    if (refusal !== undefined) return refusal;
    if (this.#host && !this.#host.resetStreams()) return 'glue-state-changed';
    for (const saved of this.#memories) restoreMemory(saved);
    for (const saved of this.#globals) saved.global.value = saved.value;
    for (const saved of this.#tables) {
      const { table, entries } = saved;
      if (entries === undefined) continue;
      for (let i = 0; i < entries.length; i += 1) if (table.get(i) !== entries[i]) table.set(i, entries[i]);
    }
    return undefined;
  }

  /**
   * Put the glue's resource tables back as they were, when every host object
   * a call captured since the snapshot is resettable (and a table without a
   * capture table, the guest's own resources, did not change). Returns
   * whether it did; the caller checks the digest again either way.
   */
  #restoreResources(): boolean {
    const saved = this.#resources;
    const host = this.#host;
    if (!saved || !host) return false;
    const now = saved.glue.tables();
    if (now.length !== saved.tables.length) return false;
    for (let i = 0; i < now.length; i += 1) {
      const [handles, captures] = now[i]!;
      const before = saved.tables[i]!;
      if (sameItems(handles, before.handles) && (handles._createdReps?.size ?? 0) === (before.created?.length ?? 0)) continue;
      if (!captures || !before.captures) return false;
      const had = new Map(before.captures);
      for (const [rep, object] of captures) {
        if (had.get(rep) !== object && !host.resettable.has(object)) return false;
      }
    }
    for (let i = 0; i < now.length; i += 1) {
      const [handles, captures] = now[i]!;
      const before = saved.tables[i]!;
      handles.length = 0;
      handles.push(...before.handles);
      if (handles._createdReps && before.created) {
        handles._createdReps.clear();
        for (const rep of before.created) handles._createdReps.add(rep);
      }
      if (captures && before.captures) {
        captures.clear();
        for (const [rep, object] of before.captures) captures.set(rep, object);
      }
    }
    saved.glue.setCounters(saved.counters);
    return true;
  }
}

function saveResources(glue: GlueResources): SavedResources {
  return {
    glue,
    tables: glue.tables().map(([handles, captures]) => ({
      handles: [...handles],
      created: handles._createdReps ? [...handles._createdReps] : undefined,
      captures: captures ? [...captures] : undefined,
    })),
    counters: glue.counters(),
  };
}

function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}
