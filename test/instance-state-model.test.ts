/**
 * The instance-state model (host/sandbox/load/instance-state-model.ts): a reset
 * puts back every kind of state a core instance holds, or it is refused and
 * the next call gets a new instance. The dropped flags of passive data and
 * element segments are state JS can neither read nor clear: a module that may
 * drop one is never reset (issue 30, "Found" 1: `data.drop` in one principal's
 * call was seen by the next principal's, 20 of 20 rounds).
 *
 * Each state kind has a smuggler here: memories, globals and tables by the C
 * smuggler (fresh-instance-isolation.test.ts, instance-snapshot.test.ts), the
 * segments by a hand-written component (fixtures/wat/segment-smuggler.ts).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from '@bytecodealliance/jco';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { analyseInstanceState, tablesUnwritten } from '../host/sandbox/load/instance-state-model.js';
import { SNAPSHOT_EXPORT_PREFIX, SNAPSHOT_REFUSE_PREFIX, SNAPSHOT_TABLES_UNWRITTEN, exposeSnapshotState } from '../host/sandbox/load/snapshot-exports.js';
import { GLUE_STATE } from '../host/sandbox/load/glue-patch.js';
import { InstanceSnapshot } from '../host/sandbox/worker/instance-snapshot.js';
import { segmentSmugglerComponent } from './fixtures/wat/segment-smuggler.js';
import { freshCacheDir, makeRegistry } from './helpers.js';

const dir = freshCacheDir();

async function core(wat: string): Promise<Uint8Array> {
  return parse(wat);
}

function exportNames(bytes: Uint8Array): string[] {
  return WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map(({ name }) => name);
}

describe('the instance-state model on core modules', () => {
  it('lets a module without passive segments be reset', async () => {
    const bytes = await core('(module (memory 1) (data (i32.const 0) "x") (func (export "f") (drop (i32.const 0))))');
    expect(analyseInstanceState(bytes)).toEqual({ resettable: true });
    expect(exportNames(exposeSnapshotState(bytes)).some((name) => name.startsWith(SNAPSHOT_REFUSE_PREFIX))).toBe(false);
  });

  it('lets a module keep passive segments it never drops (memory.init alone changes nothing a reset misses)', async () => {
    const bytes = await core('(module (memory 1) (data $d "x") (func (export "f") (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1))))');
    expect(analyseInstanceState(bytes)).toEqual({ resettable: true });
  });

  it('refuses a module that may drop a passive data segment, and marks it so no snapshot is taken', async () => {
    const bytes = await core('(module (memory 1) (data $d "x") (func (export "f") (data.drop $d)))');
    expect(analyseInstanceState(bytes)).toEqual({ resettable: false, reason: 'drops-data-segment' });
    expect(exportNames(exposeSnapshotState(bytes))).toContain(`${SNAPSHOT_REFUSE_PREFIX}drops-data-segment`);
  });

  it('refuses a module that may drop a passive element segment', async () => {
    const bytes = await core('(module (table 1 funcref) (func $g) (elem $e func $g) (func (export "f") (elem.drop $e)))');
    expect(analyseInstanceState(bytes)).toEqual({ resettable: false, reason: 'drops-element-segment' });
    expect(exportNames(exposeSnapshotState(bytes))).toContain(`${SNAPSHOT_REFUSE_PREFIX}drops-element-segment`);
  });

  it('finds a drop whose sub-opcode is a padded LEB128 (a valid encoding the engine accepts)', async () => {
    const plain = await core('(module (memory 1) (data $d "x") (func (export "f") (data.drop $d)))');
    // data.drop is FC 09 00; rewrite it as FC 89 80 80 80 00 00 (the same u32, padded to five bytes).
    const at = Buffer.from(plain).indexOf(Buffer.from([0xfc, 0x09, 0x00]));
    expect(at).toBeGreaterThan(0);
    const padded = rebuildCode(plain, at, [0xfc, 0x89, 0x80, 0x80, 0x80, 0x00, 0x00]);
    expect(WebAssembly.validate(padded)).toBe(true);
    expect(analyseInstanceState(padded)).toEqual({ resettable: false, reason: 'drops-data-segment' });
  });

  it('does not read a declarative or active element segment as passive', async () => {
    const bytes = await core('(module (table 1 funcref) (func $g) (elem (i32.const 0) func $g) (elem declare func $g) (func (export "f") (elem.drop 0) (elem.drop 1)))');
    expect(analyseInstanceState(bytes)).toEqual({ resettable: true });
  });

  it('refuses a module that exports a name under the snapshot prefix itself: a forged tables-unwritten marker never skips the comparison', async () => {
    // Hostile: its code writes its table, and it exports the marker the rewrite gives modules that never do.
    const bytes = await core(`(module (table $t 1 funcref) (func $g) (elem declare func $g)
      (export "${SNAPSHOT_TABLES_UNWRITTEN}" (table $t))
      (func (export "swap") (table.set $t (i32.const 0) (ref.func $g))))`);
    expect(analyseInstanceState(bytes)).toEqual({ resettable: false, reason: 'exports-reserved-name' });
    expect(tablesUnwritten(bytes)).toBe(false);
    const rewritten = exposeSnapshotState(bytes);
    expect(exportNames(rewritten)).toContain(`${SNAPSHOT_REFUSE_PREFIX}exports-reserved-name`);
    // So no snapshot is taken of its instances: each call gets a new one.
    const instance = new WebAssembly.Instance(new WebAssembly.Module(rewritten), {});
    expect(InstanceSnapshot.take([instance.exports], { [GLUE_STATE]: () => [] } as unknown as Record<string, unknown>)).toBeUndefined();
    // Any name under the prefix counts, whatever it exports.
    const other = await core(`(module (memory 1) (func (export "${SNAPSHOT_EXPORT_PREFIX}mine")))`);
    expect(analyseInstanceState(other)).toEqual({ resettable: false, reason: 'exports-reserved-name' });
  });

  it('treats a module it cannot read as not resettable', () => {
    const bytes = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 11, 3, 1, 9, 0]);
    expect(analyseInstanceState(bytes)).toEqual({ resettable: false, reason: 'unreadable' });
  });
});

/** `bytes` with the 3 bytes at `at` (inside the only function body) replaced by `replacement`, sizes fixed up. */
function rebuildCode(bytes: Uint8Array, at: number, replacement: number[]): Uint8Array {
  // The test modules are tiny: every size involved is a one-byte LEB, so they are found by walking sections.
  const out: number[] = [...bytes.subarray(0, 8)];
  let offset = 8;
  const grow = replacement.length - 3;
  while (offset < bytes.length) {
    const id = bytes[offset]!;
    const size = bytes[offset + 1]!;
    const content = [...bytes.subarray(offset + 2, offset + 2 + size)];
    if (id === 10) {
      // count=1, body size, body: patch the body and its size.
      const bodyAt = at - (offset + 2);
      const patched = [...content.slice(0, bodyAt), ...replacement, ...content.slice(bodyAt + 3)];
      patched[1] = patched[1]! + grow;
      out.push(id, size + grow, ...patched);
    } else out.push(id, size, ...content);
    offset += 2 + size;
  }
  return Uint8Array.from(out);
}

