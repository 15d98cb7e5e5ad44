/**
 * Path confinement for the worktree: how a guest-supplied relative path is
 * resolved to an entry beneath an open directory, using nothing but
 * synchronous `node:fs` calls on Linux. No WASI here: failures are
 * {@link ConfinementError}s carrying a Node-style code (errno.ts maps them,
 * like any Node error, to wasi:filesystem error codes).
 *
 * Guarantees (for a security reviewer, the reason this file exists alone):
 * - Confinement does not rely on checking a host path and then using it
 *   (which a concurrent rename could undo). Every directory is held open as
 *   an fd, and a guest path is resolved one component at a time, each next
 *   component opened relative to the already-open parent through
 *   `/proc/self/fd/<parentFd>/<name>` with O_NOFOLLOW. The kernel resolves
 *   the magic `/proc/self/fd/N` to the open directory's inode, so swapping
 *   any component of the host path for a symlink cannot redirect the walk.
 * - Absolute paths are refused (`EPERM`). `..` pops the walk's own stack of
 *   directory fds and never goes above the directory it started from (WASI:
 *   paths stay beneath their base directory, else `not-permitted`): `EPERM`.
 * - Symlinks are never followed by the kernel: a link met while walking (or
 *   at the end, when the caller asks to follow it) is read and its target
 *   walked the same way, from the link's directory; absolute targets and
 *   targets climbing above the base are `EPERM`, and more than
 *   {@link MAX_SYMLINKS} links in one resolution is `ELOOP`.
 * - The last component is handed to the caller as an open directory fd plus
 *   one plain name, to be acted on with calls that do not follow it either
 *   (open with O_NOFOLLOW, lstat, lutimes, mkdir, unlink, rmdir, rename,
 *   link, symlink, readlink), so a link swapped in at the end is at worst
 *   operated on itself, inside the worktree.
 * - No guest-supplied host path ever reaches `node:fs` other than as one
 *   component (never `.`/`..`, never containing `/`) under `/proc/self/fd/N`
 *   (see {@link fdPath}).
 *
 * As hygiene for whatever reads the worktree after the call, a guest may not
 * create a symlink whose target, read from the link's directory, climbs out
 * of the worktree, nor rename or hard-link one to where it would
 * ({@link checkSymlinkStaysInside}, {@link checkMovedSymlink}). This is best
 * effort (moving a directory moves the links inside it unchecked, and the
 * host may have put such links there): the guarantee is that the walk never
 * follows one out.
 */
import fs from 'node:fs';
import path from 'node:path';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** Most symlinks followed while resolving one path. */
export const MAX_SYMLINKS = 40;
/** Most directories open at once during one path walk. */
const MAX_WALK_DEPTH = 256;

// ---------------------------------------------------------------------------
// Errors

/** The Node-style code of a confinement failure (what the same failure would be as a syscall error). */
export type ConfinementCode = 'EPERM' | 'ELOOP' | 'ENOENT' | 'EINVAL' | 'ENOTDIR' | 'ENAMETOOLONG' | 'EEXIST';

/** Why a path was refused. */
export type ConfinementReason =
  | 'absolute-path'
  | 'empty-path'
  | 'invalid-path'
  | 'escapes-base'
  | 'absolute-symlink'
  | 'empty-symlink'
  | 'symlink-target-escapes'
  | 'too-many-symlinks'
  | 'not-a-directory'
  | 'too-deep'
  | 'names-base'
  | 'dot-entry';

/** A path the walk refused, with a Node-style `code` (like the fs errors it lets through) and the `reason`. */
export class ConfinementError extends Error {
  readonly code: ConfinementCode;
  readonly reason: ConfinementReason;

  constructor(code: ConfinementCode, reason: ConfinementReason) {
    super(`worktree path refused: ${reason} (${code})`);
    this.name = 'ConfinementError';
    this.code = code;
    this.reason = reason;
  }
}

function refuse(code: ConfinementCode, reason: ConfinementReason): never {
  throw new ConfinementError(code, reason);
}

/** The `code` of a Node (or confinement) error, if it has one. */
export function nodeCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

// ---------------------------------------------------------------------------
// Opening the root

