import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from '@bytecodealliance/jco';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolhostError, type ToolRegistry } from '../host/index.js';
import { WasmReader } from '../host/sandbox/load/wasm-binary.js';
import { example, examplesDir, freshCacheDir, hasCGuests, makeRegistry } from './helpers.js';

const registries: ToolRegistry[] = [];
function registry(cacheDir?: string): ToolRegistry {
  const created = makeRegistry(cacheDir ? { sandbox: { cacheDir } } : {});
  registries.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.close()));
});

function tempFile(name: string, content: Uint8Array | string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'toolhost-load-')), name);
  writeFileSync(path, content);
  return path;
}

async function loadError(paths: string | string[], containment?: 'thread' | 'process'): Promise<ToolhostError> {
  const loading = containment ? makeRegistry({ sandbox: { containment, cacheDir: freshCacheDir() } }) : registry();
  if (containment) registries.push(loading);
  const error = await loading.registerWasmTools(paths).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ToolhostError);
  return error as ToolhostError;
}

/**
 * The component's bytes with its first core module's first function of four bytes or more rewritten to `unreachable;
 * throw_ref; nop...; end`. jco's validator accepts that (exception handling; after `unreachable`
 * anything type-checks), Node 20's V8 does not know the opcode: the component transpiles and its
 * core module does not compile, as a fuzzed component once found.
 */
function withCodeV8Refuses(component: Uint8Array): Uint8Array {
  const bytes = component.slice();
  const sections = (reader: WasmReader, end: number, visit: (id: number, start: number, size: number) => boolean): void => {
    while (reader.offset < end) {
      const id = reader.byte();
      const size = reader.leb();
      if (visit(id, reader.offset, size)) return;
      reader.skip(size);
    }
  };
  let done = false;
  sections(new WasmReader(bytes, 8), bytes.length, (id, start, size) => {
    if (id !== 1) return false; // 1: a core module section
    sections(new WasmReader(bytes, start + 8), start + size, (moduleId, codeStart) => {
      if (moduleId !== 10) return false; // 10: the code section
      const code = new WasmReader(bytes, codeStart);
      // The first body long enough to hold the four bytes.
      let bodySize = 0;
      for (let left = code.leb(); left > 0 && bodySize < 4; left--) {
        bodySize = code.leb();
        if (bodySize < 4) code.skip(bodySize);
      }
      if (bodySize < 4) return true;
      const body = [0x00, 0x00, 0x0a, ...new Array<number>(bodySize - 4).fill(0x01), 0x0b]; // no locals, unreachable, throw_ref, nops, end
      bytes.set(body, code.offset);
      done = true;
      return true;
    });
    return true;
  });
  if (!done) throw new Error('no core code section found');
  return bytes;
}

describe('loading components', () => {
  it('refuses garbage bytes with COMPONENT_INVALID and no stack trace in the message', async () => {
    const error = await loadError(tempFile('garbage.wasm', 'definitely not wasm'));
    expect(error.code).toBe('COMPONENT_INVALID');
    expect(error.message).toMatch(/not a WebAssembly binary/);
    expect(error.message).not.toMatch(/\n\s+at /);
  });

  it('refuses a core module and says how to make it a component', async () => {
    const core = await parse('(module (func (export "f")))');
    const error = await loadError(tempFile('core.wasm', core));
    expect(error.code).toBe('COMPONENT_INVALID');
    expect(error.message).toMatch(/core WebAssembly module, not a component/);
  });

  it('refuses a component that does not export toolhost:tool/tool and says what is missing', async () => {
    const empty = await parse('(component)');
    const error = await loadError(tempFile('empty.wasm', empty));
    expect(error.code).toBe('COMPONENT_INVALID');
    expect(error.message).toContain('does not export toolhost:tool/tool@0.1.0');
  });

  it('refuses a truncated component', async () => {
    const bytes = readFileSync(example('json'));
    const error = await loadError(tempFile('cut.wasm', bytes.subarray(0, 5000)));
    expect(error.code).toBe('COMPONENT_INVALID');
  });

  it.runIf(hasCGuests).each(['thread', 'process'] as const)('refuses a component whose core code does not compile, naming the module (%s containment)', async (containment) => {
    const error = await loadError(tempFile('bad-code.wasm', withCodeV8Refuses(readFileSync(example('ctools')))), containment);
    expect(error.code).toBe('COMPONENT_INVALID');
    expect(error.message).toMatch(/core module \S+ does not compile \(Compiling function #\d+(:"[^"]*")? failed/);
  });

  it('refuses a missing path', async () => {
    const error = await loadError('/no/such/component.wasm');
    expect(error).toMatchObject({ code: 'COMPONENT_INVALID', message: expect.stringContaining('ENOENT') });
  });

  it('registers nothing when one of several components is bad', async () => {
    const r = registry();
    await expect(r.registerWasmTools([example('json'), tempFile('bad.wasm', 'x')])).rejects.toMatchObject({ code: 'COMPONENT_INVALID' });
    expect(r.names()).toEqual([]);
  });

  it('loads every component of a directory', async () => {
    const r = registry();
    const report = await r.registerWasmTools(examplesDir);
    expect(report.components.map((c) => c.component)).toEqual(expect.arrayContaining(['json', 'text']));
    expect(r.names()).toEqual(expect.arrayContaining(['json_query', 'json_pointer', 'word_count', 'regex_search', 'js_echo']));
  });

  it('serves the second load of a component from the on-disk cache, without transpiling', async () => {
    const cacheDir = freshCacheDir();
    // A small component when there is one: transpiling a componentize-js one (12 MB) costs ~2 s of CPU.
    const component = example(hasCGuests ? 'ctools' : 'json');
    const first = await registry(cacheDir).registerWasmTools(component);
    expect(first.components[0]?.cache).toBe('miss');
    // A new registry reads the cache as a new process would.
    const second = await registry(cacheDir).registerWasmTools(component);
    expect(second.components[0]?.cache).toBe('hit');
    expect(second.components[0]?.id).toBe(first.components[0]?.id);
  });

  it.runIf(hasCGuests)('namespaces colliding tool names as <component>.<tool> and reports it', async () => {
    const copy = join(mkdtempSync(join(tmpdir(), 'toolhost-copy-')), 'other.wasm');
    copyFileSync(example('ctools'), copy);
    const r = registry();
    await r.registerWasmTools(example('ctools'));
    const report = await r.registerWasmTools(copy);
    expect(report.renamed).toEqual(expect.arrayContaining([{ component: 'other', tool: 'echo', registeredAs: 'other.echo' }]));
    expect(r.names()).toEqual(expect.arrayContaining(['echo', 'other.echo', 'sha256', 'other.sha256']));
    expect((await r.execute('other.echo', { x: 1 })).structuredContent).toEqual({ x: 1 });
  });
});
