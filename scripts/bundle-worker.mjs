#!/usr/bin/env node
// Bundle the sandbox worker's entry (dist/host/sandbox/worker/entry.js and the
// ~60 host modules it imports) into one file next to it, entry.bundle.js, which
// the worker bootstrap loads. Run after `tsc -p tsconfig.json` (npm run build
// and build:host do; the test suite's global setup does when it compiles).
//
// Why: every worker thread loads the entry anew, and Node's ES module loader
// pays per module (resolve, stat, read, link). One file instead of ~60 halves a
// worker's start: ~35 ms of CPU instead of ~70 ms on the 2-core machine (a
// worker thread that loads nothing costs ~20 ms). Workers start at every pool
// start, after every crash or kill, and when a pool grows.
//
// Packages (bare specifiers, node: builtins) stay imports: they resolve from
// node_modules as before, so `import.meta.resolve` of preview2-shim and the
// shim's own relative imports keep working.
//
// Beside it, dist/host/core/schema.bundle.js: the schema compiler a worker
// loads (sandbox/worker/args-check.ts) with ajv inside. ajv is ~60 CommonJS
// files; one file instead loads in ~42 ms instead of ~86 ms (wall, a fresh
// worker thread, 8 runs each on the 2-core machine), and every worker loads it.
// The bundled worker takes it; an unbundled one (tsc alone) takes schema.js.

import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const workerDir = join(root, 'dist', 'host', 'sandbox', 'worker');
const input = join(workerDir, 'entry.js');

try {
  statSync(input);
} catch {
  process.stderr.write(`bundle-worker: ${input} is missing: run \`tsc -p tsconfig.json\` first (npm run build does)\n`);
  process.exit(1);
}

await build({
  input: join(root, 'dist', 'host', 'core', 'schema.js'),
  platform: 'node',
  // ajv and its dependencies go in; Node's builtins and re2js (required lazily, only for patterns) stay out.
  external: (id) => id.startsWith('node:') || id === 're2js',
  logLevel: 'warn',
  output: { file: join(root, 'dist', 'host', 'core', 'schema.bundle.js'), format: 'esm', sourcemap: true },
});

await build({
  input,
  platform: 'node',
  // Only the host's own files (relative and absolute paths) go into the bundle.
  external: (id) => !id.startsWith('.') && !id.startsWith('/'),
  logLevel: 'warn',
  output: { file: join(workerDir, 'entry.bundle.js'), format: 'esm', sourcemap: true },
});
