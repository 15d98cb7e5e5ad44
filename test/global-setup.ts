/**
 * Build what the tests run, from source: the host (the CLI tests spawn
 * dist/), the example tools and the test fixtures (guests are skipped when up
 * to date). C guests need clang; without it they are skipped with a message
 * and their tests are skipped too.
 *
 * Then warm the shared transpile cache: every component is transpiled and
 * described once here, two directories in parallel, instead of by whichever
 * test files happen to load it first (sometimes two at once).
 */
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The newest modification time among what `tsc -p tsconfig.json` compiles (and the config itself). */
function newestSource(root: string): number {
  let newest = statSync(join(root, 'tsconfig.json')).mtimeMs;
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (/\.c?ts$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(join(root, 'host'));
  visit(join(root, 'scripts'));
  return newest;
}

/** When dist/ was last built (0 when it was not). */
function builtAt(root: string): number {
  try {
    return statSync(join(root, 'dist', '.tsbuildinfo')).mtimeMs;
  } catch {
    return 0;
  }
}

export default async function setup(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  // The host is compiled when a source is newer than the last build (tsc's own up-to-date check still costs ~2 s).
  if (newestSource(root) > builtAt(root)) {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  }
  const script = fileURLToPath(new URL('../scripts/build-guests.mjs', import.meta.url));
  execFileSync(process.execPath, [script], { stdio: 'inherit' });
  execFileSync(process.execPath, [script, '--fixtures'], { stdio: 'inherit' });

  const cli = join(root, 'dist', 'host', 'cli', 'main.js');
  const env = { ...process.env, TOOLHOST_CACHE_DIR: join(root, 'node_modules', '.cache', 'toolhost-test'), TOOLHOST_LOG: 'silent' };
  const warm = (dir: string): Promise<unknown> =>
    promisify(execFile)(process.execPath, [cli, 'list', '--load', join(root, dir)], { cwd: root, env }).catch((error: Error) => {
      // Best effort: a component that fails here fails again, with its own message, in the test that loads it.
      process.stderr.write(`global setup: warming the transpile cache with ${dir} failed: ${error.message.split('\n')[0]}\n`);
    });
  await Promise.all([warm('guest-tools/dist'), warm('test/fixtures/dist')]);
}
