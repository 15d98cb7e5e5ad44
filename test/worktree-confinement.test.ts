/**
 * Path confinement on its own (host/sandbox/wasi/worktree-confinement.ts),
 * driven with plain fds on a temp dir: paths resolve beneath the open root
 * and never outside it, whatever `..`, absolute paths, symlinks, loops or
 * files in the middle of a path try; refusals are ConfinementErrors with a
 * Node-style code; no fd outlives a walk.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConfinementError,
  FOLLOW,
  MAX_SYMLINKS,
  checkMovedSymlink,
  checkSymlinkStaysInside,
  checkSymlinkTarget,
  fdPath,
  openRoot,
  targetStaysInside,
  walk,
  walkParent,
  type FinalStep,
} from '../host/sandbox/wasi/worktree-confinement.js';

const { O_RDONLY, O_NOFOLLOW } = fs.constants;
const SECRET = 'outside the worktree';

let base: string;
let root: string;
let rootFd: number;

/**
 * base/
 *   secret.txt            (SECRET)
 *   worktree/             (the root)
 *     a/b.txt             "b"
 *     a/c/                (empty)
 *     file.txt            "file"
 *     out -> ../secret.txt
 *     out-dir -> ..
 *     out-abs -> <base>/secret.txt
 *     in -> a/b.txt
 *     a/up -> ../file.txt
 *     loop1 -> loop2, loop2 -> loop1
 */
beforeEach(() => {
  base = fs.mkdtempSync(join(tmpdir(), 'worktree-confinement-'));
  root = join(base, 'worktree');
  fs.writeFileSync(join(base, 'secret.txt'), SECRET);
  fs.mkdirSync(join(root, 'a', 'c'), { recursive: true });
  fs.writeFileSync(join(root, 'a', 'b.txt'), 'b');
  fs.writeFileSync(join(root, 'file.txt'), 'file');
  fs.symlinkSync('../secret.txt', join(root, 'out'));
  fs.symlinkSync('..', join(root, 'out-dir'));
  fs.symlinkSync(join(base, 'secret.txt'), join(root, 'out-abs'));
  fs.symlinkSync('a/b.txt', join(root, 'in'));
  fs.symlinkSync('../file.txt', join(root, 'a', 'up'));
  fs.symlinkSync('loop2', join(root, 'loop1'));
  fs.symlinkSync('loop1', join(root, 'loop2'));
  rootFd = openRoot(root);
});

afterEach(() => {
  fs.closeSync(rootFd);
  fs.rmSync(base, { recursive: true, force: true });
});

const openFds = (): number => fs.readdirSync('/proc/self/fd').length;

