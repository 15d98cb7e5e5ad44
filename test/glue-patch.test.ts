import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ComponentCache } from '../host/sandbox/load/component-cache.js';
import { patchGlue } from '../host/sandbox/load/glue-patch.js';
import { growerComponent } from './fixtures/wat/grower.js';
import { example, freshCacheDir, hasCGuests } from './helpers.js';

describe('the glue rewrite', () => {
  it('replaces every WebAssembly.promising probe with a helper that cannot throw without JSPI', async () => {
    const source = [
      'export function instantiate() {',
      '  let a, b;',
      '  try { a = WebAssembly.promising(f); } catch (err) { a = f; }',
      '  try { b = WebAssembly.promising(g); } catch (err) { b = g; }',
      '  return [a, b];',
      '}',
      'function f() {} function g() {}',
    ].join('\n');
    const patched = patchGlue(source);
    expect(patched.promisingCalls).toBe(2);
    expect(patched.source).not.toMatch(/WebAssembly\.promising\(/);
    const url = `data:text/javascript;base64,${Buffer.from(patched.source).toString('base64')}`;
    const { instantiate } = (await import(url)) as { instantiate: () => Array<() => void> };
    const [a, b] = instantiate();
    // Node 20 has no JSPI: the helper hands the function back, as the catch did.
    expect(typeof (WebAssembly as { promising?: unknown }).promising).toBe('undefined');
    expect(a!.name).toBe('f');
    expect(b!.name).toBe('g');
  });

  it('leaves glue without probes untouched', () => {
    expect(patchGlue('export const x = 1;\n')).toEqual({ source: 'export const x = 1;\n', promisingCalls: 0, exposesState: false, capsHandles: false, debugLogHoisted: false });
  });

  it('reads JCO_DEBUG once, when the glue loads, instead of on every debug log call', async () => {
    const source = [
      'export function run(n) {',
      '  const _debugLog = (...args) => {',
      '    if (!globalThis?.process?.env?.JCO_DEBUG) { return; }',
      '    console.debug(...args);',
      '  };',
      '  for (let i = 0; i < n; i += 1) _debugLog("step", i);',
      '  return n;',
      '}',
    ].join('\n');
    const patched = patchGlue(source);
    expect(patched.debugLogHoisted).toBe(true);
    expect(patched.source).not.toContain('process?.env?.JCO_DEBUG) { return; }');
    const url = `data:text/javascript;base64,${Buffer.from(patched.source).toString('base64')}`;
    const reads: string[] = [];
    const env = process.env;
    // Count the environment reads the patched module makes: one, while it loads.
    process.env = new Proxy(env, { get: (target, key) => (key === 'JCO_DEBUG' && reads.push(String(key)), Reflect.get(target, key)) });
    try {
      const { run } = (await import(url)) as { run: (n: number) => number };
      expect(run(50)).toBe(50);
    } finally {
      process.env = env;
    }
    expect(reads).toEqual(['JCO_DEBUG']);
  });

  it.skipIf(!hasCGuests)('is applied to the glue the cache writes', async () => {
    const cache = new ComponentCache(freshCacheDir());
    const entry = await cache.prepare('ctools', readFileSync(example('ctools')), 'ctools');
    const glue = readFileSync(join(entry.dir, 'component.mjs'), 'utf8');
    expect(glue).toContain('__toolhostPromising(');
    // The state digest a snapshot reset checks (worker/instance-snapshot.ts).
    expect(glue).toContain("Symbol.for('toolhost.glue-state')");
    expect(glue).not.toMatch(/WebAssembly\.promising\(/);
    expect(glue).toContain('__toolhostJcoDebug');
  });

  it('counts the handles an instance holds, in the glue of a component that is handed resources', async () => {
    const cache = new ComponentCache(freshCacheDir());
    const entry = await cache.prepare('hoarder', await growerComponent({ holders: 1, hoardPollables: 'keep' }), 'hoarder');
    const glue = readFileSync(join(entry.dir, 'component.mjs'), 'utf8');
    expect(glue).toContain('__toolhostHandles.held += 1;');
    expect(glue).toContain('if (own && __toolhostHandles.held > 0) __toolhostHandles.held -= 1;');
    expect(patchGlue(glue.replace('function rscTableCreateOwn(table, rep) {', 'function rscTableCreateOwn(table, rep, x) {')).capsHandles).toBe(false);
  });
});