describe.each(['thread', 'process'] as const)('a dropped segment does not outlive its call (%s containment)', (containment) => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    const file = join(dir, `segment-smuggler-${containment}.wasm`);
    await writeFile(file, await segmentSmugglerComponent());
    // One worker: the drop and the probe always meet the same worker's instances.
    registry = makeRegistry({ sandbox: { threads: 1, containment } });
    await registry.registerWasmTools(file);
  });
  afterAll(async () => {
    await registry.close();
  });

  for (const kind of ['data', 'element'] as const) {
    it(`answers every probe after a ${kind} segment was dropped by an earlier call`, async () => {
      const letter = kind[0]!;
      const expected = kind === 'data' ? 'SEG0' : 'ELEM';
      expect((await registry.execute(`probe_${letter}0`, {})).structuredContent).toBe(expected);
      for (let round = 0; round < 5; round += 1) {
        expect((await registry.execute(`drop_${letter}0`, {}, { principal: 'alice' })).structuredContent).toBe('dropped');
        // Twice: the first probe may get the spare made before the drop, the second the one made after it.
        for (let i = 0; i < 2; i += 1) {
          const result = await registry.execute(`probe_${letter}0`, {}, { principal: 'bob' });
          expect(result.structuredContent).toBe(expected);
          expect(result.accounting?.instance).not.toBe('restored');
        }
      }
    });
  }
});

describe.each(['thread', 'process'] as const)('a dropped segment does not outlive its call on an evicted and re-instantiated instance (%s containment)', (containment) => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    const file = join(dir, `segment-smuggler-evicted-${containment}.wasm`);
    await writeFile(file, await segmentSmugglerComponent());
    // One worker whose components lose their instances after 50 ms uncalled (issue 28, worker/memory-budget.ts).
    registry = makeRegistry({ sandbox: { threads: 1, containment, idleReleaseMs: 50 } });
    await registry.registerWasmTools(file);
  });
  afterAll(async () => {
    await registry.close();
  });

  for (const kind of ['data', 'element'] as const) {
    it(`answers a probe on a re-instantiated instance after a ${kind} segment was dropped`, async () => {
      const letter = kind[0]!;
      const expected = kind === 'data' ? 'SEG0' : 'ELEM';
      expect((await registry.execute(`drop_${letter}0`, {}, { principal: 'alice' })).structuredContent).toBe('dropped');
      await new Promise((resolve) => setTimeout(resolve, 400));
      const result = await registry.execute(`probe_${letter}0`, {}, { principal: 'bob' });
      expect(result.accounting?.reinstantiated).toBe(true);
      expect(result.structuredContent).toBe(expected);
    });
  }
});
