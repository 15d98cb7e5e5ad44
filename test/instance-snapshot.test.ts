/**
 * InstanceSnapshot on its own (worker/instance-snapshot.ts), with a real core
 * instance whose memory, mutable global and funcref table carry the snapshot
 * exports: what a reset puts back (memory, globals beyond the stack pointer,
 * changed table slots, the glue's resource tables when only stdio handles
 * were made) and when it refuses (a table or memory that changed size, glue
 * state that differs, a handle to any other host object). The end-to-end
 * version, with hostile guests, is fresh-instance-isolation.test.ts.
 */
import { parse } from '@bytecodealliance/jco';
import { beforeAll, describe, expect, it } from 'vitest';
import { GLUE_RESOURCES, GLUE_STATE, type GlueHandleTable, type GlueResources } from '../host/sandbox/load/glue-patch.js';
import { SNAPSHOT_EXPORT_PREFIX, SNAPSHOT_TABLES_UNWRITTEN } from '../host/sandbox/load/snapshot-exports.js';
import { InstanceSnapshot, restoreMemory, saveMemory, savedImage, type ResettableHost } from '../host/sandbox/worker/instance-snapshot.js';

const P = SNAPSHOT_EXPORT_PREFIX;
const WAT = `(module
  (memory (export "${P}memory") 1 4)
  (global $g (export "${P}global") (mut i32) (i32.const 7))
  (global $h (export "${P}global-f64") (mut f64) (f64.const 1.5))
  (table $t (export "${P}table") 2 10 funcref)
  (elem (i32.const 0) $one $two)
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func (export "poke") (param $v i32)
    (i32.store8 (i32.const 100) (local.get $v))
    (global.set $g (local.get $v))
    (global.set $h (f64.convert_i32_s (local.get $v))))
  (func (export "swap") (table.set $t (i32.const 0) (ref.func $two)))
  (func (export "first") (result i32) (call_indirect $t (result i32) (i32.const 0)))
  (func (export "grow_table") (drop (table.grow $t (ref.null func) (i32.const 1))))
  (func (export "grow_memory") (drop (memory.grow (i32.const 1))))
)`;

interface Probe {
  poke(value: number): void;
  swap(): void;
  first(): number;
  grow_table(): void;
  grow_memory(): void;
}

let module: WebAssembly.Module;

/** A glue whose state digest is whatever `glue.state` says, and (optionally) resource tables. */
interface FakeGlue {
  state: string;
  resources?: GlueResources;
}

function instance(glue: FakeGlue = { state: 'pristine' }, host?: ResettableHost) {
  const core = new WebAssembly.Instance(module, {});
  const exports = core.exports as unknown as Probe & Record<string, unknown>;
  const component: Record<string | symbol, unknown> = { [GLUE_STATE]: () => [glue.state] };
  if (glue.resources) component[GLUE_RESOURCES] = glue.resources;
  const snapshot = InstanceSnapshot.take([core.exports], component as Record<string, unknown>, host);
  if (!snapshot) throw new Error('no snapshot');
  const memory = exports[`${P}memory`] as WebAssembly.Memory;
  const global = (name: string): number => (exports[`${P}${name}`] as { value: number }).value;
  return { exports, snapshot, memory, global };
}

beforeAll(async () => {
  module = new WebAssembly.Module(await parse(WAT));
});

describe('a snapshot reset', () => {
  it('puts back every mutable global, not only the stack pointer, and the memory', () => {
    const { exports, snapshot, memory, global } = instance();
    exports.poke(42);
    expect(global('global')).toBe(42);
    expect(global('global-f64')).toBe(42);
    expect(new Uint8Array(memory.buffer)[100]).toBe(42);
    expect(snapshot.restore()).toBeUndefined();
    expect(global('global')).toBe(7);
    expect(global('global-f64')).toBe(1.5);
    expect(new Uint8Array(memory.buffer)[100]).toBe(0);
  });

  it('puts back a table slot the call changed (an indirect call reaches the original function again)', () => {
    const { exports, snapshot } = instance();
    expect(exports.first()).toBe(1);
    exports.swap();
    expect(exports.first()).toBe(2);
    expect(snapshot.restore()).toBeUndefined();
    expect(exports.first()).toBe(1);
  });

  it('refuses with table-changed when a table grew, and leaves the instance as the call left it', () => {
    const { exports, snapshot, global } = instance();
    exports.poke(9);
    exports.grow_table();
    expect(snapshot.check()).toBe('table-changed');
    expect(snapshot.restore()).toBe('table-changed');
    // Nothing was copied back: the instance is to be dropped, not half reset.
    expect(global('global')).toBe(9);
  });

  it('refuses with memory-grew when a memory grew', () => {
    const { exports, snapshot } = instance();
    exports.grow_memory();
    expect(snapshot.restore()).toBe('memory-grew');
  });

  it('refuses with glue-state-changed when the glue digest differs and no resource table explains it', () => {
    const glue: FakeGlue = { state: 'pristine' };
    const { snapshot } = instance(glue);
    glue.state = 'a borrow left behind';
    expect(snapshot.restore()).toBe('glue-state-changed');
  });
});

