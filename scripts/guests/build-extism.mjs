// Build the Extism echo plugin `toolhost bench` measures as a peer: plain
// wasm32 (no WASI, no libc), importing only the Extism kernel's
// `extism:host/env` functions; `echo` is exported by name.
//
//   clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -o OUT echo.c

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** @param {{ clang: string, sources: string[], outFile: string }} options */
export async function buildExtismPlugin({ clang, sources, outFile }) {
  const args = ['--target=wasm32', '-nostdlib', '-O2', '-Wl,--no-entry', '-Wl,--strip-all', '-o', outFile, ...sources];
  try {
    await execFileP(clang, args, { maxBuffer: 16 << 20 });
  } catch (error) {
    const detail = /** @type {{ stderr?: string }} */ (error).stderr ?? String(error);
    throw new Error(`clang failed on ${sources.join(' ')}:\n${detail}`);
  }
}
