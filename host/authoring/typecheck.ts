/**
 * Type-check a TypeScript tool project the way its `npm run build` does
 * (`tsc -p tsconfig.json`, with `--noEmit`): the project's own TypeScript and
 * its own tsconfig. `toolhost build` strips types without checking them
 * (rolldown); `toolhost dev` runs this first, so a type error keeps the last
 * good build serving instead of reloading code that does not type-check.
 *
 * Not guaranteed: a check at all when the project has no tsconfig.json or no
 * TypeScript installed (the result says which, so the caller can tell the
 * author once).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { BuildError } from './errors.js';

export type TypeCheck =
  | { checked: true; ms: number }
  | { checked: false; why: string };

/**
 * How long tsc may take before the check is given up: a backstop only. A new project's check costs ~5 s of CPU
 * (@types/node and the toolkit's types: ~500 files), which took over two minutes of wall time on a 2-core machine
 * at a load average of 30.
 */
const TSC_TIMEOUT_MS = 600_000;

/** The project's own `typescript/bin/tsc`, or undefined when it has none installed. */
export function projectTsc(dir: string): string | undefined {
  try {
    const manifest = createRequire(join(dir, 'package.json')).resolve('typescript/package.json');
    const tsc = join(dirname(manifest), 'bin', 'tsc');
    return existsSync(tsc) ? tsc : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Run `tsc --noEmit -p tsconfig.json` in `dir`; throws BuildError (COMPILE_FAILED) with tsc's diagnostics when
 * the project does not type-check.
 */
export async function typeCheckProject(dir: string): Promise<TypeCheck> {
  if (!existsSync(join(dir, 'tsconfig.json'))) return { checked: false, why: 'the project has no tsconfig.json' };
  const tsc = projectTsc(dir);
  if (tsc === undefined) return { checked: false, why: 'TypeScript is not installed in the project (npm install)' };
  const started = performance.now();
  const outcome = await new Promise<{ code: number | null; output: string }>((resolveRun) => {
    execFile(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: dir, timeout: TSC_TIMEOUT_MS, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolveRun({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
  if (outcome.code !== 0) {
    const shown = outcome.output === '' ? `tsc ended with ${outcome.code ?? 'a signal (timed out?)'}` : outcome.output;
    throw new BuildError('COMPILE_FAILED', `type errors (tsc --noEmit -p tsconfig.json):\n${shown}`);
  }
  return { checked: true, ms: Math.round(performance.now() - started) };
}