describe('tables no module writes', () => {
  /** The probe's module with the tables-unwritten marker (its table's `swap` is never called here: a marked module has no table write). */
  const marked = WAT.replace(`(table $t (export "${P}table")`, `(table $t (export "${P}table") (export "${SNAPSHOT_TABLES_UNWRITTEN}")`);
  const reads = (run: () => void): number => {
    // Node's typings do not declare WebAssembly.Table.
    const table = (WebAssembly as unknown as { Table: { prototype: { get: (index: number) => unknown } } }).Table.prototype;
    const original = table.get;
    let count = 0;
    table.get = function (this: unknown, index: number) {
      count += 1;
      return original.call(this, index);
    };
    try {
      run();
    } finally {
      table.get = original;
    }
    return count;
  };

  it('are neither saved nor compared entry by entry when every module holding a table is marked, and their size is still checked', async () => {
    expect(marked).not.toBe(WAT);
    const core = new WebAssembly.Instance(new WebAssembly.Module(await parse(marked)), {});
    const exports = core.exports as unknown as Probe;
    let snapshot: InstanceSnapshot | undefined;
    expect(reads(() => (snapshot = InstanceSnapshot.take([core.exports], { [GLUE_STATE]: () => ['pristine'] } as unknown as Record<string, unknown>)))).toBe(0);
    exports.poke(3);
    expect(reads(() => expect(snapshot!.restore()).toBeUndefined())).toBe(0);
    exports.grow_table();
    expect(snapshot!.restore()).toBe('table-changed');
  });

  it('are compared as before when one module holding a table is not marked', async () => {
    const unmarked = new WebAssembly.Instance(module, {});
    const markedCore = new WebAssembly.Instance(new WebAssembly.Module(await parse(marked)), {});
    const exports = unmarked.exports as unknown as Probe;
    const snapshot = InstanceSnapshot.take([markedCore.exports, unmarked.exports], { [GLUE_STATE]: () => ['pristine'] } as unknown as Record<string, unknown>)!;
    exports.swap();
    expect(reads(() => expect(snapshot.restore()).toBeUndefined())).toBeGreaterThan(0);
    expect(exports.first()).toBe(1);
  });
});

describe('putting a memory back', () => {
  for (const pages of [2, 40]) {
    it(`makes a ${pages * 64} KiB memory byte for byte what it was, whichever bytes changed (${pages > 16 ? 'chunks compared' : 'copied whole'})`, () => {
      const memory = new WebAssembly.Memory({ initial: pages });
      const live = new Uint8Array(memory.buffer);
      for (let i = 0; i < live.length; i += 7) live[i] = (i * 31) & 0xff;
      const saved = saveMemory(memory);
      const bytes = Buffer.from(live);
      // A chunk's first and last byte, one in the middle, the memory's first and last, and a run across a chunk boundary.
      for (const at of [0, 16_383, 16_384, 40_000, live.length - 1]) live[at]! ^= 0xff;
      live.fill(0xab, 32_760, 32_800);
      restoreMemory(saved);
      expect(Buffer.compare(Buffer.from(memory.buffer), bytes)).toBe(0);
    });
  }

  it('puts back a small memory saved as runs of zero and non-zero pages, whatever a call wrote into either', () => {
    const memory = new WebAssembly.Memory({ initial: 2 });
    const live = new Uint8Array(memory.buffer);
    // Like a C guest's snapshot: data in a few pages, the stack and the heap zero.
    live.fill(0x11, 100, 200);
    live.fill(0x22, 65_536, 66_900);
    live[131_071] = 0x33;
    const saved = saveMemory(memory);
    const bytes = savedImage(saved);
    expect(saved.runs?.map(({ start, end, source }) => [start, end, source !== undefined])).toEqual([
      [0, 4096, true],
      [4096, 65_536, false],
      [65_536, 69_632, true],
      [69_632, 126_976, false],
      [126_976, 131_072, true],
    ]);
    for (let round = 0; round < 2; round += 1) {
      // Into zero runs (their edges too), into data runs, and across the boundaries between them.
      for (const at of [4096, 4097, 65_535, 69_632, 126_975, 60_000, 0, 150, 66_000, 131_071]) live[at]! ^= 0x5a;
      live.fill(0xcd, 4000, 4200);
      live.fill(0xef, 65_000, 70_000);
      restoreMemory(saved);
      expect(Buffer.compare(Buffer.from(memory.buffer), bytes)).toBe(0);
    }
  });

  it('puts back a large memory saved as runs (chunks compared, zero runs against zeros), whatever a call wrote into either', () => {
    const memory = new WebAssembly.Memory({ initial: 40 });
    const live = new Uint8Array(memory.buffer);
    // Like a componentize-js snapshot: data in stretches, zeros between them (runs longer and shorter than a 16 KiB chunk).
    live.fill(0x41, 0, 70_000);
    live.fill(0x42, 1_000_000, 1_004_000);
    live.fill(0x43, 2_000_000, 2_600_000);
    const saved = saveMemory(memory);
    const bytes = savedImage(saved);
    expect(saved.runs!.filter((run) => run.source === undefined).length).toBe(3);
    for (let round = 0; round < 2; round += 1) {
      for (const at of [0, 69_999, 70_000, 73_727, 73_728, 500_000, 999_999, 1_002_000, 1_004_095, 1_004_096, 2_621_439]) live[at]! ^= 0x5a;
      // A write across a zero run and the data run after it, and one across chunk boundaries inside a zero run.
      live.fill(0xcd, 995_000, 1_001_000);
      live.fill(0xef, 1_600_000, 1_650_000);
      restoreMemory(saved);
      expect(Buffer.compare(Buffer.from(memory.buffer), bytes)).toBe(0);
    }
  });

  it('writes into the memory as it is now, after its buffer was replaced (the view it kept is not reused)', () => {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 2 });
    new Uint8Array(memory.buffer).fill(7);
    const saved = saveMemory(memory);
    const bytes = savedImage(saved);
    restoreMemory(saved);
    memory.grow(1);
    new Uint8Array(memory.buffer).fill(1, 0, 100);
    restoreMemory(saved);
    expect(Buffer.compare(Buffer.from(memory.buffer, 0, bytes.length), bytes)).toBe(0);
  });
});

