/**
 * The worktree adapter at the wasi:filesystem Descriptor level, as a guest's
 * bindings call it: reads and writes inside the worktree work; `..`,
 * absolute paths, symlinks to outside (pre-existing or guest-made) and a
 * directory swapped for a symlink mid-walk never reach outside; read-only
 * worktrees refuse every mutation; descriptors die with their call; no fd
 * outlives the adapter.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Descriptor, DescriptorFlags, DirectoryEntry } from '@bytecodealliance/preview2-shim/interfaces/wasi-filesystem-types';
import { MAX_SYMLINKS, WorktreeAdapter, type WorktreeAdapterOptions } from '../host/sandbox/wasi/worktree-fs.js';

interface BrowserFilesystem {
  createFilesystem(config: { adapter: WorktreeAdapter; preopens: Record<string, string> }): {
    preopens: { getDirectories(): Array<[Descriptor, string]> };
    dispose(): void;
  };
}
const shimEntry = import.meta.resolve('@bytecodealliance/preview2-shim');
const { createFilesystem } = (await import(new URL('../browser/filesystem.js', shimEntry).href)) as BrowserFilesystem;

const READ: DescriptorFlags = { read: true };
const WRITE: DescriptorFlags = { read: true, write: true };
const NOFOLLOW = { symlinkFollow: false };
const FOLLOW = { symlinkFollow: true };
const SECRET = 'TOP SECRET, OUTSIDE THE WORKTREE';

/** The wasi error-code a call threw (fails the test if it returned). */
function errorOf(operation: () => unknown): unknown {
  try {
    operation();
  } catch (error) {
    return error;
  }
  throw new Error('expected the operation to fail');
}

function readAll(descriptor: Descriptor): string {
  const stream = descriptor.readViaStream(0n);
  const chunks: Uint8Array[] = [];
  for (;;) {
    try {
      chunks.push(stream.blockingRead(1024n));
    } catch (error) {
      expect(error).toEqual({ tag: 'closed' });
      break;
    }
  }
  drop(stream);
  return Buffer.concat(chunks).toString('utf8');
}

function listing(descriptor: Descriptor): DirectoryEntry[] {
  const stream = descriptor.readDirectory();
  const entries: DirectoryEntry[] = [];
  for (let entry = stream.readDirectoryEntry(); entry !== undefined; entry = stream.readDirectoryEntry()) entries.push(entry);
  return entries.sort((a, b) => a.name.localeCompare(b.name));
}

/** What jco does when the guest drops an owned handle. */
function drop(resource: object): void {
  (resource as { [Symbol.dispose](): void })[Symbol.dispose]();
}

const openFds = (): number => fs.readdirSync('/proc/self/fd').length;

let base: string;
let root: string;
let outside: string;
let adapters: WorktreeAdapter[];

/**
 * base/
 *   outside/secret.txt       (SECRET)
 *   worktree/                (the root)
 *     top.txt                "top"
 *     a/b.txt                "hello from a/b"
 *     a/c/deep.txt           "deep"
 *     passwd -> /etc/passwd
 *     sibling -> ../outside
 *     sibling-abs -> <base>/outside
 *     a/up -> ../../outside/secret.txt
 *     inside -> a/b.txt
 *     a/to-top -> ../top.txt
 */
