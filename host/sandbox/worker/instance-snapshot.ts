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
 *   snapshot exports, glue without the digest).
 * Calls that trapped, exited, overflowed, went over an output limit or were
 * killed never get here: their instance is poisoned or their worker is gone.
 */
import { GLUE_STATE } from '../glue-patch.js';
import { SNAPSHOT_EXPORT_PREFIX } from '../snapshot-exports.js';

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

interface SavedMemory {
  memory: WebAssembly.Memory;
  bytes: Uint8Array;
}

interface SavedGlobal {
  global: WasmGlobal;
  value: unknown;
}

interface SavedTable {
  table: WasmTable;
  entries: unknown[];
}

/** Why an instance cannot be reset, or undefined when it can. */
export type RestoreRefusal = 'no-snapshot' | 'memory-grew' | 'table-changed' | 'glue-state-changed';

export class InstanceSnapshot {
  readonly #memories: SavedMemory[];
  readonly #globals: SavedGlobal[];
  readonly #tables: SavedTable[];
  readonly #glueState: () => string;
  readonly #glueDigest: string;

  private constructor(memories: SavedMemory[], globals: SavedGlobal[], tables: SavedTable[], glueState: () => string) {
    this.#memories = memories;
    this.#globals = globals;
    this.#tables = tables;
    this.#glueState = glueState;
    this.#glueDigest = glueState();
  }

  /**
   * Record the instance now. `coreExports` are the exports of every core
   * instance the glue made; `componentExports` is what the glue returned.
   * Undefined when the instance cannot be snapshotted safely.
   */
  static take(coreExports: readonly WebAssembly.Exports[], componentExports: Record<string, unknown>): InstanceSnapshot | undefined {
    const glueState = (componentExports as Record<symbol, unknown>)[GLUE_STATE];
    if (typeof glueState !== 'function') return undefined;
    const memories = new Set<WebAssembly.Memory>();
    const globals = new Set<WasmGlobal>();
    const tables = new Set<WasmTable>();
    for (const exports of coreExports) {
      let marked = false;
      for (const [name, value] of Object.entries(exports)) {
        if (!name.startsWith(SNAPSHOT_EXPORT_PREFIX)) continue;
        marked = true;
        if (value instanceof WebAssembly.Memory) memories.add(value);
        else if (value instanceof WasmGlobalClass) globals.add(value);
        else if (value instanceof WasmTableClass) tables.add(value);
      }
      // A core instance with state but no snapshot exports was not rewritten: its state is out of reach.
      const hasState = Object.values(exports).some((value) => value instanceof WebAssembly.Memory || value instanceof WasmTableClass || value instanceof WasmGlobalClass);
      if (hasState && !marked) return undefined;
    }
    return new InstanceSnapshot(
      [...memories].map((memory) => ({ memory, bytes: new Uint8Array(memory.buffer).slice() })),
      [...globals].map((global) => ({ global, value: global.value })),
      [...tables].map((table) => ({ table, entries: Array.from({ length: table.length }, (_, i) => table.get(i)) })),
      glueState as () => string,
    );
  }

  /** Bytes of memory the snapshot holds (a copy of every linear memory). */
  get bytes(): number {
    return this.#memories.reduce((sum, saved) => sum + saved.bytes.byteLength, 0);
  }

  /** Whether the instance can be put back as it was (checks only; changes nothing). */
  check(): RestoreRefusal | undefined {
    for (const saved of this.#memories) if (saved.memory.buffer.byteLength !== saved.bytes.byteLength) return 'memory-grew';
    for (const saved of this.#tables) if (saved.table.length !== saved.entries.length) return 'table-changed';
    if (this.#glueState() !== this.#glueDigest) return 'glue-state-changed';
    return undefined;
  }

  /** Put the instance back as it was; returns why it could not (and then changes nothing). */
  restore(): RestoreRefusal | undefined {
    const refusal = this.check();
    if (refusal !== undefined) return refusal;
    for (const saved of this.#memories) new Uint8Array(saved.memory.buffer).set(saved.bytes);
    for (const saved of this.#globals) saved.global.value = saved.value;
    for (const saved of this.#tables) {
      const { table, entries } = saved;
      for (let i = 0; i < entries.length; i += 1) if (table.get(i) !== entries[i]) table.set(i, entries[i]);
    }
    return undefined;
  }
}