describe('the glue resource tables on reset', () => {
  const T_FLAG = 1 << 30;

  /** One handle table with its capture table, as jco lays them out, and a digest over both. */
  function glueWithOneTable() {
    const handles: GlueHandleTable = [T_FLAG, 0];
    handles._createdReps = new Set();
    const captures = new Map<unknown, unknown>();
    let counter = 0;
    const resources: GlueResources = {
      tables: () => [[handles, captures]],
      counters: () => [counter],
      setCounters: (values) => {
        counter = values[0]!;
      },
    };
    const glue = {
      get state() {
        return JSON.stringify([handles, handles._createdReps?.size, captures.size, counter]);
      },
      resources,
    };
    /** What the glue does when the guest asks for a handle to `object` (rscTableCreateOwn). */
    const capture = (object: unknown): number => {
      const rep = ++counter;
      captures.set(rep, object);
      handles._createdReps!.add(rep);
      handles.push(0, rep | T_FLAG);
      return (handles.length >> 1) - 1;
    };
    return { glue, handles, captures, capture, counter: () => counter };
  }

  const streams = (): ResettableHost & { stdout: object; closed: boolean; flushed: number } => {
    const host = {
      stdout: {},
      closed: false,
      flushed: 0,
      resettable: new Set<unknown>(),
      resetStreams: () => {
        if (host.closed) return false;
        host.flushed += 1;
        return true;
      },
    };
    host.resettable = new Set([host.stdout]);
    return host;
  };

  it('drops the handles a call made to a resettable host object (stdout), with the memory that named them', () => {
    const host = streams();
    const { glue, handles, captures, capture, counter } = glueWithOneTable();
    const { exports, snapshot, memory } = instance(glue, host);
    const handle = capture(host.stdout);
    exports.poke(handle);
    expect(snapshot.restore()).toBeUndefined();
    expect([...handles]).toEqual([T_FLAG, 0]);
    expect(handles._createdReps?.size).toBe(0);
    expect(captures.size).toBe(0);
    // The next handle gets the number a new instance would give it.
    expect(counter()).toBe(0);
    expect(new Uint8Array(memory.buffer)[100]).toBe(0);
    expect(host.flushed).toBe(1);
  });

  it('refuses when a call kept a handle to any other host object', () => {
    const host = streams();
    const { glue, capture } = glueWithOneTable();
    const { snapshot } = instance(glue, host);
    capture(host.stdout);
    capture({ stdin: true });
    expect(snapshot.restore()).toBe('glue-state-changed');
  });

  it('refuses when the stdio streams cannot be put back (the guest closed one)', () => {
    const host = streams();
    const { glue, capture } = glueWithOneTable();
    const { snapshot } = instance(glue, host);
    capture(host.stdout);
    host.closed = true;
    expect(snapshot.restore()).toBe('glue-state-changed');
  });

  it('refuses when the glue state still differs once the tables are back (a task left behind)', () => {
    const host = streams();
    const { glue, capture } = glueWithOneTable();
    let task = 0;
    const withTasks = {
      get state() {
        return `${glue.state}/${task}`;
      },
      resources: glue.resources,
    };
    const { snapshot } = instance(withTasks, host);
    capture(host.stdout);
    task = 1;
    expect(snapshot.restore()).toBe('glue-state-changed');
  });
});