beforeEach(() => {
  base = fs.mkdtempSync(join(tmpdir(), 'worktree-fs-'));
  root = join(base, 'worktree');
  outside = join(base, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(join(outside, 'secret.txt'), SECRET);
  fs.mkdirSync(join(root, 'a', 'c'), { recursive: true });
  fs.writeFileSync(join(root, 'top.txt'), 'top');
  fs.writeFileSync(join(root, 'a', 'b.txt'), 'hello from a/b');
  fs.writeFileSync(join(root, 'a', 'c', 'deep.txt'), 'deep');
  fs.symlinkSync('/etc/passwd', join(root, 'passwd'));
  fs.symlinkSync('../outside', join(root, 'sibling'));
  fs.symlinkSync(outside, join(root, 'sibling-abs'));
  fs.symlinkSync('../../outside/secret.txt', join(root, 'a', 'up'));
  fs.symlinkSync('a/b.txt', join(root, 'inside'));
  fs.symlinkSync('../top.txt', join(root, 'a', 'to-top'));
  adapters = [];
});

afterEach(() => {
  for (const adapter of adapters) adapter.dispose();
  fs.rmSync(base, { recursive: true, force: true });
});

function mount(options: Partial<WorktreeAdapterOptions> = {}): { adapter: WorktreeAdapter; dir: Descriptor } {
  const adapter = new WorktreeAdapter({ root, readOnly: false, ...options });
  adapters.push(adapter);
  const filesystem = createFilesystem({ adapter, preopens: { '/worktree': root } });
  const [[dir, guestPath]] = filesystem.preopens.getDirectories() as [[Descriptor, string]];
  expect(guestPath).toBe('/worktree');
  return { adapter, dir };
}

describe('inside the worktree', () => {
  it('opens and reads files through streams and read()', () => {
    const { dir } = mount();
    const file = dir.openAt(NOFOLLOW, 'a/b.txt', {}, READ);
    const stream = file.readViaStream(0n);
    expect(Buffer.from(stream.blockingRead(100n)).toString()).toBe('hello from a/b');
    expect(errorOf(() => stream.blockingRead(100n))).toEqual({ tag: 'closed' });
    const [bytes, eof] = file.read(5n, 6n);
    expect(Buffer.from(bytes).toString()).toBe('from ');
    expect(eof).toBe(false);
    expect(file.read(100n, 6n)[1]).toBe(true);
    expect(file.getType()).toBe('regular-file');
    const stat = file.stat();
    expect(stat.type).toBe('regular-file');
    expect(stat.size).toBe(14n);
    expect(stat.linkCount).toBe(1n);
    expect(typeof stat.dataModificationTimestamp?.seconds).toBe('bigint');
    expect(readAll(dir.openAt(NOFOLLOW, 'a/c/../c/./deep.txt', {}, READ))).toBe('deep');
    expect(readAll(dir.openAt(NOFOLLOW, 'a/../top.txt', {}, READ))).toBe('top');
  });

  it('opens directories and resolves relative to them', () => {
    const { dir } = mount();
    const a = dir.openAt(NOFOLLOW, 'a', { directory: true }, READ);
    expect(a.getType()).toBe('directory');
    expect(readAll(a.openAt(NOFOLLOW, 'c/deep.txt', {}, READ))).toBe('deep');
    expect(a.statAt(NOFOLLOW, 'b.txt').size).toBe(14n);
    expect(dir.openAt(NOFOLLOW, '.', {}, READ).getType()).toBe('directory');
    expect(dir.openAt(NOFOLLOW, 'a/', {}, READ).isSameObject(a)).toBe(true);
    expect(a.isSameObject(dir)).toBe(false);
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'top.txt', { directory: true }, READ))).toBe('not-directory');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'top.txt/x', {}, READ))).toBe('not-directory');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'missing.txt', {}, READ))).toBe('no-entry');
    expect(errorOf(() => dir.openAt(NOFOLLOW, '', {}, READ))).toBe('no-entry');
    const file = dir.openAt(NOFOLLOW, 'top.txt', {}, READ);
    expect(errorOf(() => file.openAt(NOFOLLOW, 'x', {}, READ))).toBe('not-directory');
    expect(errorOf(() => a.read(1n, 0n))).toBe('is-directory');
  });

  it('writes, appends, truncates and resizes', () => {
    const { dir } = mount();
    const file = dir.openAt(NOFOLLOW, 'new.txt', { create: true, exclusive: true }, WRITE);
    const out = file.writeViaStream(0n);
    expect(out.checkWrite()).toBeGreaterThan(0n);
    out.write(new TextEncoder().encode('hello'));
    out.blockingWriteAndFlush(new TextEncoder().encode(' world'));
    drop(out);
    expect(fs.readFileSync(join(root, 'new.txt'), 'utf8')).toBe('hello world');
    const append = file.appendViaStream();
    append.blockingWriteAndFlush(new TextEncoder().encode('!'));
    expect(fs.readFileSync(join(root, 'new.txt'), 'utf8')).toBe('hello world!');
    expect(file.write(new TextEncoder().encode('J'), 0n)).toBe(1n);
    expect(fs.readFileSync(join(root, 'new.txt'), 'utf8')).toBe('Jello world!');
    file.setSize(5n);
    expect(fs.readFileSync(join(root, 'new.txt'), 'utf8')).toBe('Jello');
    file.setTimes({ tag: 'timestamp', val: { seconds: 1000n, nanoseconds: 0 } }, { tag: 'timestamp', val: { seconds: 2000n, nanoseconds: 0 } });
    expect(fs.statSync(join(root, 'new.txt')).mtimeMs).toBe(2_000_000);
    file.sync();
    file.syncData();
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'new.txt', { create: true, exclusive: true }, WRITE))).toBe('exist');
    dir.openAt(NOFOLLOW, 'new.txt', { truncate: true }, WRITE);
    expect(fs.readFileSync(join(root, 'new.txt'), 'utf8')).toBe('');
    // A descriptor opened for reading only cannot write.
    const readOnly = dir.openAt(NOFOLLOW, 'top.txt', {}, READ);
    expect(errorOf(() => readOnly.write(new Uint8Array([1]), 0n))).toBe('bad-descriptor');
    expect(errorOf(() => readOnly.writeViaStream(0n))).toBe('bad-descriptor');
  });

  it('creates, links, renames and removes entries', () => {
    const { dir } = mount();
    dir.createDirectoryAt('d');
    expect(errorOf(() => dir.createDirectoryAt('d'))).toBe('exist');
    expect(fs.statSync(join(root, 'd')).isDirectory()).toBe(true);
    const d = dir.openAt(NOFOLLOW, 'd', { directory: true }, READ);
    dir.renameAt('top.txt', d, 'moved.txt');
    expect(fs.readFileSync(join(root, 'd', 'moved.txt'), 'utf8')).toBe('top');
    dir.linkAt(NOFOLLOW, 'd/moved.txt', dir, 'hard.txt');
    expect(dir.statAt(NOFOLLOW, 'hard.txt').linkCount).toBe(2n);
    expect(errorOf(() => dir.linkAt(NOFOLLOW, 'a', dir, 'a2'))).toBe('not-permitted');
    expect(errorOf(() => dir.removeDirectoryAt('d'))).toBe('not-empty');
    expect(errorOf(() => dir.unlinkFileAt('d'))).toBe('is-directory');
    d.unlinkFileAt('moved.txt');
    dir.removeDirectoryAt('d/');
    expect(fs.existsSync(join(root, 'd'))).toBe(false);
    expect(errorOf(() => dir.removeDirectoryAt('top.txt'))).toBe('no-entry');
    expect(readAll(dir.openAt(NOFOLLOW, 'hard.txt', {}, READ))).toBe('top');
    dir.setTimesAt(NOFOLLOW, 'hard.txt', { tag: 'no-change' }, { tag: 'timestamp', val: { seconds: 3000n, nanoseconds: 0 } });
    expect(fs.statSync(join(root, 'hard.txt')).mtimeMs).toBe(3_000_000);
    expect(dir.metadataHashAt(NOFOLLOW, 'hard.txt')).toEqual(dir.openAt(NOFOLLOW, 'hard.txt', {}, READ).metadataHash());
  });

  it('accepts a wrapped second descriptor that exposes UNWRAP_DESCRIPTOR', async () => {
    const { UNWRAP_DESCRIPTOR } = (await import(new URL('../browser/in-memory-filesystem.js', shimEntry).href)) as { UNWRAP_DESCRIPTOR: symbol };
    const { adapter } = mount();
    const implementation = adapter.getRoot(root);
    const wrapped = new Proxy(implementation, {
      get: (target, key) => (key === UNWRAP_DESCRIPTOR ? target : Reflect.get(target, key)),
    });
    const a = implementation.openAt(NOFOLLOW, 'a', {}, READ);
    a.renameAt('b.txt', wrapped, 'moved.txt');
    expect(fs.readFileSync(join(root, 'moved.txt'), 'utf8')).toBe('hello from a/b');
    expect(implementation.isSameObject(wrapped)).toBe(true);
    expect(errorOf(() => a.renameAt('c', {}, 'x'))).toBe('bad-descriptor');
    const other = new WorktreeAdapter({ root, readOnly: false });
    adapters.push(other);
    expect(errorOf(() => a.renameAt('c', other.getRoot(root), 'x'))).toBe('cross-device');
  });

  it('lists a directory, typing symlinks as symlinks without following them', () => {
    const { dir } = mount();
    expect(listing(dir)).toEqual([
      { name: 'a', type: 'directory' },
      { name: 'inside', type: 'symbolic-link' },
      { name: 'passwd', type: 'symbolic-link' },
      { name: 'sibling', type: 'symbolic-link' },
      { name: 'sibling-abs', type: 'symbolic-link' },
      { name: 'top.txt', type: 'regular-file' },
    ]);
    expect(listing(dir.openAt(NOFOLLOW, 'a', {}, READ))).toEqual([
      { name: 'b.txt', type: 'regular-file' },
      { name: 'c', type: 'directory' },
      { name: 'to-top', type: 'symbolic-link' },
      { name: 'up', type: 'symbolic-link' },
    ]);
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'top.txt', {}, READ).readDirectory())).toBe('not-directory');
  });

  it('follows symlinks that stay inside, only when asked', () => {
    const { dir } = mount();
    expect(readAll(dir.openAt(FOLLOW, 'inside', {}, READ))).toBe('hello from a/b');
    expect(readAll(dir.openAt(FOLLOW, 'a/to-top', {}, READ))).toBe('top');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'inside', {}, READ))).toBe('loop');
    expect(dir.statAt(NOFOLLOW, 'inside').type).toBe('symbolic-link');
    expect(dir.statAt(FOLLOW, 'inside').type).toBe('regular-file');
    expect(dir.readlinkAt('inside')).toBe('a/b.txt');
    expect(errorOf(() => dir.readlinkAt('top.txt'))).toBe('invalid');
    // An intermediate symlink is always followed.
    fs.symlinkSync('a/c', join(root, 'cdir'));
    expect(readAll(dir.openAt(NOFOLLOW, 'cdir/deep.txt', {}, READ))).toBe('deep');
  });
});

