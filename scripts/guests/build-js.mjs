// Build one JavaScript tool into a WebAssembly component with componentize-js.
//
//   import { buildJsComponent } from './scripts/guests/build-js.mjs';
//   const { bytes, ms, imports } = await buildJsComponent({
//     source: 'guest-tools/text/index.js',
//     outFile: 'guest-tools/dist/text.wasm',
//     witPath: 'wit/tool.wit',
//   });
//
// A build takes 2-8 s and yields a ~12 MB component (the SpiderMonkey engine
// plus the snapshotted JS), so callers should skip sources that have not
// changed. Compare sources, not outputs: builds are not byte-reproducible (the
// snapshot embeds componentize-js's random temp directory in stack traces).

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { componentize } from '@bytecodealliance/componentize-js';
import { componentWit } from '@bytecodealliance/jco';

/**
 * @param {object} opts
 * @param {string} opts.source   path to the guest's index.js (an ES module; it may import relative files)
 * @param {string} opts.outFile  where to write the component (parent directories are created)
 * @param {string} opts.witPath  path to the .wit file holding the world
 * @param {string} [opts.world]  world name in that file
 * @param {string[]} [opts.disableFeatures] componentize-js features to leave out
 *   ('stdio' | 'random' | 'clocks' | 'http' | 'fetch-event'); stdio, random and
 *   clocks are kept by default so console.*, Math.random and Date.now work.
 * @returns {Promise<{ bytes: number, ms: number, imports: string[] }>}
 *   the component's size, the build time (componentize + write), and the interfaces the component
 *   imports (e.g. 'toolhost:tool/host@0.1.0', 'wasi:cli/stdout@0.2.12').
 */
export async function buildJsComponent({
  source,
  outFile,
  witPath,
  world = 'tool-provider',
  disableFeatures = ['http', 'fetch-event'],
}) {
  const started = performance.now();

  // Pass the WIT as text: componentize-js reads `witPath` through its own WASI
  // filesystem shim, which has no preopened directories and so fails with
  // "No such file or directory (os error 44)".
  const witWorld = await readFile(witPath, 'utf8');

  const { component } = await componentize({
    sourcePath: resolve(source),
    witWorld,
    worldName: world,
    disableFeatures,
  });

  await mkdir(dirname(resolve(outFile)), { recursive: true });
  await writeFile(outFile, component);
  const ms = Math.round(performance.now() - started);

  // componentize's own `imports` lists only the JS-level host imports; read
  // the component's WIT instead to see every interface it imports, WASI
  // included (~0.2 s). Lines look like `  import wasi:io/poll@0.2.12;` (or
  // `import name: func(...)` for a bare function import).
  const wit = await componentWit(component);
  const imports = [...wit.matchAll(/^\s*import\s+([^\s;]+?)\s*(?:;|:\s)/gm)].map((m) => m[1]);

  return { bytes: component.byteLength, ms, imports };
}
