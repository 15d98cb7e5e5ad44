/**
 * A table's snapshot kept in a shadow table (worker/table-mirror.ts): one bulk copy puts every entry back, whatever a
 * call did to it (set, filled, copied over, nulled), for funcref and externref tables of any size, and a snapshot of
 * an instance whose table a guest rewrote whole is reset exactly (the end-to-end guarantee is
 * fresh-instance-isolation.test.ts's).
 */
import { parse } from '@bytecodealliance/jco';
import { beforeAll, describe, expect, it } from 'vitest';
import { GLUE_STATE } from '../host/sandbox/load/glue-patch.js';
import { SNAPSHOT_EXPORT_PREFIX } from '../host/sandbox/load/snapshot-exports.js';
import { InstanceSnapshot } from '../host/sandbox/worker/instance-snapshot.js';
import { mirrorModuleBytes, mirrorTable } from '../host/sandbox/worker/table-mirror.js';

const P = SNAPSHOT_EXPORT_PREFIX;
const SIZE = 5000;
/** A guest with a large funcref table whose every slot it can overwrite, fill or copy over. */
const WAT = `(module
  (table $t (export "${P}table") ${SIZE} ${SIZE} funcref)
  (elem (i32.const 0) $one $two $three)
  (elem (i32.const ${SIZE - 1}) $three)
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func $three (result i32) (i32.const 3))
  (func (export "at") (param i32) (result i32) (call_indirect $t (result i32) (local.get 0)))
  (func (export "fill_all") (table.fill $t (i32.const 0) (ref.func $two) (i32.const ${SIZE})))
  (func (export "null_all") (table.fill $t (i32.const 0) (ref.null func) (i32.const ${SIZE})))
  (func (export "set_last") (table.set $t (i32.const ${SIZE - 1}) (ref.func $one)))
  (func (export "copy_over") (table.copy $t $t (i32.const 0) (i32.const ${SIZE - 1}) (i32.const 1)))
  (func (export "filled") (result i32) (ref.is_null (table.get $t (i32.const 100))))
)`;

interface Guest {
  at(index: number): number;
  fill_all(): void;
  null_all(): void;
  set_last(): void;
  copy_over(): void;
  filled(): number;
}

/** WebAssembly.Table, which Node's typings do not declare. */
interface WasmTable {
  readonly length: number;
  get(index: number): unknown;
  set(index: number, value: unknown): void;
}
const { Table } = WebAssembly as unknown as { Table: new (descriptor: { element: string; initial: number }, value?: unknown) => WasmTable };

let module: WebAssembly.Module;
beforeAll(async () => {
  module = new WebAssembly.Module(await parse(WAT));
});

function guest(): { exports: Guest; snapshot: InstanceSnapshot } {
  const core = new WebAssembly.Instance(module, {});
  const snapshot = InstanceSnapshot.take([core.exports], { [GLUE_STATE]: () => ['pristine'] } as unknown as Record<string, unknown>);
  if (!snapshot) throw new Error('no snapshot');
  return { exports: core.exports as unknown as Guest, snapshot };
}

const pristine = (exports: Guest): void => {
  expect([exports.at(0), exports.at(1), exports.at(2), exports.at(SIZE - 1)]).toEqual([1, 2, 3, 3]);
  // Slot 100 was null at the snapshot: an indirect call through it traps, as in a new instance.
  expect(exports.filled()).toBe(1);
  expect(() => exports.at(100)).toThrow();
};

describe('a table reset through its mirror', () => {
  it('puts back every slot after the guest filled the whole table', () => {
    const { exports, snapshot } = guest();
    exports.fill_all();
    expect(exports.at(0)).toBe(2);
    expect(exports.filled()).toBe(0);
    expect(snapshot.restore()).toBeUndefined();
    pristine(exports);
  });

  it('puts back every slot after the guest nulled them, set the last one and copied over the first', () => {
    const { exports, snapshot } = guest();
    exports.set_last();
    exports.copy_over();
    expect([exports.at(0), exports.at(SIZE - 1)]).toEqual([1, 1]);
    expect(snapshot.restore()).toBeUndefined();
    pristine(exports);
    exports.null_all();
    expect(snapshot.restore()).toBeUndefined();
    pristine(exports);
  });

  it('control: a call that changed nothing leaves the table as it was', () => {
    const { exports, snapshot } = guest();
    expect(snapshot.restore()).toBeUndefined();
    pristine(exports);
  });

  it('mirrors externref tables too, with the same objects put back', () => {
    const table = new Table({ element: 'externref', initial: 3 }, undefined);
    const objects = [{ a: 1 }, { b: 2 }, 'three'];
    objects.forEach((value, i) => table.set(i, value));
    const mirror = mirrorTable(table);
    expect(mirror).toBeDefined();
    table.set(0, { other: true });
    table.set(2, null);
    mirror!.restore();
    expect([table.get(0), table.get(1), table.get(2)]).toEqual(objects);
    expect(table.get(0)).toBe(objects[0]);
  });

  it('mirrors a funcref table of any size, empty ones included (the module validates)', () => {
    for (const size of [0, 1, 63, 64, 127, 128, 8192, 100_000]) {
      expect(WebAssembly.validate(mirrorModuleBytes(0x70, size)), `size ${size}`).toBe(true);
      expect(mirrorTable(new Table({ element: 'anyfunc', initial: size }))).toBeDefined();
    }
  });
});
