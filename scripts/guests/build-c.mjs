// Build a toolhost tool component from C sources.
//
//   C sources --clang (wasm32-wasi, reactor)--> core module
//             --jco componentEmbed (WIT world)--> core module + component-type
//             --jco componentNew--> component
//
// The C side implements the canonical ABI itself (guest-tools/c/sdk), so no
// wit-bindgen is involved. Needs clang with the wasm32 target, wasm-ld and a
// wasi-libc sysroot (Debian: clang, lld, wasi-libc, libclang-rt-dev-wasm32).
//
// Environment overrides: CLANG (the clang binary), WASI_SYSROOT (passed as
// --sysroot when clang does not find wasi-libc by itself).

import { spawnSync, execFile } from 'node:child_process';
import { existsSync, statSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, writeFile, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { componentEmbed, componentNew, preview1AdapterReactorPath } from '@bytecodealliance/jco';

const execFileP = promisify(execFile);

const TARGET = '--target=wasm32-wasi';

/** @type {{ clang: string, sysrootArgs: string[] } | null | undefined} */
let toolchain; // memoised result of probeToolchain()

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

// Whether `clang` (with `extra` args) finds wasi-libc and wasm-ld.
function usable(clang, extra) {
  const libc = run(clang, [TARGET, ...extra, '-print-file-name=libc.a']);
  // Unresolved names come back bare ("libc.a" / "wasm-ld").
  if (!libc || !isAbsolute(libc) || !existsSync(libc)) return false;
  const ld = run(clang, [TARGET, ...extra, '-print-prog-name=wasm-ld']);
  if (!ld) return false;
  return isAbsolute(ld) ? existsSync(ld) : run(ld, ['--version']) !== null;
}

function probeToolchain() {
  if (toolchain !== undefined) return toolchain;
  toolchain = null;
  const candidates = [process.env.CLANG, 'clang', 'clang-18', 'clang-17', 'clang-16', 'clang-15', 'clang-14']
    .filter(Boolean);
  for (const clang of candidates) {
    if (run(clang, ['--version']) === null) continue;
    if (usable(clang, [])) {
      toolchain = { clang, sysrootArgs: [] };
      break;
    }
    const sysroot = process.env.WASI_SYSROOT;
    if (sysroot && usable(clang, [`--sysroot=${sysroot}`])) {
      toolchain = { clang, sysrootArgs: [`--sysroot=${sysroot}`] };
      break;
    }
  }
  return toolchain;
}

/**
 * The clang binary to use when it can build wasm32-wasi reactors (clang
 * itself, wasm-ld and the wasi-libc sysroot all found), else null.
 * @returns {string | null}
 */
export function findClang() {
  return probeToolchain()?.clang ?? null;
}

// WIT text for `witPath`: a .wit file, or a directory holding exactly one.
// (jco's tools run on preview2-shim without preopens, so they cannot read
// paths themselves; we hand them the source text.)
async function readWit(witPath) {
  if (!statSync(witPath).isDirectory()) return readFile(witPath, 'utf8');
  const files = readdirSync(witPath).filter((f) => f.endsWith('.wit'));
  if (files.length !== 1) {
    throw new Error(`${witPath}: expected exactly one .wit file, found ${files.length}`);
  }
  return readFile(join(witPath, files[0]), 'utf8');
}

/**
 * Compile C sources into a component for `world` and write it to `outFile`.
 *
 * @param {object} opts
 * @param {string[]} opts.sources      C files
 * @param {string[]} [opts.includeDirs] extra -I directories (e.g. the SDK)
 * @param {string} opts.outFile        where to write the component
 * @param {string} opts.witPath        the WIT file, or a directory with one
 * @param {string} [opts.world]        the world to target ('tool-provider')
 * @returns {Promise<{ outFile: string, size: number, coreSize: number,
 *   imports: string[], adapter: boolean, warnings: string }>}
 *   `imports` lists the core module's imports as "module#name";
 *   `adapter` tells whether the WASI preview1 adapter had to be linked in.
 */
export async function buildCComponent({ sources, includeDirs = [], outFile, witPath, world = 'tool-provider' }) {
  const tc = probeToolchain();
  if (!tc) throw new Error('no usable clang for wasm32-wasi (needs clang, wasm-ld and wasi-libc)');
  if (!sources?.length) throw new Error('buildCComponent: no sources');

  const tmp = await mkdtemp(join(tmpdir(), 'toolhost-c-'));
  try {
    const core = join(tmp, 'core.wasm');
    const args = [
      TARGET,
      ...tc.sysrootArgs,
      '-O2',
      '-mexec-model=reactor', // no main: crt1-reactor.o, exports _initialize
      '-std=c11',
      '-Wall',
      ...includeDirs.map((d) => `-I${d}`),
      ...sources,
      '-o',
      core,
      // wasi-libc's archives carry DWARF; drop it but keep the name section
      // (readable trap backtraces for a few hundred bytes).
      '-Wl,--strip-debug',
      // Put the stack below the data, so an overflow traps instead of
      // silently overwriting globals.
      '-Wl,--stack-first',
    ];
    let warnings = '';
    try {
      const r = await execFileP(tc.clang, args, { maxBuffer: 16 << 20 });
      warnings = r.stderr;
    } catch (e) {
      const detail = (e.stderr || e.message || '').trim();
      throw new Error(`clang failed for ${sources.join(', ')}:\n${detail}`);
    }

    const coreBytes = await readFile(core);
    const imports = WebAssembly.Module.imports(new WebAssembly.Module(coreBytes));

    // Attach the world's type information (custom section "component-type").
    const embedded = await componentEmbed({
      binary: coreBytes,
      witSource: await readWit(witPath),
      world,
      stringEncoding: 'utf8',
    });

    // Only a module that calls WASI preview1 needs the (~100 KB) adapter.
    const needsWasi = imports.some((i) => i.module === 'wasi_snapshot_preview1');
    const adapters = needsWasi
      ? [['wasi_snapshot_preview1', await readFile(preview1AdapterReactorPath())]]
      : [];
    const component = await componentNew(embedded, adapters);

    await mkdir(dirname(outFile), { recursive: true });
    await writeFile(outFile, component);
    return {
      outFile,
      size: component.byteLength,
      coreSize: coreBytes.byteLength,
      imports: imports.map((i) => `${i.module}#${i.name}`),
      adapter: needsWasi,
      warnings,
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
