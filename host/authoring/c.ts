/**
 * Build a tool component from C sources:
 *
 *   C sources + the SDK's toolhost.c --clang (wasm32-wasi, reactor)--> core module
 *             --jco componentEmbed (the tool world)--> core module + component-type
 *             --jco componentNew (+ the WASI preview1 adapter when needed)--> component
 *
 * The SDK (guest-tools/c/sdk) implements the canonical ABI of the tool world
 * by hand, so no wit-bindgen is involved; it is found in the installed
 * package, never copied into a project. A WIT of package toolhost:tool@0.2.x
 * compiles it (and the tool's sources) with TOOLHOST_WORLD_0_2 defined.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeComponent } from './contained.js';
import { BuildError } from './errors.js';
import { cSdkDir, worldWitPath } from './paths.js';
import { C_TOOLCHAIN_INSTALL, probeCToolchain } from './toolchain.js';

const execFileP = promisify(execFile);

export interface CBuildOptions {
  /** The tool's C files (the SDK's toolhost.c is added unless `withSdk` is false). */
  sources: string[];
  /** Extra -I directories (the SDK's is always added). */
  includeDirs?: string[];
  /** Where to write the component (parent directories are created). */
  outFile: string;
  /** The WIT file (default: the shipped tool world). */
  witPath?: string;
  /** The world in it (default `tool-provider`). */
  world?: string;
  /** Compile the SDK's toolhost.c in (default true). */
  withSdk?: boolean;
}

export interface CBuildResult {
  outFile: string;
  size: number;
  coreSize: number;
  /** The core module's imports, as "module#name". */
  imports: string[];
  /** Whether the WASI preview1 adapter was linked in (only when the module calls WASI). */
  adapter: boolean;
  /** clang's warnings (stderr), if any. */
  warnings: string;
}

/** Whether clang for wasm32-wasi is available. */
export function hasCToolchain(): boolean {
  return probeCToolchain().found !== undefined;
}

export async function buildCComponent(options: CBuildOptions): Promise<CBuildResult> {
  const { sources, includeDirs = [], outFile, witPath = worldWitPath(), world = 'tool-provider', withSdk = true } = options;
  const probe = probeCToolchain();
  const toolchain = probe.found;
  if (!toolchain) {
    throw new BuildError('TOOLCHAIN_MISSING', `C tools need clang with the wasm32-wasi target, wasm-ld and wasi-libc (${probe.problems.join('; ')}).\nInstall: ${C_TOOLCHAIN_INSTALL}`);
  }
  if (sources.length === 0) throw new BuildError('PROJECT_INVALID', 'no C sources to build');
  const sdk = cSdkDir();
  const allSources = withSdk ? [...sources, join(sdk, 'toolhost.c')] : sources;

  const { componentEmbed, componentNew, preview1AdapterReactorPath } = await import('@bytecodealliance/jco');
  const tmp = await mkdtemp(join(tmpdir(), 'toolhost-c-'));
  try {
    const core = join(tmp, 'core.wasm');
    const witSource = await readFile(witPath, 'utf8');
    const args = [
      '--target=wasm32-wasi',
      ...toolchain.sysrootArgs,
      '-O2',
      '-mexec-model=reactor', // no main: crt1-reactor.o, exports _initialize
      '-std=c11',
      '-Wall',
      ...(/^package toolhost:tool@0\.2\./m.test(witSource) ? ['-DTOOLHOST_WORLD_0_2'] : []),
      ...[sdk, ...includeDirs].map((dir) => `-I${dir}`),
      ...allSources,
      '-o',
      core,
      // wasi-libc's archives carry DWARF; drop it but keep the name section (readable trap backtraces).
      '-Wl,--strip-debug',
      // The stack below the data, so an overflow traps instead of silently overwriting globals.
      '-Wl,--stack-first',
    ];
    let warnings = '';
    try {
      warnings = (await execFileP(toolchain.clang, args, { maxBuffer: 16 << 20 })).stderr;
    } catch (error) {
      const failure = error as { stderr?: string; message?: string };
      throw new BuildError('COMPILE_FAILED', `clang failed:\n${(failure.stderr || failure.message || '').trim()}`);
    }

    const coreBytes = await readFile(core);
    const imports = WebAssembly.Module.imports(new WebAssembly.Module(coreBytes));
    // jco's tools run on preview2-shim without preopens: hand them the WIT as text.
    const embedded = await componentEmbed({ binary: coreBytes, witSource, world, stringEncoding: 'utf8' });
    // Only a module that calls WASI preview1 needs the (~100 KB) adapter.
    const needsWasi = imports.some((entry) => entry.module === 'wasi_snapshot_preview1');
    const adapters: Array<[string, Uint8Array]> = needsWasi ? [['wasi_snapshot_preview1', await readFile(preview1AdapterReactorPath())]] : [];
    let component: Uint8Array;
    try {
      component = await componentNew(embedded, adapters);
    } catch (error) {
      const message = String((error as Error).message ?? error);
      const hint = /find export .*toolhost:tool\/tool/.test(message)
        ? '\n(no tool table: does a source use TH_EXPORT_TOOLS(...)? The SDK\'s toolhost.c must be compiled in.)'
        : '';
      throw new BuildError('COMPILE_FAILED', `the core module does not fit the tool world: ${message}${hint}`);
    }

    await writeComponent(outFile, component);
    return {
      outFile,
      size: component.byteLength,
      coreSize: coreBytes.byteLength,
      imports: imports.map((entry) => `${entry.module}#${entry.name}`),
      adapter: needsWasi,
      warnings,
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
