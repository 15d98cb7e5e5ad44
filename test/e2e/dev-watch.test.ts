/**
 * `toolhost dev` stays fresh (issue 29): atomic rename-over saves (what editors and `sed -i` do) are seen every
 * time, not only the first; new files are seen; editors' swap files are not; an edit during a build queues one
 * more build that sees it; every rebuild says why. The watcher and queue (host/cli/dev-watch.ts) are driven on a
 * temp dir with a build that reads the source, then `toolhost dev` itself on a C project (needs clang).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FSWatcher } from 'chokidar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RebuildQueue, ignoredPath, watchSources } from '../../host/cli/dev-watch.js';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { hasCGuests } from '../helpers.js';

/** Save `text` to `file` the way editors do: write a temp file beside it, rename it over. */
function renameOverSave(file: string, text: string, tempName: string): void {
  const temp = join(file, '..', tempName);
  writeFileSync(temp, text);
  renameSync(temp, file);
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('the dev watcher and rebuild queue', () => {
  let dir: string;
  let source: string;
  let watcher: FSWatcher | undefined;
  let queue: RebuildQueue | undefined;
  /** What each build saw: the source's text and why it ran. */
  let builds: Array<{ text: string; reasons: string[] }>;
  let buildMs: number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'toolhost-dev-watch-'));
    mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'dist'));
    source = join(dir, 'src', 'index.ts');
    writeFileSync(source, 'v0');
    builds = [];
    buildMs = 0;
  });
  afterEach(async () => {
    queue?.close();
    await watcher?.close();
    await queue?.idle();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(): Promise<void> {
    queue = new RebuildQueue({
      debounceMs: 50,
      build: async (reasons) => {
        const text = readFileSync(source, 'utf8');
        if (buildMs > 0) await sleep(buildMs);
        builds.push({ text, reasons });
        return 'built';
      },
    });
    const q = queue;
    watcher = await watchSources(dir, (reason) => q.changed(reason));
    q.start();
  }

  it('sees ten rename-over saves in a row, each with its reason', async () => {
    await start();
    for (let i = 1; i <= 10; i += 1) {
      // Alternate vim-style and sed-style temp names: both are ignored, only the rename-over counts.
      renameOverSave(source, `v${i}`, i % 2 === 0 ? '.index.ts.swp' : `sed${'abcdef'.slice(0, 3)}${String(i).padStart(3, '0')}`);
      await until(() => builds.some((build) => build.text === `v${i}`), `save ${i} to be built`);
      await queue!.idle();
    }
    expect(builds.map((build) => build.text)).toEqual(Array.from({ length: 10 }, (_, i) => `v${i + 1}`));
    for (const build of builds) expect(build.reasons).toContain('changed src/index.ts');
    expect(builds.flatMap((build) => build.reasons).filter((reason) => /swp|sed/.test(reason))).toEqual([]);
  });

  it('queues exactly one more build for edits made during a build, and that build sees them', async () => {
    buildMs = 400;
    await start();
    writeFileSync(source, 'first');
    await until(() => builds.length === 0 && queue !== undefined, 'the watcher');
    await sleep(150); // the first build is running now
    renameOverSave(source, 'second', '.index.ts.swx');
    writeFileSync(join(dir, 'src', 'extra.ts'), 'export {}');
    renameOverSave(source, 'third', '4913');
    await until(() => builds.length >= 2, 'the queued build', 10_000);
    await sleep(300);
    await queue!.idle();
    expect(builds.map((build) => build.text)).toEqual(['first', 'third']);
    expect(builds[1]!.reasons).toEqual(expect.arrayContaining(['changed src/index.ts', 'added src/extra.ts']));
  });

  it('sees new files and directories, and ignores swap files, dist and node_modules', async () => {
    await start();
    for (const scratch of ['src/.index.ts.swp', 'src/index.ts~', 'src/#index.ts#', 'src/.#index.ts', 'src/4913', 'dist/out.wasm']) {
      writeFileSync(join(dir, scratch), 'x');
    }
    mkdirSync(join(dir, 'node_modules'));
    writeFileSync(join(dir, 'node_modules', 'dep.js'), 'x');
    await sleep(400);
    expect(builds).toEqual([]);
    mkdirSync(join(dir, 'src', 'lib'));
    writeFileSync(join(dir, 'src', 'lib', 'util.ts'), 'export const x = 1;');
    await until(() => builds.some((build) => build.reasons.includes('added src/lib/util.ts')), 'the new file');
  });

  it('tells scratch files from sources', () => {
    for (const path of ['src/.a.ts.swp', 'src/a.ts~', 'node_modules/x/y.js', 'dist/a.wasm', '.git/HEAD', 'src/sedAb12Cd', 'src/4913']) {
      expect(ignoredPath('/p', join('/p', path)), path).toBe(true);
    }
    for (const path of ['src/a.ts', 'src/swap.ts', 'package.json', 'src/sed.ts']) expect(ignoredPath('/p', join('/p', path)), path).toBe(false);
  });
});

describe.runIf(hasCGuests)('toolhost dev', () => {
  let scratch: string;
  let child: ChildProcessWithoutNullStreams | undefined;
  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'toolhost-dev-'));
    return () => {
      child?.kill('SIGKILL');
      rmSync(scratch, { recursive: true, force: true });
    };
  });

  it('rebuilds after each of three rename-over saves in a row, and says why', async () => {
    const dir = join(scratch, 'greeter');
    expect((await runCli(['init', dir, '--lang', 'c'])).code).toBe(0);
    const file = join(dir, 'src', 'tool.c');
    const original = readFileSync(file, 'utf8');
    child = spawn(process.execPath, [cliPath, 'dev', dir, '--mcp', 'http', '--port', '0'], { env: cliEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    await until(() => /watching /.test(stderr), `toolhost dev to start:\n${stderr}`, 60_000);
    const rebuilt = (): number => (stderr.match(/rebuilt .*; reloaded \(changed src\/tool\.c\)/g) ?? []).length;
    for (let i = 1; i <= 3; i += 1) {
      renameOverSave(file, `${original}\n/* save ${i} */\n`, `sedX${String(i).padStart(5, '0')}`.slice(0, 9));
      await until(() => rebuilt() >= i, `rebuild ${i}:\n${stderr}`, 30_000);
    }
    expect(stderr).not.toMatch(/rebuild failed/);
  }, 150_000);
});
