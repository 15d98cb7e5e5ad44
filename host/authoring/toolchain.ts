/**
 * The toolchains guest builds need, found without building anything: clang
 * for wasm32-wasi (C tools) and componentize-js with rolldown (JS/TS tools).
 * Used by `toolhost build` (to fail early with the install command) and
 * `toolhost doctor`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TARGET = '--target=wasm32-wasi';

/** How to get the C toolchain, said in every message about it missing. */
export const C_TOOLCHAIN_INSTALL =
  'Debian/Ubuntu: sudo apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32; ' +
  'elsewhere: install wasi-sdk (https://github.com/WebAssembly/wasi-sdk) and set CLANG=<wasi-sdk>/bin/clang ' +
  '(or set WASI_SYSROOT to a wasi-libc sysroot for your own clang)';

/** How to get the JS toolchain when the installed package lacks it. */
export const JS_TOOLCHAIN_INSTALL = 'npm install @bytecodealliance/componentize-js@0.23.0 rolldown';

export interface CToolchain {
  clang: string;
  /** `--sysroot=...` when clang needs WASI_SYSROOT to find wasi-libc. */
  sysrootArgs: string[];
  /** clang's first version line. */
  version: string;
}

export interface CToolchainProbe {
  found?: CToolchain;
  /** What was tried and why it did not do (for `doctor`). */
  problems: string[];
}

function run(cmd: string, args: string[]): string | null {
  const result = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return result.status === 0 ? result.stdout.trim() : null;
}

// What is missing for `clang` (with `extra` args) to link a wasm32-wasi reactor, or undefined when nothing is.
function missingFor(clang: string, extra: string[]): string | undefined {
  const libc = run(clang, [TARGET, ...extra, '-print-file-name=libc.a']);
  // Unresolved names come back bare ("libc.a" / "wasm-ld").
  if (!libc || !isAbsolute(libc) || !existsSync(libc)) return 'wasi-libc (libc.a for wasm32-wasi) not found';
  const ld = run(clang, [TARGET, ...extra, '-print-prog-name=wasm-ld']);
  if (!ld || (isAbsolute(ld) ? !existsSync(ld) : run(ld, ['--version']) === null)) return 'wasm-ld (lld) not found';
  const builtins = run(clang, [TARGET, ...extra, '-print-libgcc-file-name']);
  if (!builtins || !existsSync(builtins)) return `the wasm32 compiler-rt builtins (${builtins ?? 'libclang_rt.builtins-wasm32.a'}) not found`;
  return undefined;
}

let probed: CToolchainProbe | undefined;

/** Find clang able to build wasm32-wasi reactors (memoised; `CLANG` and `WASI_SYSROOT` override). */
export function probeCToolchain(): CToolchainProbe {
  if (probed) return probed;
  const problems: string[] = [];
  // CLANG is an override, not a hint: when set, it is the only clang tried (a broken one is reported, never replaced
  // by another clang on PATH).
  const override = process.env.CLANG;
  const candidates = override ? [override] : ['clang', 'clang-19', 'clang-18', 'clang-17', 'clang-16', 'clang-15', 'clang-14'];
  let sawClang = false;
  for (const clang of candidates) {
    const version = run(clang, ['--version']);
    if (version === null) continue;
    sawClang = true;
    const first = version.split('\n')[0] ?? clang;
    const missing = missingFor(clang, []);
    if (missing === undefined) return (probed = { found: { clang, sysrootArgs: [], version: first }, problems });
    const sysroot = process.env.WASI_SYSROOT;
    if (sysroot && missingFor(clang, [`--sysroot=${sysroot}`]) === undefined) {
      return (probed = { found: { clang, sysrootArgs: [`--sysroot=${sysroot}`], version: first }, problems });
    }
    problems.push(`${clang} (${first}): ${missing}`);
  }
  if (!sawClang) problems.push(override ? `CLANG=${override} does not run (\`${override} --version\` failed)` : 'clang not found on PATH (nor $CLANG)');
  return (probed = { problems });
}

export interface JsToolchainProbe {
  componentizeJs?: string;
  rolldown?: string;
  problems: string[];
}

/** The installed version of `name` as toolhost resolves it (ESM resolution: some packages export only `import`). */
function packageVersion(name: string): string | undefined {
  let dir: string;
  try {
    dir = dirname(fileURLToPath(import.meta.resolve(name)));
  } catch {
    return undefined;
  }
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
        if (parsed.name === name) return parsed.version;
      } catch {
        // keep looking upwards
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Whether componentize-js and rolldown can be loaded from where toolhost is installed. */
export function probeJsToolchain(): JsToolchainProbe {
  const componentizeJs = packageVersion('@bytecodealliance/componentize-js');
  const rolldown = packageVersion('rolldown');
  const problems: string[] = [];
  if (componentizeJs === undefined) problems.push('@bytecodealliance/componentize-js is not installed');
  if (rolldown === undefined) problems.push('rolldown is not installed');
  return { ...(componentizeJs === undefined ? {} : { componentizeJs }), ...(rolldown === undefined ? {} : { rolldown }), problems };
}
