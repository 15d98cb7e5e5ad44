/**
 * Make a core module's resettable state reachable from JS, so a worker can
 * snapshot an instance after it initialized and put it back after a call
 * (worker/instance-snapshot.ts). A module may keep mutable globals (the C
 * stack pointer, an allocator's state), tables and memories to itself; this
 * rewrite adds an export for every one of them, under names no glue asks for:
 *
 *     toolhost:snapshot:global:<index>   every mutable global, imported or defined
 *     toolhost:snapshot:table:<index>    every table, imported or defined
 *     toolhost:snapshot:memory:<index>   every memory, imported or defined
 *
 * Extra exports change nothing else: jco's glue reads exports by name. An
 * immutable global cannot change, so it is not exported.
 *
 * A module whose instances must not be reset (./instance-state-model.ts: it
 * may drop a passive segment, state JS cannot put back) also gets
 *
 *     toolhost:snapshot:refuse:<reason>  naming one of its memories or tables
 *
 * and a snapshot of an instance with that export is never taken, so each of
 * its calls gets a new instance (so is a module that exports a name under
 * `toolhost:snapshot:` itself: it could forge a marker). A module with a table whose code can never
 * write one (the model's `tablesUnwritten`) gets
 *
 *     toolhost:snapshot:tables-unwritten  naming its first table
 *
 * and a reset skips the entries of an instance's tables when every module
 * holding a table carries it (a module rewritten before this marker existed
 * lacks it, and is compared as before). The verdicts travel with the module's
 * bytes (thread and process containment alike).
 */

import { SNAPSHOT_EXPORT_PREFIX, instanceStateOf } from './instance-state-model.js';
import { ModuleReader, concatBytes, encodeLeb, moduleSections } from './wasm-binary.js';

export { SNAPSHOT_EXPORT_PREFIX };
/** The marker export of a module whose instances are never reset (see the file comment). */
export const SNAPSHOT_REFUSE_PREFIX = `${SNAPSHOT_EXPORT_PREFIX}refuse:`;
/** The marker export of a module whose code never writes a table (see the file comment). */
export const SNAPSHOT_TABLES_UNWRITTEN = `${SNAPSHOT_EXPORT_PREFIX}tables-unwritten`;

const SECTION = { custom: 0, import: 2, table: 4, memory: 5, global: 6, export: 7 } as const;
/** Known sections in the order the binary format requires them (tag, 13, sits between memory and global). */
const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];
const KIND = { func: 0, table: 1, memory: 2, global: 3, tag: 4 } as const;

function encodeName(name: string): number[] {
  const bytes = Buffer.from(name, 'utf8');
  return [...encodeLeb(bytes.length), ...bytes];
}

/** Add the snapshot exports to a core module (see the file comment). Returns the bytes unchanged when there is nothing to add. */
export function exposeSnapshotState(bytes: Uint8Array): Uint8Array {
  const all = moduleSections(bytes);
  const wanted: Array<{ name: string; kind: number; index: number }> = [];
  let tables = 0;
  let memories = 0;
  let globals = 0;
  const existing: number[] = [];
  let exportCount = 0;
  for (const section of all) {
    const reader = new ModuleReader(bytes, section.contentStart);
    if (section.id === SECTION.import) {
      const count = reader.leb();
      for (let i = 0; i < count; i += 1) {
        reader.name();
        reader.name();
        const kind = reader.byte();
        if (kind === KIND.func) reader.leb();
        else if (kind === KIND.table) {
          reader.tableType();
          wanted.push({ name: `table:${tables}`, kind, index: tables });
          tables += 1;
        } else if (kind === KIND.memory) {
          reader.limits();
          wanted.push({ name: `memory:${memories}`, kind, index: memories });
          memories += 1;
        } else if (kind === KIND.global) {
          reader.valueType();
          const mutable = reader.byte() === 1;
          if (mutable) wanted.push({ name: `global:${globals}`, kind, index: globals });
          globals += 1;
        } else if (kind === KIND.tag) {
          reader.byte();
          reader.leb();
        } else throw new Error(`unknown import kind ${kind}`);
      }
    } else if (section.id === SECTION.table) {
      const count = reader.leb();
      for (let i = 0; i < count; i += 1) {
        if (bytes[reader.offset] === 0x40) {
          // A table with an initializer expression: 0x40 0x00 tabletype expr.
          reader.skip(2);
          reader.tableType();
          reader.constExpr();
        } else reader.tableType();
        wanted.push({ name: `table:${tables}`, kind: KIND.table, index: tables });
        tables += 1;
      }
    } else if (section.id === SECTION.memory) {
      const count = reader.leb();
      for (let i = 0; i < count; i += 1) {
        reader.limits();
        wanted.push({ name: `memory:${memories}`, kind: KIND.memory, index: memories });
        memories += 1;
      }
    } else if (section.id === SECTION.global) {
      const count = reader.leb();
      for (let i = 0; i < count; i += 1) {
        reader.valueType();
        const mutable = reader.byte() === 1;
        reader.constExpr();
        if (mutable) wanted.push({ name: `global:${globals}`, kind: KIND.global, index: globals });
        globals += 1;
      }
    } else if (section.id === SECTION.export) {
      exportCount = reader.leb();
      existing.push(...bytes.subarray(reader.offset, section.end));
    }
  }
  if (wanted.length === 0) return bytes;
  const { verdict, tablesUnwritten } = instanceStateOf(bytes);
  if (!verdict.resettable) {
    // A refusal needs a memory or a table to be observable, so one is there to name (see the model).
    const named = wanted.find(({ kind }) => kind === KIND.memory || kind === KIND.table) ?? wanted[0]!;
    wanted.push({ name: `refuse:${verdict.reason}`, kind: named.kind, index: named.index });
  } else if (tables > 0 && tablesUnwritten) {
    wanted.push({ name: SNAPSHOT_TABLES_UNWRITTEN.slice(SNAPSHOT_EXPORT_PREFIX.length), kind: KIND.table, index: 0 });
  }

  const entries: number[] = [...existing];
  for (const { name, kind, index } of wanted) entries.push(...encodeName(`${SNAPSHOT_EXPORT_PREFIX}${name}`), kind, ...encodeLeb(index));
  const content = [...encodeLeb(exportCount + wanted.length), ...entries];
  const exportSection = Uint8Array.from([SECTION.export, ...encodeLeb(content.length), ...content]);

  // Replace the export section, or insert one where the binary format wants it.
  const rank = (id: number): number => SECTION_ORDER.indexOf(id);
  const chunks: Uint8Array[] = [bytes.subarray(0, 8)];
  let placed = false;
  for (const section of all) {
    if (section.id === SECTION.export) {
      chunks.push(exportSection);
      placed = true;
      continue;
    }
    if (!placed && section.id !== SECTION.custom && rank(section.id) > rank(SECTION.export)) {
      chunks.push(exportSection);
      placed = true;
    }
    chunks.push(bytes.subarray(section.start, section.end));
  }
  if (!placed) chunks.push(exportSection);
  return concatBytes(chunks);
}