describe('escapes', () => {
  it('refuses `..` above the descriptor', () => {
    const { dir } = mount();
    for (const path of ['..', '../x', '../worktree/top.txt', 'a/../../x', 'a/c/../../../outside/secret.txt', './..', 'a/../..']) {
      expect(errorOf(() => dir.openAt(NOFOLLOW, path, {}, READ)), path).toBe('not-permitted');
      expect(errorOf(() => dir.statAt(NOFOLLOW, path)), path).toBe('not-permitted');
    }
    expect(errorOf(() => dir.createDirectoryAt('../evil'))).toBe('not-permitted');
    expect(errorOf(() => dir.openAt(NOFOLLOW, '../evil.txt', { create: true }, WRITE))).toBe('not-permitted');
    expect(errorOf(() => dir.renameAt('top.txt', dir, '../stolen.txt'))).toBe('not-permitted');
    expect(errorOf(() => dir.linkAt(NOFOLLOW, '../outside/secret.txt', dir, 'got.txt'))).toBe('not-permitted');
    expect(errorOf(() => dir.symlinkAt('x', '../evil-link'))).toBe('not-permitted');
    // A subdirectory's descriptor is its own base.
    const a = dir.openAt(NOFOLLOW, 'a', {}, READ);
    expect(errorOf(() => a.openAt(NOFOLLOW, '../top.txt', {}, READ))).toBe('not-permitted');
    expect(fs.existsSync(join(base, 'evil'))).toBe(false);
    expect(fs.existsSync(join(base, 'evil.txt'))).toBe(false);
    expect(fs.existsSync(join(base, 'stolen.txt'))).toBe(false);
  });

  it('refuses absolute paths', () => {
    const { dir } = mount();
    for (const path of ['/etc/passwd', '/worktree/top.txt', '/', `${root}/top.txt`]) {
      expect(errorOf(() => dir.openAt(NOFOLLOW, path, {}, READ)), path).toBe('not-permitted');
      expect(errorOf(() => dir.statAt(FOLLOW, path)), path).toBe('not-permitted');
    }
    expect(errorOf(() => dir.createDirectoryAt(join(base, 'evil')))).toBe('not-permitted');
    expect(errorOf(() => dir.unlinkFileAt(join(outside, 'secret.txt')))).toBe('not-permitted');
    expect(fs.existsSync(join(outside, 'secret.txt'))).toBe(true);
  });

  it('never follows a pre-existing symlink to a file outside', () => {
    const { dir } = mount();
    expect(errorOf(() => dir.openAt(FOLLOW, 'passwd', {}, READ))).toBe('not-permitted');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'passwd', {}, READ))).toBe('loop');
    expect(dir.statAt(NOFOLLOW, 'passwd').type).toBe('symbolic-link');
    expect(errorOf(() => dir.statAt(FOLLOW, 'passwd'))).toBe('not-permitted');
    expect(errorOf(() => dir.readlinkAt('passwd'))).toBe('not-permitted');
    expect(errorOf(() => dir.openAt(FOLLOW, 'passwd', { truncate: true }, WRITE))).toBe('not-permitted');
    expect(errorOf(() => dir.setTimesAt(FOLLOW, 'passwd', { tag: 'now' }, { tag: 'now' }))).toBe('not-permitted');
    expect(errorOf(() => dir.openAt(FOLLOW, 'a/up', {}, READ))).toBe('not-permitted');
    expect(errorOf(() => dir.linkAt(FOLLOW, 'a/up', dir, 'got'))).toBe('not-permitted');
    // Without follow, link and rename would act on the link itself: refused where the target would climb out.
    expect(errorOf(() => dir.renameAt('a/up', dir, 'up2'))).toBe('not-permitted');
    expect(errorOf(() => dir.linkAt(NOFOLLOW, 'passwd', dir, 'passwd2'))).toBe('not-permitted');
    // Removing it is fine.
    dir.unlinkFileAt('passwd');
    expect(fs.existsSync('/etc/passwd')).toBe(true);
  });

  it('never follows a pre-existing symlink to a directory outside', () => {
    const { dir } = mount();
    for (const link of ['sibling', 'sibling-abs']) {
      expect(errorOf(() => dir.openAt(NOFOLLOW, `${link}/secret.txt`, {}, READ)), link).toBe('not-permitted');
      expect(errorOf(() => dir.openAt(FOLLOW, `${link}/secret.txt`, {}, READ)), link).toBe('not-permitted');
      expect(errorOf(() => dir.openAt(FOLLOW, link, {}, READ)), link).toBe('not-permitted');
      expect(errorOf(() => dir.openAt(NOFOLLOW, link, { directory: true }, READ)), link).toBe('loop');
      expect(errorOf(() => dir.openAt(NOFOLLOW, `${link}/`, {}, READ)), link).toBe('not-permitted');
      expect(errorOf(() => dir.statAt(NOFOLLOW, `${link}/secret.txt`)), link).toBe('not-permitted');
      expect(dir.statAt(NOFOLLOW, link).type, link).toBe('symbolic-link');
      expect(errorOf(() => dir.openAt(FOLLOW, `${link}/new.txt`, { create: true }, WRITE)), link).toBe('not-permitted');
      expect(errorOf(() => dir.createDirectoryAt(`${link}/made`)), link).toBe('not-permitted');
      expect(errorOf(() => dir.unlinkFileAt(`${link}/secret.txt`)), link).toBe('not-permitted');
      expect(errorOf(() => dir.symlinkAt('x', `${link}/l`)), link).toBe('not-permitted');
    }
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  });

  it('refuses a guest-made symlink to outside, allows one inside', () => {
    const { dir } = mount();
    expect(errorOf(() => dir.symlinkAt('/etc/passwd', 'evil'))).toBe('not-permitted');
    expect(errorOf(() => dir.symlinkAt('../outside/secret.txt', 'evil'))).toBe('not-permitted');
    expect(errorOf(() => dir.symlinkAt('a/../../outside', 'evil'))).toBe('not-permitted');
    expect(errorOf(() => dir.symlinkAt('../../outside/secret.txt', 'a/evil'))).toBe('not-permitted');
    expect(fs.existsSync(join(root, 'evil'))).toBe(false);
    expect(fs.existsSync(join(root, 'a', 'evil'))).toBe(false);
    dir.symlinkAt('a/b.txt', 'good');
    expect(readAll(dir.openAt(FOLLOW, 'good', {}, READ))).toBe('hello from a/b');
    // From a subdirectory, climbing to the worktree root is still inside.
    dir.symlinkAt('../top.txt', 'a/c/../good-top');
    expect(fs.readlinkSync(join(root, 'a', 'good-top'))).toBe('../top.txt');
    expect(readAll(dir.openAt(FOLLOW, 'a/good-top', {}, READ))).toBe('top');
    const a = dir.openAt(NOFOLLOW, 'a', {}, READ);
    a.symlinkAt('c/deep.txt', 'good-deep');
    expect(readAll(a.openAt(FOLLOW, 'good-deep', {}, READ))).toBe('deep');
    expect(errorOf(() => a.symlinkAt('../../x', 'evil'))).toBe('not-permitted');
    // A link allowed through a sub-directory path whose component is itself a symlink is still checked where it lands.
    fs.symlinkSync('a/c', join(root, 'alias'));
    dir.symlinkAt('../../top.txt', 'alias/via-alias');
    expect(readAll(dir.openAt(FOLLOW, 'a/c/via-alias', {}, READ))).toBe('top');
    expect(errorOf(() => dir.symlinkAt('../../../x', 'alias/evil'))).toBe('not-permitted');
    expect(errorOf(() => dir.symlinkAt('', 'empty'))).toBe('no-entry');
    // Moving or hard-linking an inside link to where its target would climb out is refused too.
    dir.symlinkAt('../top.txt', 'a/c/up-one');
    expect(errorOf(() => dir.renameAt('a/c/up-one', dir, 'escaped'))).toBe('not-permitted');
    expect(errorOf(() => dir.linkAt(NOFOLLOW, 'a/c/up-one', dir, 'escaped'))).toBe('not-permitted');
    dir.renameAt('a/c/up-one', dir, 'a/up-one');
    expect(readAll(dir.openAt(FOLLOW, 'a/up-one', {}, READ))).toBe('top');
    expect(fs.existsSync(join(root, 'escaped'))).toBe(false);
  });

  it('detects symlink loops and overlong chains', () => {
    const { dir } = mount();
    fs.symlinkSync('loop2', join(root, 'loop1'));
    fs.symlinkSync('loop1', join(root, 'loop2'));
    fs.symlinkSync('self', join(root, 'self'));
    fs.symlinkSync('.', join(root, 'dot'));
    expect(errorOf(() => dir.openAt(FOLLOW, 'loop1', {}, READ))).toBe('loop');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'loop1/x', {}, READ))).toBe('loop');
    expect(errorOf(() => dir.statAt(FOLLOW, 'self'))).toBe('loop');
    expect(errorOf(() => dir.openAt(FOLLOW, 'self', { create: true }, WRITE))).toBe('loop');
    // `dot/dot/dot/...` is fine until more than MAX_SYMLINKS links are taken.
    expect(readAll(dir.openAt(NOFOLLOW, `${'dot/'.repeat(MAX_SYMLINKS)}top.txt`, {}, READ))).toBe('top');
    expect(errorOf(() => dir.openAt(NOFOLLOW, `${'dot/'.repeat(MAX_SYMLINKS + 1)}top.txt`, {}, READ))).toBe('loop');
    let previous = 'top.txt';
    for (let i = 0; i < MAX_SYMLINKS + 1; i++) {
      fs.symlinkSync(previous, join(root, `chain${i}`));
      previous = `chain${i}`;
    }
    expect(readAll(dir.openAt(FOLLOW, `chain${MAX_SYMLINKS - 1}`, {}, READ))).toBe('top');
    expect(errorOf(() => dir.openAt(FOLLOW, `chain${MAX_SYMLINKS}`, {}, READ))).toBe('loop');
  });

  it('keeps an open directory descriptor on its directory when the host path is swapped for a symlink', () => {
    const { dir } = mount();
    const a = dir.openAt(NOFOLLOW, 'a', {}, READ);
    fs.renameSync(join(root, 'a'), join(base, 'a-moved'));
    fs.symlinkSync(outside, join(root, 'a'));
    fs.writeFileSync(join(outside, 'b.txt'), SECRET);
    expect(readAll(a.openAt(NOFOLLOW, 'b.txt', {}, READ))).toBe('hello from a/b');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'a/b.txt', {}, READ))).toBe('not-permitted');
  });

  it('never reads outside while a path component is swapped for a symlink in a loop (TOCTOU)', async () => {
    const { dir } = mount();
    fs.mkdirSync(join(root, 'race'));
    fs.writeFileSync(join(root, 'race', 'f.txt'), 'inside');
    fs.writeFileSync(join(outside, 'f.txt'), SECRET);
    fs.symlinkSync(outside, join(base, 'staged-link'));
    // Swap root/race between the real directory and a symlink to outside, as fast as possible, for ~1.5 s.
    const script = `
      const fs = require('node:fs');
      const [race, stagedDir, stagedLink] = process.argv.slice(1);
      const end = Date.now() + 1500;
      process.stdout.write('ready\\n');
      let swaps = 0;
      while (Date.now() < end) {
        fs.renameSync(race, stagedDir);
        fs.renameSync(stagedLink, race);
        fs.renameSync(race, stagedLink);
        fs.renameSync(stagedDir, race);
        swaps++;
      }
      process.stdout.write('swaps ' + swaps + '\\n');
    `;
    const child = spawn(process.execPath, ['-e', script, join(root, 'race'), join(base, 'staged-dir'), join(base, 'staged-link')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('ready')) resolve();
      });
      child.on('error', reject);
    });
    const outcomes = new Map<string, number>();
    const count = (key: string): void => void outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    const leaks: string[] = [];
    try {
      const end = Date.now() + 1000;
      while (Date.now() < end) {
        for (const [flags, path] of [
          [FOLLOW, 'race/f.txt'],
          [NOFOLLOW, 'race/f.txt'],
          [FOLLOW, 'race/./f.txt'],
          [NOFOLLOW, 'race/../race/f.txt'],
        ] as const) {
          let text: string;
          try {
            const file = dir.openAt(flags, path, {}, READ);
            text = readAll(file);
            drop(file);
          } catch (error) {
            count(String(error));
            continue;
          }
          if (text !== 'inside') leaks.push(`${path}: ${text}`);
          count('read inside');
        }
        let size: bigint | undefined;
        try {
          size = dir.statAt(FOLLOW, 'race/f.txt').size;
        } catch (error) {
          count(`stat ${String(error)}`);
        }
        if (size === undefined) continue;
        if (size !== 6n) leaks.push(`stat size ${size}`);
        count('stat inside');
      }
    } catch (error) {
      child.kill();
      await exited;
      throw error;
    }
    const exitCode = await exited;
    expect(leaks).toEqual([]);
    expect(exitCode).toBe(0);
    expect(output).toMatch(/swaps [1-9]/);
    // The race was really run: some opens went through the directory, some met the symlink or a missing entry.
    expect(outcomes.get('read inside') ?? 0).toBeGreaterThan(0);
    const refused = [...outcomes.entries()].filter(([key]) => key !== 'read inside' && key !== 'stat inside');
    expect(refused.length).toBeGreaterThan(0);
    for (const [key] of refused) expect(['not-permitted', 'no-entry', 'loop', 'stat not-permitted', 'stat no-entry', 'stat loop']).toContain(key);
    expect(fs.readFileSync(join(outside, 'f.txt'), 'utf8')).toBe(SECRET);
  });
});

