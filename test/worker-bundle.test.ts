/**
 * The sandbox worker loads its entry as one file (dist/host/sandbox/worker/entry.bundle.js, made by
 * scripts/bundle-worker.mjs after tsc): every host module it needs is inside, and only packages and Node's
 * builtins are imported, so it resolves them from node_modules as the unbundled entry did. The bootstrap takes
 * entry.js instead when the bundle is older than the last compile.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.js';

const workerDir = join(root, 'dist', 'host', 'sandbox', 'worker');
const bundle = join(workerDir, 'entry.bundle.js');

describe('the worker bundle', () => {
  it('is made from the last compile (so the bootstrap takes it) and holds every host module the entry imports', () => {
    expect(statSync(bundle).mtimeMs).toBeGreaterThanOrEqual(statSync(join(root, 'dist', '.tsbuildinfo')).mtimeMs);
    expect(statSync(bundle).mtimeMs).toBeGreaterThanOrEqual(statSync(join(workerDir, 'entry.js')).mtimeMs);
    const text = readFileSync(bundle, 'utf8');
    const specifiers = [...text.matchAll(/^import\s[^'"]*?from\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm)].map((match) => match[1] ?? match[2]!);
    expect(specifiers.length).toBeGreaterThan(3);
    expect(specifiers.filter((specifier) => specifier.startsWith('.') || specifier.startsWith('/'))).toEqual([]);
    expect(text).toMatch(/export \{ \w+ as default \}/);
  });

  it('is what the bootstrap loads, unless tsc compiled after it was made', () => {
    const bootstrap = readFileSync(join(workerDir, 'bootstrap.cjs'), 'utf8');
    expect(bootstrap).toContain("'./entry.bundle.js'");
    expect(bootstrap).toContain("'.tsbuildinfo'");
  });
});
