/**
 * The table-write scan (host/sandbox/load/table-writes.ts): it reads every
 * instruction with its immediates, so a write is found wherever it sits
 * (after immediates whose bytes look like `table.set`, inside any block
 * form), a module without one says `none` across the instruction set Node's
 * V8 takes, and anything it cannot read is `unreadable` (treated as a write).
 * Modules are written in WAT and assembled by jco's `parse` (which does not
 * type-check, so instruction sequences need only parse).
 */
import { readFile } from 'node:fs/promises';
import { parse, transpile } from '@bytecodealliance/jco';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tablesUnwritten } from '../host/sandbox/load/instance-state-model.js';
import { SNAPSHOT_TABLES_UNWRITTEN, exposeSnapshotState } from '../host/sandbox/load/snapshot-exports.js';
import { scanTableWrites, type TableWrites } from '../host/sandbox/load/table-writes.js';
import { moduleSections } from '../host/sandbox/load/wasm-binary.js';
import { example } from './helpers.js';

/** A module with a memory, two tables, a tag, a data and an element segment, and one function whose body is `body`. */
function moduleWat(body: string): string {
  return `(module
  (type $v (func))
  (type $i (func (result i32)))
  (memory 1 2 shared)
  (table $t 4 funcref)
  (table $u 4 externref)
  (tag $e (param i32))
  (data $d "abc")
  (elem $s func $f)
  (func $f (type $v)
    (local $l i32) (local $r funcref)
    ${body}))`;
}

async function scan(body: string): Promise<TableWrites> {
  const bytes = await parse(moduleWat(body));
  const code = moduleSections(bytes).find((section) => section.id === 10)!;
  return scanTableWrites(bytes, { start: code.contentStart, end: code.end });
}

/** Instructions that write no table, with immediates chosen to hold 0x26 (table.set's opcode) and 0xfc bytes. */
const READERS = [
  'nop',
  'unreachable',
  'i32.const 38',
  'i32.const -218',
  'i64.const 0x2626262626262626',
  'f32.const 0x1.4c4c4cp-51',
  'f64.const 0x1.6262626262626p-409',
  'v128.const i8x16 38 38 38 38 252 252 252 252 38 38 38 38 38 38 38 38',
  'i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 38',
  'i8x16.extract_lane_s 15',
  'f64x2.replace_lane 1',
  'v128.load offset=38 align=16',
  'v128.load8_lane offset=38 15',
  'v128.store64_lane 1',
  'v128.load32_zero offset=9',
  'i32x4.relaxed_trunc_f32x4_s',
  'f32x4.relaxed_madd',
  'i32.load offset=38',
  'i64.store32 offset=4294967295 align=4',
  'memory.size',
  'memory.grow',
  'memory.init $d',
  'data.drop $d',
  'memory.copy',
  'memory.fill',
  'elem.drop $s',
  'table.size $t',
  'table.get $u',
  'call_indirect $t (type $i)',
  'return_call_indirect $t (type $i)',
  'call $f',
  'return_call $f',
  'call_ref $v',
  'ref.null func',
  'ref.null extern',
  'ref.func $f',
  'ref.is_null',
  'ref.as_non_null',
  'br_on_null 0',
  'br 0',
  'br_if 0',
  'br_table 0 0 0 0',
  'return',
  'drop',
  'select',
  'select (result i32)',
  'local.get $l',
  'local.tee $l',
  'global.get 0',
  'i32.trunc_sat_f32_s',
  'i64.extend32_s',
  'memory.atomic.notify offset=38',
  'memory.atomic.wait64',
  'atomic.fence',
  'i64.atomic.rmw.cmpxchg offset=8',
  'i32.atomic.rmw8.xor_u',
  'throw $e',
  'throw_ref',
];

/** Each way to write a table. */
const WRITERS = ['table.set $t', 'table.fill $u', 'table.copy $t $t', 'table.init $t $s', 'table.grow $u'];

/** Block forms that hold a body: `(inner)` is where it goes. */
const BLOCKS = [
  (inner: string) => `block ${inner} end`,
  (inner: string) => `loop (result i32) ${inner} end`,
  (inner: string) => `if (type $i) ${inner} else nop end`,
  (inner: string) => `try ${inner} catch $e drop catch_all end`,
  (inner: string) => `try ${inner} delegate 0`,
  (inner: string) => `try_table (catch $e 0) (catch_all 0) ${inner} end`,
];