describe('read-only worktrees', () => {
  it('refuses every mutation with read-only and still reads', () => {
    const { dir } = mount({ readOnly: true });
    const before = JSON.stringify(fs.readdirSync(root, { recursive: true }).sort());
    const file = dir.openAt(NOFOLLOW, 'top.txt', {}, READ);
    const a = dir.openAt(NOFOLLOW, 'a', {}, READ);
    const mutations: Record<string, () => unknown> = {
      'open create': () => dir.openAt(NOFOLLOW, 'new.txt', { create: true }, READ),
      'open truncate': () => dir.openAt(NOFOLLOW, 'top.txt', { truncate: true }, READ),
      'open write': () => dir.openAt(NOFOLLOW, 'top.txt', {}, WRITE),
      write: () => file.write(new Uint8Array([1]), 0n),
      writeViaStream: () => file.writeViaStream(0n),
      appendViaStream: () => file.appendViaStream(),
      setSize: () => file.setSize(0n),
      setTimes: () => file.setTimes({ tag: 'now' }, { tag: 'now' }),
      setTimesAt: () => dir.setTimesAt(NOFOLLOW, 'top.txt', { tag: 'now' }, { tag: 'now' }),
      createDirectoryAt: () => dir.createDirectoryAt('d'),
      linkAt: () => dir.linkAt(NOFOLLOW, 'top.txt', a, 'hard.txt'),
      renameAt: () => dir.renameAt('top.txt', a, 'moved.txt'),
      symlinkAt: () => dir.symlinkAt('top.txt', 'l'),
      unlinkFileAt: () => dir.unlinkFileAt('top.txt'),
      removeDirectoryAt: () => dir.removeDirectoryAt('a/c'),
    };
    for (const [name, mutation] of Object.entries(mutations)) expect(errorOf(mutation), name).toBe('read-only');
    expect(JSON.stringify(fs.readdirSync(root, { recursive: true }).sort())).toBe(before);
    expect(fs.readFileSync(join(root, 'top.txt'), 'utf8')).toBe('top');
    expect(readAll(file)).toBe('top');
    expect(readAll(dir.openAt(FOLLOW, 'inside', {}, READ))).toBe('hello from a/b');
    expect(listing(a).map((entry) => entry.name)).toEqual(['b.txt', 'c', 'to-top', 'up']);
    expect(dir.getFlags()).toEqual({ read: true, mutateDirectory: false });
  });
});

