/**
 * Building an untrusted project: the paths its package.json names (toolhost.entry, toolhost.sources,
 * toolhost.out) and the files it finds by itself (src/, dist/) resolve inside the project after symlinks, or the
 * build is refused with a message that names the field and never echoes a file's contents; nothing outside the
 * project is read as a source or written as the component. `toolhost init --toolhost SPEC` writes SPEC as one JSON
 * string (escaped), never as package.json text, and refuses a spec with control characters.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { hasCGuests } from '../helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-author-paths-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const SECRET = 'root:$6$SECRET-FIRST-LINE-9f3a:19000:0:99999:7:::';

/** A C project (from `toolhost init`) in a fresh directory beside a secret file and a victim file outside it. */
async function cProject(name: string): Promise<{ dir: string; outside: string; secret: string; victim: string }> {
  const base = mkdtempSync(join(scratch, `${name}-`));
  const dir = join(base, 'project');
  const outside = join(base, 'outside');
  mkdirSync(outside);
  const secret = join(outside, 'shadow');
  writeFileSync(secret, `${SECRET}\nsecond line\n`);
  const victim = join(outside, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  const init = await runCli(['init', dir, '--lang', 'c']);
  expect(init.code, init.stderr).toBe(0);
  return { dir, outside, secret, victim };
}

function setManifest(dir: string, toolhost: Record<string, unknown>): void {
  const path = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  writeFileSync(path, JSON.stringify({ ...manifest, toolhost: { lang: 'c', ...toolhost } }, null, 2));
}

(hasCGuests ? describe.concurrent : describe.skip)('toolhost build on an untrusted project', () => {
  it('refuses a toolhost.out outside the project and leaves the file there untouched', async () => {
    const { dir, victim } = await cProject('out-dotdot');
    setManifest(dir, { out: '../outside/victim.txt' });
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.out .*outside the project/);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses an absolute toolhost.out', async () => {
    const { dir, victim } = await cProject('out-absolute');
    setManifest(dir, { out: victim });
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.out .*outside the project/);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses an output directory that is a symlink out of the project (the default dist/)', async () => {
    const { dir, outside, victim } = await cProject('out-dist-link');
    symlinkSync(outside, join(dir, 'dist'));
    writeFileSync(join(outside, 'out-dist-link.wasm'), 'precious\n');
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/outside the project/);
    expect(readFileSync(join(outside, 'out-dist-link.wasm'), 'utf8')).toBe('precious\n');
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses an output file that is a symlink out of the project, even a dangling one', async () => {
    const { dir, outside, victim } = await cProject('out-file-link');
    setManifest(dir, { out: 'dist/tool.wasm' });
    mkdirSync(join(dir, 'dist'));
    symlinkSync(victim, join(dir, 'dist', 'tool.wasm'));
    const first = await runCli(['build', dir]);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/toolhost\.out .*outside the project/);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    rmSync(join(dir, 'dist', 'tool.wasm'));
    symlinkSync(join(outside, 'created-by-build.wasm'), join(dir, 'dist', 'tool.wasm'));
    const dangling = await runCli(['build', dir]);
    expect(dangling.code).toBe(1);
    expect(() => readFileSync(join(outside, 'created-by-build.wasm'))).toThrow(/ENOENT/);
  });

  it('refuses a toolhost.entry outside the project without printing what the file holds', async () => {
    const { dir, secret } = await cProject('entry-absolute');
    setManifest(dir, { entry: secret });
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.entry .*outside the project/);
    expect(run.stderr + run.stdout).not.toContain('SECRET-FIRST-LINE');
  });

  it('refuses toolhost.sources that climb out of the project', async () => {
    const { dir } = await cProject('sources-dotdot');
    setManifest(dir, { sources: ['src/tool.c', '../outside/shadow'] });
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.sources .*outside the project/);
    expect(run.stderr + run.stdout).not.toContain('SECRET-FIRST-LINE');
  });

  it('refuses a source found by itself that is a symlink out of the project', async () => {
    const { dir, secret } = await cProject('src-link');
    symlinkSync(secret, join(dir, 'src', 'evil.c'));
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/src\/evil\.c"? .*outside the project/);
    expect(run.stderr + run.stdout).not.toContain('SECRET-FIRST-LINE');
  });

  it('refuses a src/ directory that is a symlink out of the project', async () => {
    const { dir, outside } = await cProject('src-dir-link');
    const src = join(dir, 'src');
    const moved = join(outside, 'src');
    mkdirSync(moved);
    writeFileSync(join(moved, 'tool.c'), readFileSync(join(src, 'tool.c')));
    rmSync(src, { recursive: true });
    symlinkSync(moved, src);
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/outside the project/);
  });
});

describe.concurrent('toolhost build on an untrusted JS project', () => {
  it('refuses a module the entry imports from outside the project without printing what it holds', async () => {
    const base = mkdtempSync(join(scratch, 'js-import-'));
    const dir = join(base, 'project');
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(base, 'shadow'), `${SECRET}\n`);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'js-import', toolhost: { lang: 'js' } }));
    writeFileSync(join(dir, 'src', 'index.js'), `import secret from ${JSON.stringify(join(base, 'shadow'))};\nexport const tool = { describe: () => [], call: () => secret };\n`);
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/outside the project/);
    expect(run.stderr + run.stdout).not.toContain('SECRET-FIRST-LINE');
  });
});

describe.concurrent('toolhost init --toolhost SPEC', () => {
  it('writes the spec as one escaped string: it cannot add keys to package.json', async () => {
    const dir = join(scratch, 'spec-inject');
    const spec = '1.0.0" }, "scripts": { "postinstall": "touch pwned" }, "devDependencies": { "x": "';
    const run = await runCli(['init', dir, '--lang', 'c', '--toolhost', spec]);
    expect(run.code, run.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
    expect(manifest.scripts.postinstall).toBeUndefined();
    expect(manifest.devDependencies.toolhost).toBe(spec);
    expect(Object.keys(manifest.devDependencies).sort()).toEqual(['toolhost', 'vitest']);
  });

  it('refuses a spec with control characters (a newline would break the next steps it prints)', async () => {
    const dir = join(scratch, 'spec-newline');
    const run = await runCli(['init', dir, '--lang', 'c', '--toolhost', '^1.0.0\nnpm install evil']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/--toolhost/);
    expect(() => readFileSync(join(dir, 'package.json'))).toThrow(/ENOENT/);
  });
});