/** A final step that reads the file the path names, following a symlink at the end. */
const readFile: FinalStep<string> = (dir, name) => {
  if (name === null) return '<dir>';
  if (fs.lstatSync(fdPath(dir, name)).isSymbolicLink()) return FOLLOW;
  const fd = fs.openSync(fdPath(dir, name), O_RDONLY | O_NOFOLLOW);
  try {
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
};

/** The ConfinementError (or other error) `operation` threw. */
function refusal(operation: () => unknown): { code?: string; reason?: string; isConfinement: boolean } {
  try {
    operation();
  } catch (error) {
    const { code, reason } = error as { code?: string; reason?: string };
    return { code, reason, isConfinement: error instanceof ConfinementError };
  }
  throw new Error('expected the operation to be refused');
}

describe('walk', () => {
  it('resolves plain paths, `.` and `..` that stay beneath the root', () => {
    expect(walk(rootFd, 0, 'a/b.txt', readFile)).toBe('b');
    expect(walk(rootFd, 0, './a/./c/../b.txt', readFile)).toBe('b');
    expect(walk(rootFd, 0, 'a/c/../../file.txt', readFile)).toBe('file');
    expect(walk(rootFd, 0, 'a/c/..', readFile)).toBe('<dir>');
  });

  it('hands the final step the depth of the directory it ends in', () => {
    expect(walk(rootFd, 0, 'a/c/x', (_dir, _name, depth) => depth)).toBe(2);
    expect(walk(rootFd, 3, 'a/x', (_dir, _name, depth) => depth)).toBe(4);
  });

  it('refuses `..` that climbs above the base directory', () => {
    expect(refusal(() => walk(rootFd, 0, '..', readFile))).toEqual({ code: 'EPERM', reason: 'escapes-base', isConfinement: true });
    expect(refusal(() => walk(rootFd, 0, 'a/../../secret.txt', readFile))).toMatchObject({ code: 'EPERM', reason: 'escapes-base' });
  });

  it('refuses `..` above the base even when the base is below the root', () => {
    const a = fs.openSync(fdPath(rootFd, 'a'), O_RDONLY);
    try {
      expect(refusal(() => walk(a, 1, '../file.txt', readFile))).toMatchObject({ code: 'EPERM', reason: 'escapes-base' });
    } finally {
      fs.closeSync(a);
    }
  });

  it('refuses absolute, empty and NUL-containing paths', () => {
    expect(refusal(() => walk(rootFd, 0, join(base, 'secret.txt'), readFile))).toMatchObject({ code: 'EPERM', reason: 'absolute-path' });
    expect(refusal(() => walk(rootFd, 0, '/etc/passwd', readFile))).toMatchObject({ code: 'EPERM', reason: 'absolute-path' });
    expect(refusal(() => walk(rootFd, 0, '', readFile))).toMatchObject({ code: 'ENOENT', reason: 'empty-path' });
    expect(refusal(() => walk(rootFd, 0, 'a\0b', readFile))).toMatchObject({ code: 'EINVAL', reason: 'invalid-path' });
  });

  it('never follows a pre-existing symlink out of the worktree', () => {
    expect(refusal(() => walk(rootFd, 0, 'out', readFile))).toMatchObject({ code: 'EPERM', reason: 'escapes-base' });
    expect(refusal(() => walk(rootFd, 0, 'out-dir/secret.txt', readFile))).toMatchObject({ code: 'EPERM', reason: 'escapes-base' });
    expect(refusal(() => walk(rootFd, 0, 'out-abs', readFile))).toMatchObject({ code: 'EPERM', reason: 'absolute-symlink' });
  });

  it('follows symlinks that stay within, from the link’s own directory', () => {
    expect(walk(rootFd, 0, 'in', readFile)).toBe('b');
    expect(walk(rootFd, 0, 'a/up', readFile)).toBe('file');
  });

  it('does not follow a symlink at the end unless the final step asks to', () => {
    const lstatOnly: FinalStep<boolean> = (dir, name) => fs.lstatSync(fdPath(dir, name!)).isSymbolicLink();
    expect(walk(rootFd, 0, 'out', lstatOnly)).toBe(true);
  });

  it('stops a symlink loop after MAX_SYMLINKS links', () => {
    expect(refusal(() => walk(rootFd, 0, 'loop1', readFile))).toMatchObject({ code: 'ELOOP', reason: 'too-many-symlinks' });
    expect(refusal(() => walk(rootFd, 0, 'loop1/x', readFile))).toMatchObject({ code: 'ELOOP', reason: 'too-many-symlinks' });
    let chain = 'chain0';
    fs.writeFileSync(join(root, 'end.txt'), 'end');
    fs.symlinkSync('end.txt', join(root, chain));
    for (let i = 1; i <= MAX_SYMLINKS; i++) {
      fs.symlinkSync(chain, join(root, `chain${i}`));
      chain = `chain${i}`;
    }
    expect(refusal(() => walk(rootFd, 0, chain, readFile))).toMatchObject({ code: 'ELOOP' });
    expect(walk(rootFd, 0, `chain${MAX_SYMLINKS - 1}`, readFile)).toBe('end');
  });

  it('refuses a path that goes through a file', () => {
    expect(refusal(() => walk(rootFd, 0, 'file.txt/x', readFile))).toEqual({ code: 'ENOTDIR', reason: 'not-a-directory', isConfinement: true });
  });

  it('lets fs errors of missing entries through as they are', () => {
    expect(refusal(() => walk(rootFd, 0, 'missing/x', readFile))).toMatchObject({ code: 'ENOENT', isConfinement: false });
  });

  it('closes every directory it opened, whether it returns or throws', () => {
    const before = openFds();
    walk(rootFd, 0, 'a/c/../b.txt', readFile);
    refusal(() => walk(rootFd, 0, 'a/c/../../..', readFile));
    refusal(() => walk(rootFd, 0, 'a/c/x', () => {
      throw new Error('final step failed');
    }));
    expect(openFds()).toBe(before);
  });
});

describe('walkParent', () => {
  it('resolves the parent and hands over the last name unresolved', () => {
    expect(walkParent(rootFd, 0, 'a/new.txt', 'EEXIST', (_dir, name, depth) => [name, depth])).toEqual(['new.txt', 1]);
    expect(walkParent(rootFd, 0, 'out', 'EINVAL', (dir, name) => fs.lstatSync(fdPath(dir, name)).isSymbolicLink())).toBe(true);
    expect(walkParent(rootFd, 0, 'a/c/', 'EINVAL', (_dir, name) => name)).toBe('c');
  });

  it('refuses `.` and `..` as the entry with the code the caller chose', () => {
    expect(refusal(() => walkParent(rootFd, 0, 'a/..', 'EEXIST', () => 0))).toMatchObject({ code: 'EEXIST', reason: 'dot-entry' });
    expect(refusal(() => walkParent(rootFd, 0, '.', 'EINVAL', () => 0))).toMatchObject({ code: 'EINVAL', reason: 'dot-entry' });
  });

  it('refuses parents outside the worktree', () => {
    expect(refusal(() => walkParent(rootFd, 0, '../x', 'EEXIST', () => 0))).toMatchObject({ code: 'EPERM' });
    expect(refusal(() => walkParent(rootFd, 0, 'out-dir/x', 'EEXIST', () => 0))).toMatchObject({ code: 'EPERM' });
    expect(refusal(() => walkParent(rootFd, 0, '/tmp/x', 'EEXIST', () => 0))).toMatchObject({ code: 'EPERM', reason: 'absolute-path' });
  });
});

describe('symlinks the guest makes or moves', () => {
  it('reads a target lexically from the link’s depth', () => {
    expect(targetStaysInside('../x', 1)).toBe(true);
    expect(targetStaysInside('../x', 0)).toBe(false);
    expect(targetStaysInside('a/../../x', 0)).toBe(false);
    expect(targetStaysInside('./a/b/../c', 0)).toBe(true);
  });

  it('refuses targets that are absolute, empty, NUL-containing or climb out', () => {
    expect(refusal(() => checkSymlinkTarget('/etc/passwd'))).toMatchObject({ code: 'EPERM', reason: 'absolute-symlink' });
    expect(refusal(() => checkSymlinkTarget(''))).toMatchObject({ code: 'ENOENT' });
    expect(refusal(() => checkSymlinkTarget('a\0'))).toMatchObject({ code: 'EINVAL' });
    expect(() => checkSymlinkTarget('a/b')).not.toThrow();
    expect(refusal(() => checkSymlinkStaysInside('../../x', 1))).toMatchObject({ code: 'EPERM', reason: 'symlink-target-escapes' });
    expect(() => checkSymlinkStaysInside('../x', 1)).not.toThrow();
  });

  it('refuses moving a symlink to where its target would climb out', () => {
    // a/up -> ../file.txt stays inside at depth 1, not at depth 0.
    const a = fs.openSync(fdPath(rootFd, 'a'), O_RDONLY);
    try {
      expect(() => checkMovedSymlink(a, 'up', 1)).not.toThrow();
      expect(refusal(() => checkMovedSymlink(a, 'up', 0))).toMatchObject({ code: 'EPERM', reason: 'symlink-target-escapes' });
      expect(() => checkMovedSymlink(a, 'b.txt', 0)).not.toThrow();
    } finally {
      fs.closeSync(a);
    }
    expect(refusal(() => checkMovedSymlink(rootFd, 'out-abs', 5))).toMatchObject({ code: 'EPERM' });
  });
});

describe('openRoot', () => {
  it('needs an absolute path and opens the directory itself', () => {
    expect(() => openRoot('relative/path')).toThrow(TypeError);
    const fd = openRoot(root);
    try {
      expect(fs.fstatSync(fd).ino).toBe(fs.statSync(root).ino);
    } finally {
      fs.closeSync(fd);
    }
  });
});
