/**
 * The instance-state model: every kind of state a component instance holds
 * between calls, and how a reset (worker/instance-snapshot.ts) puts it back
 * or why it refuses, in which case the instance is dropped and the next call
 * gets a new one. This is the one place that decides whether a core module's
 * instances may be reset at all; docs/architecture.md has the same table.
 *
 * Per core instance (WebAssembly core spec, module instance and store):
 * - functions, tags, immutable globals: fixed at instantiation; nothing to do.
 * - mutable globals: exported by ../snapshot-exports.ts, value put back.
 * - memories: exported, bytes put back; a memory that grew refuses (memory
 *   never shrinks). Shared memories the same.
 * - tables: exported; a table whose size changed refuses. Its entries are
 *   compared and put back, unless no module of the component can write a
 *   table from its code (`tablesUnwritten` below, marked per module by
 *   ../snapshot-exports.ts): nothing else writes one after instantiation (the
 *   glue never does; active element segments run before the snapshot), so
 *   the entries are then what instantiation made. A componentize-js guest's
 *   7,700-entry table was two thirds of its reset (~0.8 of ~1.2 ms).
 * - passive data segments: each has a "dropped" flag (`data.drop`) that JS can
 *   neither read nor clear; once set, `memory.init` from it traps. A module
 *   that has a passive data segment and whose code may drop one is marked
 *   here, and its instances are never reset. (Active segments are dropped by
 *   instantiation itself, so a later `data.drop` of one changes nothing.)
 * - passive element segments: the same with `elem.drop` and `table.init`.
 *   Declarative and active ones are dropped at instantiation.
 * - GC objects (`struct`/`array` reached from globals or tables): Node 20's V8
 *   compiles no GC types, so a module holding them never loads.
 * Per component instance (jco's glue, ../glue-patch.ts):
 * - resource tables, borrows, tasks, the may-enter/may-leave and trapped
 *   flags: compared by the glue's state digest; any change refuses, except
 *   handles to host objects that hold nothing of a call (stdio streams), whose
 *   tables are put back with the memory that names them.
 * - the WASI capability objects: built per call, never carried over.
 * The markers themselves: the rewrite's exports are named under
 * `toolhost:snapshot:`, and a reset trusts what they say (a
 * `tables-unwritten` marker skips the table comparison). A module that
 * exports a name under that prefix itself could forge one, so it is never
 * reset (`exports-reserved-name`).
 *
 * What this does not guarantee: the segment scan is conservative, not exact. It
 * looks for the bytes of a `data.drop`/`elem.drop` instruction anywhere in the
 * code section, so immediates that happen to look like one also mark a module
 * (it is then replaced after every call: correct, only slower); it never
 * misses a real one, since every such instruction starts with its 0xFC prefix
 * byte followed by its sub-opcode as an unsigned LEB128 (padded forms too).
 * The table scan is exact instead (./table-writes.ts walks every instruction
 * with its immediates), since a write's opcode is one common byte; anything
 * it cannot read counts as a write.
 */
import { createHash } from 'node:crypto';
import { scanTableWrites } from './table-writes.js';
import { ModuleReader, moduleSections } from './wasm-binary.js';

/** The prefix of the snapshot rewrite's export names (../snapshot-exports.ts); no module may use it itself. */
export const SNAPSHOT_EXPORT_PREFIX = 'toolhost:snapshot:';

/** Why a module's instances may not be reset; each ends up in the marker export's name. */
export type ResetRefusal = 'drops-data-segment' | 'drops-element-segment' | 'exports-reserved-name' | 'unreadable';

/** The verdict on one core module. */
export type InstanceStateVerdict = { resettable: true } | { resettable: false; reason: ResetRefusal };

const SECTION = { import: 2, table: 4, memory: 5, export: 7, element: 9, code: 10, data: 11 } as const;
const IMPORT_KIND = { func: 0, table: 1, memory: 2, global: 3, tag: 4 } as const;
/** Sub-opcodes after the 0xFC prefix. */
const FC_PREFIX = 0xfc;
const DATA_DROP = 9;
const ELEM_DROP = 13;

