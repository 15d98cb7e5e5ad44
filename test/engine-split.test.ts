/**
 * One compiled engine, many images (issue 37, item 1; sandbox/load/engine-split.ts): a core module whose data
 * segments are all active is split into an engine shared by every tool that carries it and an image applied at
 * instantiation; an instance of the two is the instance of the whole module. A module whose split could differ
 * from it (code naming a data segment, a passive segment, a start function, an imported memory) stays whole.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from '@bytecodealliance/jco';
import { IMAGE_MEMORY_IMPORT, splitEngine, splitVerified } from '../host/sandbox/load/engine-split.js';
import { moduleSections } from '../host/sandbox/load/wasm-binary.js';
import { CONTAINMENTS, example, freshCacheDir, makeRegistry } from './helpers.js';

const hasJs = existsSync(example('text')) && existsSync(example('json'));

/** A component's largest core module. */
function engineModuleOf(file: string): Uint8Array {
  const bytes = new Uint8Array(readFileSync(file));
  return moduleSections(bytes).filter((s) => s.id === 1).map((s) => bytes.subarray(s.contentStart, s.end)).sort((a, b) => b.length - a.length)[0]!;
}

function inertImports(module: WebAssembly.Module): WebAssembly.Imports {
  const imports: Record<string, Record<string, WebAssembly.ImportValue>> = {};
  for (const entry of WebAssembly.Module.imports(module)) {
    if (entry.kind !== 'function') throw new Error(`unexpected import kind ${entry.kind}`);
    (imports[entry.module] ??= {})[entry.name] = () => {
      throw new Error('inert');
    };
  }
  return imports;
}

const memoryOf = (instance: WebAssembly.Instance): WebAssembly.Memory => Object.values(instance.exports).find((v): v is WebAssembly.Memory => v instanceof WebAssembly.Memory)!;

/** The whole module's instance and the split one's (engine, then image into its memory), with inert imports. */
function bothInstances(bytes: Uint8Array): { whole: WebAssembly.Instance; split: WebAssembly.Instance } {
  const parts = splitEngine(bytes);
  if (parts === undefined) throw new Error('not split');
  const wholeModule = new WebAssembly.Module(bytes);
  const whole = new WebAssembly.Instance(wholeModule, inertImports(wholeModule));
  const engine = new WebAssembly.Module(parts.engine);
  const split = new WebAssembly.Instance(engine, inertImports(engine));
  new WebAssembly.Instance(new WebAssembly.Module(parts.image), { [IMAGE_MEMORY_IMPORT.module]: { [IMAGE_MEMORY_IMPORT.name]: memoryOf(split) } });
  return { whole, split };
}

const core = async (wat: string): Promise<Uint8Array> => (await parse(wat)) as Uint8Array;

afterEach(() => {
  delete process.env.TOOLHOST_ENGINE_SPLIT;
});

describe('splitting a core module', () => {
  it('gives a module of active segments an engine and an image whose instance is the whole module\'s', async () => {
    process.env.TOOLHOST_ENGINE_SPLIT = 'always';
    const bytes = await core(`(module (memory (export "m") 1)
      (data (i32.const 16) "hello") (data (i32.const 18) "XY") (data (i32.const 4000) "\\01\\02")
      (func (export "read") (param i32) (result i32) (i32.load8_u (local.get 0))))`);
    const { whole, split } = bothInstances(bytes);
    expect(Buffer.compare(Buffer.from(memoryOf(split).buffer), Buffer.from(memoryOf(whole).buffer))).toBe(0);
    const read = split.exports.read as (at: number) => number;
    expect([read(16), read(18), read(19), read(4001)]).toEqual(['h'.charCodeAt(0), 'X'.charCodeAt(0), 'Y'.charCodeAt(0), 2]);
  });

  it('leaves whole a module whose code names a data segment (memory.init of an active segment traps in the whole module)', async () => {
    process.env.TOOLHOST_ENGINE_SPLIT = 'always';
    const init = await core(`(module (memory 1) (data (i32.const 0) "abcd")
      (func (export "probe") (memory.init 0 (i32.const 8) (i32.const 0) (i32.const 4))))`);
    // The split alone would be made; its engine does not compile, so it is refused.
    expect(splitEngine(init)).toBeDefined();
    expect(await splitVerified(init)).toBeUndefined();
    expect(await splitVerified(await core('(module (memory 1) (data (i32.const 0) "abcd") (func (export "drop") (data.drop 0)))'))).toBeUndefined();
    // Control: the same module without the instruction is split.
    expect(await splitVerified(await core('(module (memory 1) (data (i32.const 0) "abcd") (func (export "f")))'))).toBeDefined();
  });

  it('leaves whole a module with a passive segment, a start function or an imported memory', async () => {
    process.env.TOOLHOST_ENGINE_SPLIT = 'always';
    expect(splitEngine(await core('(module (memory 1) (data "passive") (data (i32.const 0) "x"))'))).toBeUndefined();
    expect(splitEngine(await core('(module (memory 1) (data (i32.const 0) "x") (func $s (i32.store (i32.const 0) (i32.const 7))) (start $s))'))).toBeUndefined();
    expect(splitEngine(await core('(module (import "env" "mem" (memory 1)) (data (i32.const 0) "x"))'))).toBeUndefined();
    expect(splitEngine(await core('(module (global $g i32 (i32.const 64)) (memory 1) (data (global.get $g) "x"))'))).toBeUndefined();
    // Control: active segments at constant offsets alone are split.
    expect(splitEngine(await core('(module (memory 1) (data (i32.const 0) "x"))'))).toBeDefined();
  });

  it('leaves whole a module whose data is small unless told to split every module', async () => {
    const bytes = await core('(module (memory 1) (data (i32.const 0) "x"))');
    expect(splitEngine(bytes)).toBeUndefined();
    process.env.TOOLHOST_ENGINE_SPLIT = 'always';
    expect(splitEngine(bytes)).toBeDefined();
  });
});

describe.runIf(hasJs)('componentize-js engines', () => {
  it('are the same bytes for two distinct tools, and engine + image instantiate to each tool\'s own memory', async () => {
    const text = engineModuleOf(example('text'));
    const json = engineModuleOf(example('json'));
    const [a, b] = [(await splitVerified(text))!, (await splitVerified(json))!];
    expect(a).toBeDefined();
    expect(Buffer.compare(Buffer.from(a.engine), Buffer.from(b.engine))).toBe(0);
    expect(Buffer.compare(Buffer.from(a.image), Buffer.from(b.image))).not.toBe(0);
    for (const bytes of [text, json]) {
      const { whole, split } = bothInstances(bytes);
      expect(Buffer.compare(Buffer.from(memoryOf(split).buffer), Buffer.from(memoryOf(whole).buffer))).toBe(0);
    }
  });

  it.each(CONTAINMENTS)('runs split tools in %s containment: calls answer, and a used instance is restored', async (containment) => {
    const registry = makeRegistry({ sandbox: { cacheDir: freshCacheDir(), threads: 1, containment } });
    try {
      await registry.registerWasmTools([example('text'), example('json')]);
      for (let i = 0; i < 3; i += 1) {
        const echoed = await registry.execute('js_echo', { text: `call ${i}` });
        expect(echoed.error).toBeUndefined();
        expect(JSON.stringify(echoed.structuredContent ?? echoed.content)).toContain(`call ${i}`);
      }
      const last = await registry.execute('js_echo', { text: 'again' });
      expect(last.accounting?.instance).toBe('restored');
    } finally {
      await registry.close();
    }
  });
});
