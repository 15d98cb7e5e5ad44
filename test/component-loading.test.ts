import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from '@bytecodealliance/jco';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolhostError, type ToolRegistry } from '../host/index.js';
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

async function loadError(paths: string | string[]): Promise<ToolhostError> {
  const error = await registry().registerWasmTools(paths).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ToolhostError);
  return error as ToolhostError;
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
    const { readFileSync } = await import('node:fs');
    const bytes = readFileSync(example('json'));
    const error = await loadError(tempFile('cut.wasm', bytes.subarray(0, 5000)));
    expect(error.code).toBe('COMPONENT_INVALID');
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
