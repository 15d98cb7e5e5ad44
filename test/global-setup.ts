/**
 * Build what the tests run, from source: the host (the CLI tests spawn
 * dist/), the example tools and the test fixtures (guests are skipped when up
 * to date). C guests need clang; without it they are skipped with a message
 * and their tests are skipped too.
 *
 * Then warm the shared transpile cache: every component is transpiled and
 * described once here, instead of by whichever test files happen to load it
 * first (sometimes two at once). The examples and the fixtures are two chains
 * (build, then warm) run side by side; a chain whose components are all in
 * the cache already skips its warm-up (a `toolhost list` process, ~0.6 s of CPU).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

/** When the worker bundle (scripts/bundle-worker.mjs) was last made (0 when it was not). */
function bundledAt(root: string): number {
  try {
    return statSync(join(root, 'dist', 'host', 'sandbox', 'worker', 'entry.bundle.js')).mtimeMs;
  } catch {
    return 0;
  }
}

/** Run a node script with the test run's stdio; rejects when it fails. */
function runNode(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`node ${args.join(' ')} exited with ${signal ?? code}`))));
  });
}

/**
 * Whether every component in `dir` has a cache entry with its tools (then there is nothing to warm). Asked
 * in a node process of its own: the setup runs in vite's module runner, which cannot import dist/ (it has
 * no `import.meta.resolve`).
 */
async function allDescribed(root: string, cacheDir: string, dir: string): Promise<boolean> {
  // (Ids come from the cache's memo by file stat when it knows them: no hashing of 36 MB of examples.)
  const check = `
    import { readdirSync } from 'node:fs';
    import { join } from 'node:path';
    const [cacheModule, cacheDir, dir] = process.argv.slice(1);
    const { ComponentCache } = await import(cacheModule);
    const cache = new ComponentCache(cacheDir);
    const files = readdirSync(dir).filter((name) => name.endsWith('.wasm'));
    const found = await Promise.all(files.map(async (name) => cache.hasDescribed(await cache.ids.hashOf(join(dir, name)))));
    process.stdout.write(found.every(Boolean) ? 'yes' : 'no');`;
  const cacheModule = pathToFileURL(join(root, 'dist', 'host', 'sandbox', 'load', 'component-cache.js')).href;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', check, cacheModule, cacheDir, join(root, dir)]).catch(() => ({ stdout: 'no' }));
  return stdout === 'yes';
}

/**
 * Build and warm (above), and give the run a temporary directory of its own: every directory a test, a
 * sandbox process or a CLI process makes with `os.tmpdir()` goes under it (TMPDIR, inherited by the test
 * processes and their children), and it is removed when the run ends. Test files create ~80 directories a
 * run (fresh transpile caches hold 12 MB components), which piled up in /tmp without it.
 */
export default async function setup(): Promise<() => void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const runTmp = mkdtempSync(join(tmpdir(), 'toolhost-test-run-'));
  process.env.TMPDIR = runTmp;
  // The host is compiled when a source is newer than the last build (tsc's own up-to-date check still costs ~2 s).
  if (newestSource(root) > builtAt(root)) {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  }
  // The worker bundle is made again whenever it is older than the last compile (also one run by hand).
  if (bundledAt(root) < builtAt(root)) execFileSync(process.execPath, [join(root, 'scripts', 'bundle-worker.mjs')], { cwd: root, stdio: 'inherit' });
  const script = fileURLToPath(new URL('../scripts/build-guests.mjs', import.meta.url));
  const cacheDir = join(root, 'node_modules', '.cache', 'toolhost-test');
  const cli = join(root, 'dist', 'host', 'cli', 'main.js');
  const env = { ...process.env, TOOLHOST_CACHE_DIR: cacheDir, TOOLHOST_LOG: 'silent' };
  const warm = async (dir: string): Promise<void> => {
    if (await allDescribed(root, cacheDir, dir)) return;
    await promisify(execFile)(process.execPath, [cli, 'list', '--load', join(root, dir)], { cwd: root, env }).catch((error: Error) => {
      // Best effort: a component that fails here fails again, with its own message, in the test that loads it.
      process.stderr.write(`global setup: warming the transpile cache with ${dir} failed: ${error.message.split('\n')[0]}\n`);
    });
  };
  await Promise.all([
    runNode([script]).then(() => warm('guest-tools/dist')),
    runNode([script, '--fixtures']).then(() => warm('test/fixtures/dist')),
  ]);
  return () => rmSync(runTmp, { recursive: true, force: true });
}
