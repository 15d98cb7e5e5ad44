/**
 * A table's snapshot kept in a table: a shadow table of the same element type
 * and size, filled and put back with one `table.copy` each way, inside wasm.
 *
 * Why: a reset put a table back entry by entry through `WebAssembly.Table`'s
 * `get` (and `set` where one changed), a call into the engine per entry. A
 * componentize-js guest's function table has thousands of entries, and that
 * loop was the largest part of its reset: `restore` and the engine's `get`
 * together ~1-2 ms of worker CPU per call at 8 js_echo calls in flight (cpu
 * profile of the workers, `bench js_echo --isolation call --concurrency 8`),
 * more than comparing its 9.5 MB memory. A bulk copy puts every entry back
 * whether or not it changed, so the reset is at least as complete as before.
 *
 * The module, per table (encoded below rather than shipped as a file; N is
 * the table's length at the snapshot, REF its element type):
 *
 *   (module
 *     (import "t" "live" (table $live 0 REF))
 *     (table $shadow N REF)
 *     (func (export "save")    (table.copy $shadow $live (i32.const 0) (i32.const 0) (i32.const N)))
 *     (func (export "restore") (table.copy $live $shadow (i32.const 0) (i32.const 0) (i32.const N))))
 *
 * Node 20 reflects no table's element type: funcref is tried first, then
 * externref (an import of the wrong type fails to link); a table of any other
 * type gets no mirror, and the caller keeps its entries itself.
 */

/** The parts of WebAssembly.Table used here (Node's typings do not declare it). */
export interface MirroredTable {
  readonly length: number;
}

/** A table's shadow copy: `restore` puts the table back as it was at `save`, every entry. */
export interface TableMirror {
  save(): void;
  restore(): void;
}

const FUNCREF = 0x70;
const EXTERNREF = 0x6f;

/** Unsigned LEB128. */
function uleb(value: number): number[] {
  const bytes: number[] = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (value !== 0);
  return bytes;
}

/** Signed LEB128 of a non-negative i32. */
function sleb(value: number): number[] {
  const bytes: number[] = [];
  for (;;) {
    const byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value === 0 && (byte & 0x40) === 0) {
      bytes.push(byte);
      return bytes;
    }
    bytes.push(byte | 0x80);
  }
}

function name(text: string): number[] {
  return [text.length, ...Buffer.from(text, 'latin1')];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

/** The mirror module for a table of `length` entries of element type `ref`. */
export function mirrorModuleBytes(ref: number, length: number): Uint8Array {
  const types = section(1, [1, 0x60, 0, 0]);
  const imports = section(2, [1, ...name('t'), ...name('live'), 0x01, ref, 0x00, 0]);
  const functions = section(3, [2, 0, 0]);
  const tables = section(4, [1, ref, 0x00, ...uleb(length)]);
  const exports = section(7, [2, ...name('save'), 0x00, 0, ...name('restore'), 0x00, 1]);
  // table.copy is 0xFC 14 dst src; the stack holds dst offset, src offset, count. Table 0 is the live one (imported), 1 the shadow.
  const copy = (dst: number, src: number): number[] => {
    const body = [0, 0x41, 0, 0x41, 0, 0x41, ...sleb(length), 0xfc, 14, dst, src, 0x0b];
    return [...uleb(body.length), ...body];
  };
  const code = section(10, [2, ...copy(1, 0), ...copy(0, 1)]);
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...types, ...imports, ...functions, ...tables, ...exports, ...code]);
}

/** Compiled mirror modules, by element type and length (a component's tables come in a few sizes). */
const modules = new Map<string, WebAssembly.Module>();
const MAX_MODULES = 256;

function mirrorModule(ref: number, length: number): WebAssembly.Module {
  const key = `${ref}:${length}`;
  let module = modules.get(key);
  if (module === undefined) {
    if (modules.size >= MAX_MODULES) modules.clear();
    module = new WebAssembly.Module(mirrorModuleBytes(ref, length));
    modules.set(key, module);
  }
  return module;
}

/** A mirror of `table` holding its entries as they are now, or undefined when its element type is neither funcref nor externref. */
export function mirrorTable(table: MirroredTable): TableMirror | undefined {
  for (const ref of [FUNCREF, EXTERNREF]) {
    let instance: WebAssembly.Instance;
    try {
      instance = new WebAssembly.Instance(mirrorModule(ref, table.length), { t: { live: table as unknown as WebAssembly.ImportValue } });
    } catch {
      continue;
    }
    const mirror = instance.exports as unknown as TableMirror;
    mirror.save();
    return mirror;
  }
  return undefined;
}