describe('the table-write scan', () => {
  it('reads a body of every instruction that writes no table as none', async () => {
    expect(await scan(READERS.join('\n'))).toBe('none');
    expect(await scan(BLOCKS.map((block) => block(READERS.join('\n'))).join('\n'))).toBe('none');
  });

  for (const writer of WRITERS) {
    it(`finds ${writer.split(' ')[0]} after every other instruction and inside every block form`, async () => {
      expect(await scan(`${READERS.join('\n')}\n${writer}`)).toBe('writes');
      for (const block of BLOCKS) expect(await scan(block(`${READERS.join('\n')}\n${writer}`))).toBe('writes');
    });
  }

  it('finds a write wherever it sits in any sequence of other instructions (property)', async () => {
    const instruction = fc.constantFrom(...READERS);
    await fc.assert(
      fc.asyncProperty(
        fc.array(instruction, { maxLength: 30 }),
        fc.option(fc.record({ at: fc.nat(), writer: fc.constantFrom(...WRITERS), block: fc.option(fc.nat({ max: BLOCKS.length - 1 }), { nil: undefined }) }), { nil: undefined }),
        async (instructions, write) => {
          const body = [...instructions];
          if (write !== undefined) {
            const placed = write.block === undefined ? write.writer : BLOCKS[write.block]!(write.writer);
            body.splice(write.at % (body.length + 1), 0, placed);
          }
          expect(await scan(body.join('\n'))).toBe(write === undefined ? 'none' : 'writes');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('answers unreadable for what it does not know: a GC-prefixed opcode, a body cut short, a body longer than its end', async () => {
    const bytes = await parse(moduleWat('nop\nnop'));
    const code = moduleSections(bytes).find((section) => section.id === 10)!;
    const range = { start: code.contentStart, end: code.end };
    const nop = bytes.lastIndexOf(0x01, code.end - 2);
    const gc = bytes.slice();
    gc[nop] = 0xfb;
    expect(scanTableWrites(gc, range)).toBe('unreadable');
    expect(scanTableWrites(bytes, { start: range.start, end: range.end - 1 })).toBe('unreadable');
    // An `end` where the last nop was: the body's own end comes one byte before its size.
    const early = bytes.slice();
    early[nop] = 0x0b;
    expect(scanTableWrites(early, range)).toBe('unreadable');
  });
});

describe('the tables-unwritten marker', () => {
  const exportNames = (bytes: Uint8Array): string[] => WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map(({ name }) => name);
  const plain = `(module (table 2 funcref) (memory 1) (func (export "f") (result i32) (call_indirect (result i32) (i32.const 0))))`;

  it('marks a module with a table and no table write, and no module that may write one', async () => {
    const reader = await parse(plain);
    expect(tablesUnwritten(reader)).toBe(true);
    expect(exportNames(exposeSnapshotState(reader))).toContain(SNAPSHOT_TABLES_UNWRITTEN);
    for (const writer of ['(table.set 0 (i32.const 0) (ref.null func))', '(drop (table.grow 0 (ref.null func) (i32.const 1)))', '(table.fill 0 (i32.const 0) (ref.null func) (i32.const 1))']) {
      const bytes = await parse(`(module (table 2 funcref) (memory 1) (func (export "w") ${writer}))`);
      expect(tablesUnwritten(bytes)).toBe(false);
      expect(exportNames(exposeSnapshotState(bytes))).not.toContain(SNAPSHOT_TABLES_UNWRITTEN);
    }
  });

  it('marks a module that imports its table the same way (another module may hold it)', async () => {
    const bytes = await parse(`(module (import "m" "t" (table 2 funcref)) (func (export "f") (result i32) (call_indirect (result i32) (i32.const 0))))`);
    expect(tablesUnwritten(bytes)).toBe(true);
    const writer = await parse(`(module (import "m" "t" (table 2 funcref)) (func (export "w") (table.set 0 (i32.const 1) (ref.null func))))`);
    expect(tablesUnwritten(writer)).toBe(false);
  });
});

describe('the example tools', () => {
  /** The core modules of a built component, as jco's transpile splits them. */
  async function coreModules(name: string): Promise<Uint8Array[]> {
    const { files } = await transpile(new Uint8Array(await readFile(example(name))), { name: 'c', noTypescript: true } as Parameters<typeof transpile>[1]);
    return Object.entries(files as Record<string, Uint8Array>).filter(([file]) => file.endsWith('.wasm')).map(([, bytes]) => new Uint8Array(bytes));
  }

  // The reason for the scan: a componentize-js engine (StarlingMonkey, ~9 MB of code) and a C guest never write a
  // table, so their resets skip the comparison. An engine whose code this scan cannot read would still be reset
  // correctly, only ~0.8 ms slower a call: this test says so first.
  it.each(['text', 'ctools'])('reads every core module of %s whole and finds no table write', async (name) => {
    const modules = await coreModules(name);
    expect(modules.length).toBeGreaterThan(0);
    for (const bytes of modules) {
      const code = moduleSections(bytes).find((section) => section.id === 10);
      if (code !== undefined) expect(scanTableWrites(bytes, { start: code.contentStart, end: code.end })).toBe('none');
      expect(tablesUnwritten(bytes)).toBe(true);
    }
  }, 60_000);
});