/** The host path of an open fd, or of the entry `name` (one plain component) in the open directory `fd`. */
export const fdPath = (fd: number, name?: string): string => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

export function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already gone
  }
}

/**
 * Open the directory at the absolute host path `root` (after resolving the
 * host's own symlinks in it: the root itself is trusted, what is below it is
 * not), and check that `/proc/self/fd` resolves open fds, which everything
 * here relies on.
 */
export function openRoot(root: string): number {
  if (!path.isAbsolute(root)) throw new TypeError(`worktree root must be an absolute path: ${root}`);
  const fd = fs.openSync(fs.realpathSync(root), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    // Everything here resolves through /proc/self/fd; make sure it is there and means what we think.
    const direct = fs.fstatSync(fd);
    const viaProc = fs.statSync(fdPath(fd));
    if (direct.ino !== viaProc.ino || direct.dev !== viaProc.dev) throw new Error('/proc/self/fd does not resolve to open files');
  } catch (error) {
    closeQuietly(fd);
    throw new Error(`WorktreeAdapter needs a mounted /proc: ${(error as Error).message}`);
  }
  return fd;
}

// ---------------------------------------------------------------------------
// Walking a path

/** Reject what is never a valid relative path. */
function checkPath(guestPath: string): void {
  if (typeof guestPath !== 'string') refuse('EINVAL', 'invalid-path');
  if (guestPath.startsWith('/')) refuse('EPERM', 'absolute-path');
  if (guestPath === '') refuse('ENOENT', 'empty-path');
  if (guestPath.includes('\0')) refuse('EINVAL', 'invalid-path');
}

