/**
 * The worktree, end to end, with real guests (wasi-libc through the preview1
 * adapter): what each privilege level allows, and every way out refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { example, fixture, hasCGuests, makeRegistry } from './helpers.js';

interface FsOutcome {
  ok: boolean;
  error?: string;
  content?: string;
  names?: string[];
}

describe.runIf(hasCGuests)('the worktree filesystem', () => {
  let registry: ToolRegistry;
  let base: string;
  let worktree: string;
  let outside: string;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED' } });
    await registry.registerWasmTools(example('files'), { grant: { privilege: 'DEFAULT' }, defaultPolicy: { privilege_level: 'DEFAULT', worktree_required: true } });
  });
  afterAll(async () => {
    await registry.close();
  });
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'toolhost-wt-'));
    worktree = join(base, 'worktree');
    outside = join(base, 'outside');
    mkdirSync(join(worktree, 'docs'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(worktree, 'docs', 'readme.txt'), 'inside');
    writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
  });

  const attack = async (tool: string, args: Record<string, unknown>, privilege: string): Promise<FsOutcome> => {
    const result = await registry.execute(tool, args, { workingDir: worktree, policy: { privilege_level: privilege } });
    expect(result.isError, JSON.stringify(result.error)).toBe(false);
    return result.structuredContent as FsOutcome;
  };

  it('gives MINIMAL calls no filesystem at all', async () => {
    expect(await attack('read', { path: '/worktree/docs/readme.txt' }, 'MINIMAL')).toMatchObject({ ok: false });
    expect(await attack('list', { path: '/worktree' }, 'MINIMAL')).toMatchObject({ ok: false });
  });

  it('lets DEFAULT calls read the worktree but not change it', async () => {
    expect(await attack('read', { path: '/worktree/docs/readme.txt' }, 'DEFAULT')).toEqual({ ok: true, content: 'inside' });
    expect((await attack('list', { path: '/worktree/docs' }, 'DEFAULT')).names).toContain('readme.txt');
    for (const [tool, args] of [
      ['write', { path: '/worktree/new.txt', content: 'x' }],
      ['write', { path: '/worktree/docs/readme.txt', content: 'changed' }],
      ['mkdir', { path: '/worktree/newdir' }],
      ['unlink', { path: '/worktree/docs/readme.txt' }],
      ['rename', { from: '/worktree/docs/readme.txt', to: '/worktree/moved.txt' }],
      ['symlink', { target: 'docs', path: '/worktree/link' }],
    ] as const) {
      expect(await attack(tool, args, 'DEFAULT'), tool).toMatchObject({ ok: false });
    }
    expect(readdirSync(worktree).sort()).toEqual(['docs']);
    expect(readFileSync(join(worktree, 'docs', 'readme.txt'), 'utf8')).toBe('inside');
  });

  it('lets ELEVATED calls write inside the worktree', async () => {
    expect(await attack('write', { path: '/worktree/new.txt', content: 'hello' }, 'ELEVATED')).toEqual({ ok: true });
    expect(await attack('mkdir', { path: '/worktree/made' }, 'ELEVATED')).toEqual({ ok: true });
    expect(await attack('rename', { from: '/worktree/new.txt', to: '/worktree/made/moved.txt' }, 'ELEVATED')).toEqual({ ok: true });
    expect(readFileSync(join(worktree, 'made', 'moved.txt'), 'utf8')).toBe('hello');
  });

  it('refuses .. and absolute paths out of the worktree, reading and writing', async () => {
    for (const path of ['/worktree/../outside/secret.txt', '/worktree/docs/../../outside/secret.txt', join(outside, 'secret.txt'), '/etc/passwd', '../outside/secret.txt']) {
      expect(await attack('read', { path }, 'ELEVATED'), path).toMatchObject({ ok: false });
      expect(await attack('write', { path, content: 'pwned' }, 'ELEVATED'), path).toMatchObject({ ok: false });
    }
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
        // If the link exists at all, using it must still fail.
        expect(await attack('read', { path: '/worktree/sneaky/secret.txt' }, 'ELEVATED')).toMatchObject({ ok: false });
        expect(await attack('read', { path: '/worktree/sneaky' }, 'ELEVATED')).toMatchObject({ ok: false });
        await attack('unlink', { path: '/worktree/sneaky' }, 'ELEVATED');
      }
    }
    // The host itself never follows what the guest left behind either.
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('cannot be redirected out by swapping a path component for a symlink mid-call', async () => {
    mkdirSync(join(worktree, 'swap'));
    writeFileSync(join(worktree, 'swap', 'secret.txt'), 'inside');
    // A separate process swaps worktree/swap between a real directory and a symlink to outside/.
    const script = `
      const fs = require('fs');
      const dir = ${JSON.stringify(join(worktree, 'swap'))};
      const parked = ${JSON.stringify(join(worktree, 'parked'))};
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        try { fs.renameSync(dir, parked); fs.symlinkSync(${JSON.stringify(outside)}, dir); } catch {}
        try { fs.unlinkSync(dir); fs.renameSync(parked, dir); } catch {}
      }`;
    const swapper: ChildProcess = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    try {
      const result = await attack('read_many', { path: '/worktree/swap/secret.txt', n: 3000 }, 'DEFAULT');
      const { contents } = result as unknown as { contents: string[] };
      expect(contents).not.toContain('OUTSIDE');
    } finally {
      swapper.kill();
    }
  });

  it('serves the example files tool: read_file and list_dir, relative to the worktree', async () => {
    const listed = await registry.execute('list_dir', {}, { workingDir: worktree });
    expect(listed.structuredContent).toMatchObject({ entries: [expect.objectContaining({ name: 'docs', type: 'directory' })] });
    const read = await registry.execute('read_file', { path: 'docs/readme.txt' }, { workingDir: worktree });
    expect(read.structuredContent).toEqual({ path: 'docs/readme.txt', size: 6, content: 'inside', truncated: false });
    await expect(registry.execute('read_file', { path: 'docs/readme.txt' })).rejects.toMatchObject({ code: 'WORKTREE_NOT_BOUND' });
    const escape = await registry.execute('read_file', { path: '../outside/secret.txt' }, { workingDir: worktree });
    expect(escape.error).toMatchObject({ code: 'TOOL_ERROR' });
    expect(existsSync(join(worktree, 'created-by-guest.txt'))).toBe(false);
  });
});
