/**
 * The worktree from a JavaScript guest (issue 29): `toolhost build` binds the wasi:filesystem imports a bundle
 * makes (the fixture imports `wasi:filesystem/preopens@0.2.3` directly and uses the `toolhost/guest` helpers),
 * and the host confines them exactly as it confines a C guest (test/capabilities-fs.test.ts): MINIMAL sees no
 * worktree, DEFAULT reads but never changes it, ELEVATED writes inside it, and `..`, absolute paths and symlinks
 * (made before the call or by the guest) never reach outside.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bundleGuest } from '../host/authoring/js.js';
import { ENGINE_WASI_VERSION, worldWithWasiImports } from '../host/authoring/wasi-world.js';
import type { ToolRegistry } from '../host/index.js';
import { fixture, makeRegistry } from './helpers.js';

interface FsOutcome {
  ok: boolean;
  error?: string;
  content?: string;
  names?: string[];
  bytes?: number[];
  stat?: { type: string; size: number; modifiedMs?: number };
}

describe('the worktree from a JS guest', () => {
  let registry: ToolRegistry;
  let base: string;
  let worktree: string;
  let outside: string;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('fs_js'), { grant: { privilege: 'ELEVATED' } });
  });
  afterAll(async () => {
    await registry.close();
  });
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'toolhost-jswt-'));
    worktree = join(base, 'worktree');
    outside = join(base, 'outside');
    mkdirSync(join(worktree, 'docs'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(worktree, 'docs', 'readme.txt'), 'inside');
    writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
    return () => rmSync(base, { recursive: true, force: true });
  });

  const attack = async (tool: string, args: Record<string, unknown>, privilege: string): Promise<FsOutcome> => {
    const result = await registry.execute(tool, args, { workingDir: worktree, policy: { privilege_level: privilege } });
    expect(result.isError, JSON.stringify(result.error)).toBe(false);
    return result.structuredContent as FsOutcome;
  };

  it('gives MINIMAL calls no worktree at all (the helpers say NO_WORKTREE)', async () => {
    expect(await attack('read', { path: '/worktree/docs/readme.txt' }, 'MINIMAL')).toMatchObject({ ok: false, error: expect.stringMatching(/^NO_WORKTREE/) });
    expect(await attack('list', { path: '/worktree' }, 'MINIMAL')).toMatchObject({ ok: false });
  });

  it('lets DEFAULT calls read, list and stat the worktree but not change it', async () => {
    expect(await attack('read', { path: '/worktree/docs/readme.txt' }, 'DEFAULT')).toEqual({ ok: true, content: 'inside' });
    expect(await attack('read', { path: 'docs/readme.txt' }, 'DEFAULT')).toEqual({ ok: true, content: 'inside' });
    expect(await attack('read_bytes', { path: 'docs/readme.txt' }, 'DEFAULT')).toEqual({ ok: true, bytes: [...Buffer.from('inside')] });
    expect((await attack('list', { path: '/worktree/docs' }, 'DEFAULT')).names).toEqual(['readme.txt']);
    expect((await attack('stat', { path: 'docs/readme.txt' }, 'DEFAULT')).stat).toMatchObject({ type: 'regular-file', size: 6 });
    for (const [tool, args] of [
      ['write', { path: '/worktree/new.txt', content: 'x' }],
      ['write', { path: '/worktree/docs/readme.txt', content: 'changed' }],
      ['write_bytes', { path: 'new.bin', bytes: [1, 2] }],
      ['mkdir', { path: '/worktree/newdir' }],
      ['unlink', { path: '/worktree/docs/readme.txt' }],
      ['rename', { from: '/worktree/docs/readme.txt', to: '/worktree/moved.txt' }],
      ['symlink', { target: 'docs', path: '/worktree/link' }],
    ] as const) {
      expect(await attack(tool, args, 'DEFAULT'), tool).toMatchObject({ ok: false });
    }
    expect(await attack('write', { path: 'new.txt', content: 'x' }, 'DEFAULT')).toMatchObject({ error: expect.stringMatching(/read-only|not-permitted|access/) });
    expect(readdirSync(worktree).sort()).toEqual(['docs']);
    expect(readFileSync(join(worktree, 'docs', 'readme.txt'), 'utf8')).toBe('inside');
  });

  it('lets ELEVATED calls write text and bytes inside the worktree', async () => {
    expect(await attack('write', { path: '/worktree/new.txt', content: 'hello' }, 'ELEVATED')).toEqual({ ok: true });
    expect(await attack('write_bytes', { path: 'raw.bin', bytes: [0, 255, 7] }, 'ELEVATED')).toEqual({ ok: true });
    expect(await attack('mkdir', { path: '/worktree/made' }, 'ELEVATED')).toEqual({ ok: true });
    expect(await attack('rename', { from: '/worktree/new.txt', to: '/worktree/made/moved.txt' }, 'ELEVATED')).toEqual({ ok: true });
    expect(readFileSync(join(worktree, 'made', 'moved.txt'), 'utf8')).toBe('hello');
    expect([...readFileSync(join(worktree, 'raw.bin'))]).toEqual([0, 255, 7]);
    expect(await attack('read', { path: 'made/moved.txt' }, 'ELEVATED')).toEqual({ ok: true, content: 'hello' });
  });

  it('refuses .. and absolute paths out of the worktree, reading and writing', async () => {
    for (const path of ['/worktree/../outside/secret.txt', '/worktree/docs/../../outside/secret.txt', join(outside, 'secret.txt'), '/etc/passwd', '../outside/secret.txt']) {
      expect(await attack('read', { path }, 'ELEVATED'), path).toMatchObject({ ok: false, error: expect.stringMatching(/^FS_ERROR/) });
      expect(await attack('write', { path, content: 'pwned' }, 'ELEVATED'), path).toMatchObject({ ok: false });
      expect(await attack('stat', { path }, 'ELEVATED'), path).toMatchObject({ ok: false });
    }
    expect(await attack('list', { path: '/worktree/..' }, 'ELEVATED')).toMatchObject({ ok: false });
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
    expect(readdirSync(base).sort()).toEqual(['outside', 'worktree']);
  });

  it('never follows a pre-existing symlink that points outside', async () => {
    symlinkSync(outside, join(worktree, 'escape-dir'));
    symlinkSync(join(outside, 'secret.txt'), join(worktree, 'escape-file'));
    symlinkSync('../outside/secret.txt', join(worktree, 'relative-escape'));
    for (const path of ['/worktree/escape-dir/secret.txt', '/worktree/escape-file', '/worktree/relative-escape']) {
      expect(await attack('read', { path }, 'ELEVATED'), path).toMatchObject({ ok: false });
      expect(await attack('write', { path, content: 'pwned' }, 'ELEVATED'), path).toMatchObject({ ok: false });
    }
    expect(await attack('list', { path: '/worktree/escape-dir' }, 'ELEVATED')).toMatchObject({ ok: false });
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('follows a symlink that stays inside', async () => {
    symlinkSync('docs/readme.txt', join(worktree, 'inner-link'));
    expect(await attack('read', { path: '/worktree/inner-link' }, 'DEFAULT')).toEqual({ ok: true, content: 'inside' });
  });

  it('refuses a guest-made symlink that points outside, and never follows one', async () => {
    for (const target of [outside, '../outside', '../outside/secret.txt', '/etc/passwd']) {
      const made = await attack('symlink', { target, path: '/worktree/sneaky' }, 'ELEVATED');
      if (made.ok) {
        expect(await attack('read', { path: '/worktree/sneaky/secret.txt' }, 'ELEVATED')).toMatchObject({ ok: false });
        expect(await attack('read', { path: '/worktree/sneaky' }, 'ELEVATED')).toMatchObject({ ok: false });
        await attack('unlink', { path: '/worktree/sneaky' }, 'ELEVATED');
      }
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('cannot be redirected out by swapping a path component for a symlink mid-call', async () => {
    mkdirSync(join(worktree, 'swap'));
    writeFileSync(join(worktree, 'swap', 'secret.txt'), 'inside');
    const script = `
      const fs = require('fs');
      const dir = ${JSON.stringify(join(worktree, 'swap'))};
      const parked = ${JSON.stringify(join(worktree, 'parked'))};
      const until = Date.now() + 2000;
      while (Date.now() < until) {
        try { fs.renameSync(dir, parked); fs.symlinkSync(${JSON.stringify(outside)}, dir); } catch {}
        try { fs.unlinkSync(dir); fs.renameSync(parked, dir); } catch {}
      }`;
    const swapper: ChildProcess = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    try {
      const { contents } = (await attack('read_many', { path: '/worktree/swap/secret.txt', n: 1000 }, 'DEFAULT')) as unknown as { contents: string[] };
      expect(contents).not.toContain('OUTSIDE');
    } finally {
      swapper.kill();
    }
  });
});

describe('toolhost build and WASI imports', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-wasi-build-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('binds a direct wasi:filesystem import to the engine’s version, and adds it to the world', async () => {
    const source = join(scratch, 'direct.js');
    writeFileSync(source, "import { getDirectories } from 'wasi:filesystem/preopens@0.2.3';\nexport const tool = { describe: () => [], call: () => JSON.stringify(getDirectories().length) };\n");
    const { code, imports } = await bundleGuest(source, scratch);
    expect(imports).toContain(`wasi:filesystem/preopens@${ENGINE_WASI_VERSION}`);
    expect(code).not.toContain('@0.2.3');
    const world = worldWithWasiImports('package a:b;\nworld tool-provider {\n    export x: func();\n}\n', 'tool-provider', imports);
    expect(world).toContain(`import wasi:filesystem/preopens@${ENGINE_WASI_VERSION};`);
    expect(world).toMatch(new RegExp(`package wasi:io@${ENGINE_WASI_VERSION.replaceAll('.', '\\.')} \\{`));
  });

  it('leaves the world alone for a tool that imports the toolkit but not its filesystem helpers', async () => {
    const source = join(scratch, 'plain.js');
    writeFileSync(source, "import { defineComponent } from 'toolhost/guest';\nexport const tool = defineComponent('plain', []);\n");
    const { imports } = await bundleGuest(source, scratch);
    expect(imports.filter((id) => id.startsWith('wasi:'))).toEqual([]);
  });

  it('refuses a WASI interface a guest cannot import, naming it', async () => {
    const source = join(scratch, 'sockets.js');
    writeFileSync(source, "import { createTcpSocket } from 'wasi:sockets/tcp-create-socket@0.2.3';\nexport const tool = { describe: () => [], call: () => String(createTcpSocket) };\n");
    await expect(bundleGuest(source, scratch)).rejects.toMatchObject({ message: expect.stringMatching(/wasi:sockets\/tcp-create-socket@0\.2\.3.*wasi:filesystem\/types/s) });
  });
});