/** Whether the entry `name` in the open directory `dir` is a symlink (without following it). */
export function isSymlink(dir: number, name: string): boolean {
  try {
    return fs.lstatSync(fdPath(dir, name)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Returned by a walk's final step to have the walk follow the symlink it found. */
export const FOLLOW = Symbol('follow');

/**
 * The last step of a walk: `dir` is an open directory fd (valid only during
 * the call), `name` the final component (a plain name: never empty, `.` or
 * `..`) or null when the path names `dir` itself; `depth` is `dir`'s depth
 * below the worktree root. It returns its result, or {@link FOLLOW} when
 * `name` is a symlink it wants followed.
 */
export type FinalStep<T> = (dir: number, name: string | null, depth: number) => T | typeof FOLLOW;

/**
 * Resolve `guestPath` beneath the open directory `base` (at `baseDepth`
 * below the worktree root) and hand its last component to `final`. Every
 * directory fd the walk opened is closed when it returns or throws.
 */
export function walk<T>(base: number, baseDepth: number, guestPath: string, final: FinalStep<T>): T {
  checkPath(guestPath);
  const stack: number[] = [base];
  const pending = guestPath.split('/').reverse();
  let links = 0;
  const expand = (target: string): void => {
    if (++links > MAX_SYMLINKS) refuse('ELOOP', 'too-many-symlinks');
    if (target.startsWith('/')) refuse('EPERM', 'absolute-symlink');
    if (target === '') refuse('ENOENT', 'empty-symlink');
    const parts = target.split('/');
    for (let i = parts.length - 1; i >= 0; i--) pending.push(parts[i]!);
  };
  /** The target of `name` in `dir`, or undefined if it is not a symlink. */
  const readLink = (dir: number, name: string): string | undefined => {
    try {
      return fs.readlinkSync(fdPath(dir, name));
    } catch (error) {
      if (nodeCode(error) === 'EINVAL') return undefined;
      throw error;
    }
  };
  try {
    for (;;) {
      const dir = stack[stack.length - 1]!;
      const depth = baseDepth + stack.length - 1;
      const name = pending.pop();
      if (name === undefined) {
        const result = final(dir, null, depth);
        // The path names the base (or a directory reached by `..`) itself: there is no link to follow.
        if (result === FOLLOW) refuse('EINVAL', 'names-base');
        return result;
      }
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (stack.length === 1) refuse('EPERM', 'escapes-base');
        fs.closeSync(stack.pop()!);
        continue;
      }
      if (pending.length === 0) {
        const result = final(dir, name, depth);
        if (result !== FOLLOW) return result;
        const target = readLink(dir, name);
        if (target === undefined) {
          // No longer a symlink (it changed under us): try the step again, within the link budget.
          if (++links > MAX_SYMLINKS) refuse('ELOOP', 'too-many-symlinks');
          pending.push(name);
        } else {
          expand(target);
        }
        continue;
      }
      // An intermediate component: it must be a directory, or a symlink to follow.
      let next: number;
      try {
        next = fs.openSync(fdPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
      } catch (error) {
        const code = nodeCode(error);
        // O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP).
        if (code !== 'ELOOP' && code !== 'ENOTDIR') throw error;
        const target = readLink(dir, name);
        if (target !== undefined) {
          expand(target);
          continue;
        }
        // Not a symlink now. Unless it changed under us (a directory or symlink again: retry, within the link budget), it is not a directory.
        const now = fs.lstatSync(fdPath(dir, name));
        if (!now.isDirectory() && !now.isSymbolicLink()) refuse('ENOTDIR', 'not-a-directory');
        if (++links > MAX_SYMLINKS) refuse('ELOOP', 'too-many-symlinks');
        pending.push(name);
        continue;
      }
      if (stack.length >= MAX_WALK_DEPTH) {
        closeQuietly(next);
        refuse('ENAMETOOLONG', 'too-deep');
      }
      stack.push(next);
    }
  } finally {
    for (let i = 1; i < stack.length; i++) closeQuietly(stack[i]!);
  }
}

/**
 * {@link walk} for operations on an entry by name (create, remove, rename,
 * link): the parent is resolved, the last name is not (and is never
 * followed). A last name of `.` or `..` fails with `dotEntryCode`: `EEXIST`
 * for creating (that entry always exists), `EINVAL` for removing or moving.
 */
export function walkParent<T>(
  base: number,
  baseDepth: number,
  guestPath: string,
  dotEntryCode: 'EEXIST' | 'EINVAL',
  step: (dir: number, name: string, depth: number) => T,
): T {
  checkPath(guestPath);
  const trimmed = guestPath.replace(/\/+$/, '');
  const slash = trimmed.lastIndexOf('/');
  const name = trimmed.slice(slash + 1);
  const parent = slash === -1 ? '.' : trimmed.slice(0, slash);
  if (name === '.' || name === '..') refuse(dotEntryCode, 'dot-entry');
  return walk(base, baseDepth, `${parent}/`, (dir, _name, depth) => step(dir, name, depth));
}

// ---------------------------------------------------------------------------
// Symlinks the guest makes or moves (hygiene, best effort)

/** Whether a symlink at `depth` below the root with this (relative) target stays inside the worktree, read lexically. */
export function targetStaysInside(target: string, depth: number): boolean {
  let level = depth;
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (--level < 0) return false;
    } else {
      level++;
    }
  }
  return true;
}

/** Reject a symlink target that is never acceptable, before anything is resolved: not a string, NUL, absolute, empty. */
export function checkSymlinkTarget(target: string): void {
  if (typeof target !== 'string' || target.includes('\0')) refuse('EINVAL', 'invalid-path');
  if (target.startsWith('/')) refuse('EPERM', 'absolute-symlink');
  if (target === '') refuse('ENOENT', 'empty-symlink');
}

/**
 * Reject creating a symlink with this target in a directory at `depth`
 * below the root when, read from the link's directory, it would climb above
 * the worktree root. (Following re-checks every step anyway.)
 */
export function checkSymlinkStaysInside(target: string, depth: number): void {
  if (!targetStaysInside(target, depth)) refuse('EPERM', 'symlink-target-escapes');
}

/**
 * Refuse moving (or hard-linking) a symlink to a directory at `depth` where
 * its relative target would climb out of the worktree. Best effort, like
 * {@link checkSymlinkStaysInside} (moving a directory moves the links inside
 * it unchecked); following a link is what is always confined.
 */
export function checkMovedSymlink(dir: number, name: string, depth: number): void {
  let target: string;
  try {
    target = fs.readlinkSync(fdPath(dir, name));
  } catch {
    return; // not a symlink (or gone: the rename itself will say so)
  }
  if (target.startsWith('/') || !targetStaysInside(target, depth)) refuse('EPERM', 'symlink-target-escapes');
}