interface ModuleShape {
  hasMemory: boolean;
  hasTable: boolean;
  passiveData: boolean;
  passiveElements: boolean;
  /** Whether the module exports a name under SNAPSHOT_EXPORT_PREFIX itself. */
  reservedExport: boolean;
  code: { start: number; end: number } | undefined;
}

function readShape(bytes: Uint8Array): ModuleShape {
  const shape: ModuleShape = { hasMemory: false, hasTable: false, passiveData: false, passiveElements: false, reservedExport: false, code: undefined };
  for (const section of moduleSections(bytes)) {
    const reader = new ModuleReader(bytes, section.contentStart);
    switch (section.id) {
      case SECTION.import: {
        const count = reader.leb();
        for (let i = 0; i < count; i += 1) {
          reader.name();
          reader.name();
          const kind = reader.byte();
          if (kind === IMPORT_KIND.func) reader.leb();
          else if (kind === IMPORT_KIND.table) {
            reader.tableType();
            shape.hasTable = true;
          } else if (kind === IMPORT_KIND.memory) {
            reader.limits();
            shape.hasMemory = true;
          } else if (kind === IMPORT_KIND.global) {
            reader.valueType();
            reader.byte();
          } else if (kind === IMPORT_KIND.tag) {
            reader.byte();
            reader.leb();
          } else throw new Error(`unknown import kind ${kind}`);
        }
        break;
      }
      case SECTION.table:
        if (reader.leb() > 0) shape.hasTable = true;
        break;
      case SECTION.memory:
        if (reader.leb() > 0) shape.hasMemory = true;
        break;
      case SECTION.export: {
        const count = reader.leb();
        for (let i = 0; i < count; i += 1) {
          if (reader.name().startsWith(SNAPSHOT_EXPORT_PREFIX)) shape.reservedExport = true;
          reader.byte();
          reader.leb();
        }
        break;
      }
      case SECTION.code:
        shape.code = { start: section.contentStart, end: section.end };
        break;
      case SECTION.data:
        shape.passiveData = hasPassiveDataSegment(reader);
        break;
      case SECTION.element:
        shape.passiveElements = hasPassiveElementSegment(reader);
        break;
      default:
        break;
    }
  }
  return shape;
}

/** Data segment flags: 0 active (memory 0), 1 passive, 2 active with a memory index. */
function hasPassiveDataSegment(reader: ModuleReader): boolean {
  const count = reader.leb();
  for (let i = 0; i < count; i += 1) {
    const flags = reader.leb();
    if (flags === 1) return true;
    if (flags === 2) reader.leb();
    else if (flags !== 0) throw new Error(`unknown data segment flags ${flags}`);
    reader.constExpr();
    reader.skip(reader.leb());
  }
  return false;
}

/**
 * Element segment flags (bit 0: passive or declarative, bit 1: explicit table
 * index or declarative, bit 2: expressions instead of function indices):
 * 1 and 5 are passive.
 */
function hasPassiveElementSegment(reader: ModuleReader): boolean {
  const count = reader.leb();
  for (let i = 0; i < count; i += 1) {
    const flags = reader.leb();
    if (flags > 7) throw new Error(`unknown element segment flags ${flags}`);
    if (flags === 1 || flags === 5) return true;
    const active = (flags & 0x01) === 0;
    const explicitTable = (flags & 0x02) !== 0;
    const expressions = (flags & 0x04) !== 0;
    if (active && explicitTable) reader.leb();
    if (active) reader.constExpr();
    // Flags 0 and 4 have no element kind or type; every other form does.
    if (flags !== 0 && flags !== 4) {
      if (expressions) reader.valueType();
      else reader.byte();
    }
    const items = reader.leb();
    for (let item = 0; item < items; item += 1) {
      if (expressions) reader.constExpr();
      else reader.leb();
    }
  }
  return false;
}