describe('descriptor lifetime', () => {
  it('fails every operation with bad-descriptor once isActive turns false', () => {
    let active = true;
    const { dir } = mount({ isActive: () => active });
    const file = dir.openAt(NOFOLLOW, 'a/b.txt', {}, WRITE);
    const input = file.readViaStream(0n);
    const output = file.writeViaStream(0n);
    const entries = dir.readDirectory();
    active = false;
    for (const operation of [
      () => dir.openAt(NOFOLLOW, 'top.txt', {}, READ),
      () => dir.statAt(NOFOLLOW, 'top.txt'),
      () => dir.stat(),
      () => dir.readDirectory(),
      () => dir.createDirectoryAt('d'),
      () => file.read(10n, 0n),
      () => file.write(new Uint8Array([1]), 0n),
      () => file.readViaStream(0n),
      () => file.getType(),
      () => entries.readDirectoryEntry(),
    ]) {
      expect(errorOf(operation)).toBe('bad-descriptor');
    }
    expect(errorOf(() => input.blockingRead(10n))).toMatchObject({ tag: 'last-operation-failed' });
    expect(errorOf(() => output.checkWrite())).toMatchObject({ tag: 'last-operation-failed' });
    expect(errorOf(() => output.blockingWriteAndFlush(new Uint8Array([1])))).toMatchObject({ tag: 'last-operation-failed' });
    active = true;
    expect(readAll(file)).toBe('hello from a/b');
  });

  it('fails with bad-descriptor after dispose and closes every fd', () => {
    const before = openFds();
    const { adapter, dir } = mount();
    const descriptors: Descriptor[] = [];
    for (let i = 0; i < 200; i++) {
      descriptors.push(dir.openAt(NOFOLLOW, i % 2 ? 'a/b.txt' : 'a/c', {}, READ));
      const file = dir.openAt(FOLLOW, 'inside', {}, READ);
      file.readViaStream(0n);
      dir.readDirectory().readDirectoryEntry();
      expect(errorOf(() => dir.openAt(FOLLOW, 'sibling/secret.txt', {}, READ))).toBe('not-permitted');
      expect(errorOf(() => dir.openAt(NOFOLLOW, 'a/c/../../..', {}, READ))).toBe('not-permitted');
    }
    expect(openFds()).toBeGreaterThan(before + 200);
    adapter.dispose();
    expect(adapter.openFiles).toBe(0);
    expect(openFds()).toBe(before);
    expect(errorOf(() => descriptors[0]!.stat())).toBe('bad-descriptor');
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'top.txt', {}, READ))).toBe('bad-descriptor');
    adapter.dispose();
  });

  it('closes a descriptor\'s fd when the guest drops it, after its streams', () => {
    const before = openFds();
    const { adapter, dir } = mount();
    expect(adapter.openFiles).toBe(1);
    for (let i = 0; i < 300; i++) drop(dir.openAt(NOFOLLOW, 'a/b.txt', {}, READ));
    expect(adapter.openFiles).toBe(1);
    const file = dir.openAt(NOFOLLOW, 'a/b.txt', {}, READ);
    const stream = file.readViaStream(0n);
    drop(file);
    expect(adapter.openFiles).toBe(2);
    expect(Buffer.from(stream.blockingRead(5n)).toString()).toBe('hello');
    drop(stream);
    expect(adapter.openFiles).toBe(1);
    const listing = dir.readDirectory();
    expect(adapter.openFiles).toBe(2);
    while (listing.readDirectoryEntry() !== undefined);
    expect(adapter.openFiles).toBe(1);
    // A listing dropped half-read closes too.
    const partial = dir.readDirectory();
    expect(partial.readDirectoryEntry()).toBeDefined();
    expect(adapter.openFiles).toBe(2);
    drop(partial);
    expect(adapter.openFiles).toBe(1);
    // Dropping the preopen does not close the root: it is the call's, closed by dispose.
    drop(dir);
    expect(dir.statAt(NOFOLLOW, 'top.txt').size).toBe(3n);
    expect(openFds()).toBe(before + 1);
    adapter.dispose();
    expect(openFds()).toBe(before);
  });

  it('caps how many fds one adapter keeps open', () => {
    const { dir } = mount({ maxOpenFiles: 5 });
    const kept = [1, 2, 3, 4].map(() => dir.openAt(NOFOLLOW, 'top.txt', {}, READ));
    expect(errorOf(() => dir.openAt(NOFOLLOW, 'top.txt', {}, READ))).toBe('insufficient-memory');
    expect(errorOf(() => dir.readDirectory())).toBe('insufficient-memory');
    drop(kept[0]!);
    expect(readAll(dir.openAt(NOFOLLOW, 'top.txt', {}, READ))).toBe('top');
  });
});