/** Whether the code section may hold an instruction 0xFC `sub` (see the file comment: a superset, never a miss). */
function mayContainPrefixed(bytes: Uint8Array, code: { start: number; end: number }, subOpcodes: ReadonlySet<number>): boolean {
  for (let at = bytes.indexOf(FC_PREFIX, code.start); at !== -1 && at < code.end; at = bytes.indexOf(FC_PREFIX, at + 1)) {
    // The sub-opcode is a u32 LEB128 of at most 5 bytes.
    let value = 0;
    for (let i = 0, scale = 1; i < 5 && at + 1 + i < code.end; i += 1, scale *= 128) {
      const byte = bytes[at + 1 + i]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) break;
    }
    if (subOpcodes.has(value)) return true;
  }
  return false;
}

/**
 * Decide whether instances of this core module may be reset (see the file
 * comment). A module this cannot read is not resettable.
 */
export function analyseInstanceState(bytes: Uint8Array): InstanceStateVerdict {
  return instanceStateOf(bytes).verdict;
}

/**
 * The module's verdict and, when it may be reset, whether its tables stay as
 * instantiated (`tablesUnwritten`), from one read of its sections (what the
 * snapshot rewrite asks).
 */
export function instanceStateOf(bytes: Uint8Array): { verdict: InstanceStateVerdict; tablesUnwritten: boolean } {
  let shape: ModuleShape;
  try {
    shape = readShape(bytes);
  } catch {
    return { verdict: { resettable: false, reason: 'unreadable' }, tablesUnwritten: false };
  }
  const verdict = verdictOf(bytes, shape);
  return { verdict, tablesUnwritten: verdict.resettable && tablesUnwrittenOf(bytes, shape) };
}

function verdictOf(bytes: Uint8Array, shape: ModuleShape): InstanceStateVerdict {
  if (shape.reservedExport) return { resettable: false, reason: 'exports-reserved-name' };
  if (!shape.code) return { resettable: true };
  // A dropped data segment is observable only through memory.init, which needs a memory; a dropped
  // element segment only through table.init, which needs a table. (The data count section that data.drop
  // requires is not relied on: an engine that skipped that check would make it a miss.)
  const dataDrops = shape.passiveData && shape.hasMemory;
  const elementDrops = shape.passiveElements && shape.hasTable;
  if (dataDrops && mayContainPrefixed(bytes, shape.code, new Set([DATA_DROP]))) return { resettable: false, reason: 'drops-data-segment' };
  if (elementDrops && mayContainPrefixed(bytes, shape.code, new Set([ELEM_DROP]))) return { resettable: false, reason: 'drops-element-segment' };
  return { resettable: true };
}

/** Verdicts of `tablesUnwritten` by the sha256 of the code section (componentize-js tools share one engine's). */
const tableVerdicts = new Map<string, boolean>();
/** Verdicts kept (each ~100 bytes); the oldest goes first. */
const TABLE_VERDICTS_KEPT = 256;

/**
 * Whether this module's code can never write a table (table.set, table.fill,
 * table.copy, table.init, table.grow): true for a module without a table or
 * without code, and for one whose every instruction was read and none writes.
 * An instance's tables may skip the entry comparison only when every module
 * of its component holding a table says so (see the file comment). The walk
 * is linear in the code's size (~140 ms for a componentize-js engine's 9 MB,
 * once per distinct code section: remembered by its hash).
 */
export function tablesUnwritten(bytes: Uint8Array): boolean {
  let shape: ModuleShape;
  try {
    shape = readShape(bytes);
  } catch {
    return false;
  }
  return tablesUnwrittenOf(bytes, shape);
}

function tablesUnwrittenOf(bytes: Uint8Array, shape: ModuleShape): boolean {
  if (shape.reservedExport) return false;
  if (!shape.hasTable || !shape.code) return true;
  const code = bytes.subarray(shape.code.start, shape.code.end);
  const key = createHash('sha256').update(code).digest('hex');
  let unwritten = tableVerdicts.get(key);
  if (unwritten === undefined) {
    unwritten = scanTableWrites(code, { start: 0, end: code.length }) === 'none';
    if (tableVerdicts.size >= TABLE_VERDICTS_KEPT) tableVerdicts.delete(tableVerdicts.keys().next().value as string);
    tableVerdicts.set(key, unwritten);
  }
  return unwritten;
}
