/**
 * A wasi:filesystem adapter for preview2-shim's browser build that gives a
 * guest one host directory (the call's worktree) and nothing outside it.
 *
 * The guest runs synchronously in a worker thread, so every operation here is
 * a synchronous `node:fs` call. Confinement does not rely on checking a host
 * path and then using it (which a concurrent rename could undo):
 * - every directory descriptor holds an open fd for its directory;
 * - a guest path is resolved one component at a time, each next component
 *   opened relative to the already-open parent through
 *   `/proc/self/fd/<parentFd>/<name>` with O_NOFOLLOW; the kernel resolves the
 *   magic `/proc/self/fd/N` to the open directory's inode, so swapping any
 *   component of the host path for a symlink cannot redirect the walk;
 * - `..` pops the walk's own stack of directory fds and never goes above the
 *   descriptor it started from (WASI: paths stay beneath their base
 *   directory, else `not-permitted`);
 * - symlinks are never followed by the kernel: a link met while walking (or
 *   at the end, when `symlink-follow` asks for it) is read and its target
 *   walked the same way, from the link's directory; absolute targets and
 *   targets climbing above the base are `not-permitted`, and more than
 *   {@link MAX_SYMLINKS} links in one resolution is a `loop`;
 * - the last component is acted on with calls that do not follow it either
 *   (open with O_NOFOLLOW, lstat, lutimes, mkdir, unlink, rmdir, rename,
 *   link, symlink, readlink), so a link swapped in at the end is at worst
 *   operated on itself, inside the worktree.
 * No guest-supplied host path ever reaches `node:fs` other than as one
 * component (never `.`/`..`, never containing `/`) under `/proc/self/fd/N`.
 *
 * As hygiene for whatever reads the worktree after the call, the guest may
 * not create a symlink whose target, read from the link's directory, climbs
 * out of the worktree, nor rename or hard-link one to where it would. This
 * is best effort (moving a directory moves the links inside it unchecked,
 * and the host may have put such links there): the guarantee is that this
 * adapter never follows one out. Only directories and regular files can be
 * opened (no FIFOs or devices); readlink of an absolute target is
 * `not-permitted` (it would reveal a host path).
 *
 * Read-only adapters refuse every mutation with `read-only`. When `isActive`
 * says the call has ended, or after {@link WorktreeAdapter.dispose}, every
 * operation fails with `bad-descriptor`, and the fds are closed.
 *
 * Dropped descriptors close their fd: the shim's public `Descriptor` class
 * does not forward `[Symbol.dispose]` (which jco calls when a guest drops an
 * owned handle) to its implementation, so this module gives it one (see
 * {@link installDropHook}). Open descriptors per adapter are capped
 * ({@link WorktreeAdapterOptions.maxOpenFiles}): worker threads share the
 * process's fd table.
 */
import fs from 'node:fs';
import path from 'node:path';
import type {
  Advice,
  Datetime,
  DescriptorFlags,
  DescriptorStat,
  DescriptorType,
  DirectoryEntry,
  ErrorCode,
  MetadataHashValue,
  NewTimestamp,
  OpenFlags,
  PathFlags,
} from '@bytecodealliance/preview2-shim/interfaces/wasi-filesystem-types';

/** A wasi:io stream object made by the shim's io module (opaque here). */
export type ShimStream = object;

interface InputHandler {
  blockingRead(len: bigint): Uint8Array;
  subscribe(): unknown;
  drop(): void;
}

interface OutputHandler {
  checkWrite(): bigint;
  write(bytes: Uint8Array): void;
  flush(): void;
  blockingFlush(): void;
  subscribe(): unknown;
  drop(): void;
}

interface BrowserIo {
  inputStreamCreate(handler: InputHandler): ShimStream;
  outputStreamCreate(handler: OutputHandler): ShimStream;
  pollableCreate(): unknown;
  ioErrorCreate(message: string): Error;
}

interface BrowserFilesystem {
  types: { Descriptor: { prototype: object }; DirectoryEntryStream: { prototype: object } };
}

const shimEntry = import.meta.resolve('@bytecodealliance/preview2-shim');
const io = (await import(new URL('../browser/io.js', shimEntry).href)) as BrowserIo;
const browserFilesystem = (await import(new URL('../browser/filesystem.js', shimEntry).href)) as BrowserFilesystem;
/** What a wrapper around a descriptor implementation (e.g. a Proxy) hands back the real one under. */
const { UNWRAP_DESCRIPTOR } = (await import(new URL('../browser/in-memory-filesystem.js', shimEntry).href)) as { UNWRAP_DESCRIPTOR: symbol };

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_SYNC, O_DSYNC } = fs.constants;

/** Most symlinks followed while resolving one path. */
export const MAX_SYMLINKS = 40;
/** Most directories open at once during one path walk. */
const MAX_WALK_DEPTH = 256;
/** Largest single read (the guest loops for more). */
const MAX_READ = 4 * 1024 * 1024;
/** What an output stream lets the guest write at once. */
const WRITE_PERMIT = 1024n * 1024n;
const DEFAULT_MAX_OPEN_FILES = 1024;

export interface WorktreeAdapterOptions {
  /** The host directory the guest sees (absolute). */
  root: string;
  /** Refuse every mutation with `read-only`. */
  readOnly: boolean;
  /** When it returns false, every operation fails with `bad-descriptor`. */
  isActive?: () => boolean;
  /** Most descriptors and directory listings open at once (default 1024); beyond it opens fail with `insufficient-memory`. */
  maxOpenFiles?: number;
}

// ---------------------------------------------------------------------------
// Errors

/** Node error codes and the wasi error-code each becomes. */
const ERROR_CODES: Record<string, ErrorCode> = {
  EACCES: 'access',
  EAGAIN: 'would-block',
  EWOULDBLOCK: 'would-block',
  EALREADY: 'already',
  EBADF: 'bad-descriptor',
  EBUSY: 'busy',
  EDEADLK: 'deadlock',
  EDQUOT: 'quota',
  EEXIST: 'exist',
  EFBIG: 'file-too-large',
  EILSEQ: 'illegal-byte-sequence',
  EINPROGRESS: 'in-progress',
  EINTR: 'interrupted',
  EINVAL: 'invalid',
  EIO: 'io',
  EISDIR: 'is-directory',
  ELOOP: 'loop',
  EMLINK: 'too-many-links',
  EMSGSIZE: 'message-size',
  ENAMETOOLONG: 'name-too-long',
  ENODEV: 'no-device',
  ENOENT: 'no-entry',
  ENOLCK: 'no-lock',
  ENOMEM: 'insufficient-memory',
  EMFILE: 'insufficient-memory',
  ENFILE: 'insufficient-memory',
  ENOSPC: 'insufficient-space',
  ENOTDIR: 'not-directory',
  ENOTEMPTY: 'not-empty',
  ENOTRECOVERABLE: 'not-recoverable',
  ENOTSUP: 'unsupported',
  EOPNOTSUPP: 'unsupported',
  ENOTTY: 'no-tty',
  ENXIO: 'no-such-device',
  EOVERFLOW: 'overflow',
  EPERM: 'not-permitted',
  EPIPE: 'pipe',
  EROFS: 'read-only',
  ESPIPE: 'invalid-seek',
  ETXTBSY: 'text-file-busy',
  EXDEV: 'cross-device',
};

/** The Node code for a wasi error-code (for io errors the shim's `filesystem-error-code` can read). */
const NODE_CODES = new Map<ErrorCode, string>(Object.entries(ERROR_CODES).map(([node, wasi]) => [wasi, node]).reverse() as Array<[ErrorCode, string]>);

function nodeCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/** What the guest gets for `error`: our own error-code strings pass through, Node errors are mapped; anything else is a bug and is rethrown. */
function toErrorCode(error: unknown): ErrorCode {
  if (typeof error === 'string') return error as ErrorCode;
  const code = nodeCode(error);
  if (code === undefined) throw error;
  if (code.startsWith('ERR_')) return 'invalid';
  return ERROR_CODES[code] ?? 'io';
}

/** A wasi:io stream-error for a failed stream operation. */
function streamFailure(error: unknown): { tag: 'last-operation-failed'; val: Error } {
  const code = toErrorCode(error);
  const failure = io.ioErrorCreate(code);
  // The shim's filesystem-error-code reads `payload.code` as a Node code.
  Object.assign(failure, { payload: { code: NODE_CODES.get(code) ?? 'EIO' } });
  return { tag: 'last-operation-failed', val: failure };
}

// ---------------------------------------------------------------------------
// Helpers

const fdPath = (fd: number, name?: string): string => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already gone
  }
}

function toNumber(value: bigint | number, code: ErrorCode = 'invalid'): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (!Number.isSafeInteger(n) || n < 0) throw code;
  return n;
}

function typeOf(stats: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean; isFIFO(): boolean; isSocket(): boolean; isBlockDevice(): boolean; isCharacterDevice(): boolean }): DescriptorType {
  if (stats.isFile()) return 'regular-file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic-link';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isBlockDevice()) return 'block-device';
  if (stats.isCharacterDevice()) return 'character-device';
  return 'unknown';
}

const NS = 1_000_000_000n;
const datetime = (ns: bigint): Datetime => ({ seconds: ns / NS, nanoseconds: Number(ns % NS) });

function describe(stats: fs.BigIntStats): DescriptorStat {
  return {
    type: typeOf(stats),
    linkCount: stats.nlink,
    size: stats.size,
    dataAccessTimestamp: datetime(stats.atimeNs),
    dataModificationTimestamp: datetime(stats.mtimeNs),
    statusChangeTimestamp: datetime(stats.ctimeNs),
  };
}

function metadataHashOf(stats: fs.BigIntStats): MetadataHashValue {
  return {
    upper: BigInt.asUintN(64, (stats.dev << 32n) ^ stats.ino),
    lower: BigInt.asUintN(64, stats.mtimeNs ^ (stats.ctimeNs << 1n) ^ (stats.size << 17n)),
  };
}

/** A timestamp for utimes, in seconds; `current` (ns) when the guest asks for no change. */
function timeFor(requested: NewTimestamp, current: bigint): number {
  switch (requested.tag) {
    case 'no-change':
      return Number(current) / 1e9;
    case 'now':
      return Date.now() / 1000;
    case 'timestamp':
      return Number(requested.val.seconds) + requested.val.nanoseconds / 1e9;
  }
}

/** Whether the entry `name` in the open directory `dir` is a symlink (without following it). */
function isSymlink(dir: number, name: string): boolean {
  try {
    return fs.lstatSync(fdPath(dir, name)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Reject what is never a valid WASI path. */
function checkPath(guestPath: string): void {
  if (typeof guestPath !== 'string') throw 'invalid';
  if (guestPath.startsWith('/')) throw 'not-permitted';
  if (guestPath === '') throw 'no-entry';
  if (guestPath.includes('\0')) throw 'invalid';
}

/** Returned by a walk's final step to have the walk follow the symlink it found. */
const FOLLOW = Symbol('follow');

/**
 * The last step of a walk: `dir` is an open directory fd (valid only during
 * the call), `name` the final component (a plain name: never empty, `.` or
 * `..`) or null when the path names `dir` itself; `depth` is `dir`'s depth
 * below the worktree root.
 */
type FinalStep<T> = (dir: number, name: string | null, depth: number) => T | typeof FOLLOW;

/**
 * Resolve `guestPath` beneath the open directory `base` (at `baseDepth`
 * below the worktree root) and hand its last component to `final`.
 */
function walk<T>(base: number, baseDepth: number, guestPath: string, final: FinalStep<T>): T {
  checkPath(guestPath);
  const stack: number[] = [base];
  const pending = guestPath.split('/').reverse();
  let links = 0;
  const expand = (target: string): void => {
    if (++links > MAX_SYMLINKS) throw 'loop';
    if (target.startsWith('/')) throw 'not-permitted';
    if (target === '') throw 'no-entry';
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
        if (result === FOLLOW) throw 'invalid';
        return result;
      }
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (stack.length === 1) throw 'not-permitted';
        fs.closeSync(stack.pop()!);
        continue;
      }
      if (pending.length === 0) {
        const result = final(dir, name, depth);
        if (result !== FOLLOW) return result;
        const target = readLink(dir, name);
        if (target === undefined) {
          // No longer a symlink (it changed under us): try the step again, within the link budget.
          if (++links > MAX_SYMLINKS) throw 'loop';
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
        if (!now.isDirectory() && !now.isSymbolicLink()) throw 'not-directory';
        if (++links > MAX_SYMLINKS) throw 'loop';
        pending.push(name);
        continue;
      }
      if (stack.length >= MAX_WALK_DEPTH) {
        closeQuietly(next);
        throw 'name-too-long';
      }
      stack.push(next);
    }
  } finally {
    for (let i = 1; i < stack.length; i++) closeQuietly(stack[i]!);
  }
}

/** `walk` for operations on an entry by name (create, remove, rename, link): the parent is resolved, the last name is not. */
function walkParent<T>(base: number, baseDepth: number, guestPath: string, dotCode: ErrorCode, step: (dir: number, name: string, depth: number) => T): T {
  checkPath(guestPath);
  const trimmed = guestPath.replace(/\/+$/, '');
  const slash = trimmed.lastIndexOf('/');
  const name = trimmed.slice(slash + 1);
  const parent = slash === -1 ? '.' : trimmed.slice(0, slash);
  if (name === '.' || name === '..') throw dotCode;
  return walk(base, baseDepth, `${parent}/`, (dir, _name, depth) => step(dir, name, depth));
}

/** Whether a symlink at `depth` below the root with this (relative) target stays inside the worktree, read lexically. */
function targetStaysInside(target: string, depth: number): boolean {
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

/**
 * Refuse moving (or hard-linking) a symlink to a directory at `depth` where
 * its relative target would climb out of the worktree. Best effort, like the
 * check in symlinkAt (moving a directory moves the links inside it
 * unchecked); following a link is what is always confined.
 */
function checkMovedSymlink(dir: number, name: string, depth: number): void {
  let target: string;
  try {
    target = fs.readlinkSync(fdPath(dir, name));
  } catch {
    return; // not a symlink (or gone: the rename itself will say so)
  }
  if (target.startsWith('/') || !targetStaysInside(target, depth)) throw 'not-permitted';
}

// ---------------------------------------------------------------------------
// Open resources

interface Resource {
  close(): void;
}

/** One adapter's state, shared by its descriptors. */
class Session {
  disposed = false;
  readonly resources = new Set<Resource>();

  constructor(
    readonly readOnly: boolean,
    private readonly isActive: (() => boolean) | undefined,
    private readonly maxOpen: number,
  ) {}

  /** Throw `bad-descriptor` once the call has ended. */
  check(): void {
    if (this.disposed || (this.isActive !== undefined && !this.isActive())) throw 'bad-descriptor';
  }

  /** Throw `read-only` for a mutation on a read-only worktree. */
  mutation(): void {
    if (this.readOnly) throw 'read-only';
  }

  /** Throw before opening one more fd past the cap. */
  ensureCapacity(): void {
    if (this.resources.size >= this.maxOpen) throw 'insufficient-memory';
  }

  dispose(): void {
    this.disposed = true;
    for (const resource of [...this.resources]) resource.close();
    this.resources.clear();
  }
}

/** An open fd shared by a descriptor and its streams; closed when the last of them lets go, or when the session ends. */
class FdHandle implements Resource {
  #refs = 1;
  closed = false;

  constructor(
    private readonly session: Session,
    readonly fd: number,
  ) {
    session.resources.add(this);
  }

  retain(): void {
    this.#refs++;
  }

  release(): void {
    if (--this.#refs <= 0) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.session.resources.delete(this);
    closeQuietly(this.fd);
  }
}

/** The fd of a live handle in a live session, else `bad-descriptor` (a closed fd's number may already belong to someone else). */
function liveFd(session: Session, handle: FdHandle): number {
  session.check();
  if (handle.closed) throw 'bad-descriptor';
  return handle.fd;
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    done += fs.writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
  }
}

class DirectoryStream implements Resource, WorktreeDirectoryEntryStream {
  #dir: fs.Dir | undefined;

  constructor(
    private readonly session: Session,
    dir: fs.Dir,
  ) {
    this.#dir = dir;
    session.resources.add(this);
  }

  readDirectoryEntry(): DirectoryEntry | undefined {
    if (dropRequested) {
      // The drop hook's signal (see installDropHook), not a read.
      dropRequested = false;
      this.close();
      return undefined;
    }
    try {
      this.session.check();
      for (;;) {
        if (this.#dir === undefined) return undefined;
        let entry: fs.Dirent | null;
        try {
          entry = this.#dir.readSync();
        } catch (error) {
          // An entry of unknown type that vanished before it could be typed (lstat, never followed): skip it.
          if (nodeCode(error) === 'ENOENT') continue;
          throw error;
        }
        if (entry === null) {
          this.close();
          return undefined;
        }
        return { type: typeOf(entry), name: entry.name };
      }
    } catch (error) {
      throw toErrorCode(error);
    }
  }

  close(): void {
    const dir = this.#dir;
    if (dir === undefined) return;
    this.#dir = undefined;
    this.session.resources.delete(this);
    try {
      dir.closeSync();
    } catch {
      // already closed
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

// ---------------------------------------------------------------------------
// Descriptors

type Kind = 'directory' | 'regular-file';

/** A directory listing, as the shim's DirectoryEntryStream wants it. */
export interface WorktreeDirectoryEntryStream {
  readDirectoryEntry(): DirectoryEntry | undefined;
}

let isWorktreeDescriptor: (value: unknown) => value is WorktreeDescriptor;
let createDescriptor: (session: Session, handle: FdHandle, kind: Kind, flags: DescriptorFlags, depth: number, isRoot: boolean) => WorktreeDescriptor;

/** The implementation behind one guest `descriptor` (the shim's public Descriptor delegates to it). */
export class WorktreeDescriptor {
  readonly #session: Session;
  readonly #handle: FdHandle;
  readonly #kind: Kind;
  readonly #flags: DescriptorFlags;
  /** Depth below the worktree root (directories), for checking symlink targets. */
  readonly #depth: number;
  readonly #isRoot: boolean;
  #dropped = false;

  static {
    createDescriptor = (...args) => new WorktreeDescriptor(...args);
    // A brand check that never throws (unlike `#field` access on a Proxy).
    isWorktreeDescriptor = (value): value is WorktreeDescriptor => typeof value === 'object' && value !== null && #session in value;
  }

  private constructor(session: Session, handle: FdHandle, kind: Kind, flags: DescriptorFlags, depth: number, isRoot: boolean) {
    this.#session = session;
    this.#handle = handle;
    this.#kind = kind;
    this.#flags = flags;
    this.#depth = depth;
    this.#isRoot = isRoot;
  }

  /** Run one operation: `bad-descriptor` once the call ended, errors as wasi error-codes. */
  #run<T>(operation: (fd: number) => T): T {
    try {
      return operation(liveFd(this.#session, this.#handle));
    } catch (error) {
      throw toErrorCode(error);
    }
  }

  #mutating<T>(operation: (fd: number) => T): T {
    return this.#run((fd) => {
      this.#session.mutation();
      return operation(fd);
    });
  }

  #directory(): void {
    if (this.#kind !== 'directory') throw 'not-directory';
  }

  #file(): void {
    if (this.#kind !== 'regular-file') throw 'is-directory';
  }

  #walk<T>(fd: number, guestPath: string, final: FinalStep<T>): T {
    this.#directory();
    return walk(fd, this.#depth, guestPath, final);
  }

  #walkParent<T>(fd: number, guestPath: string, dotCode: ErrorCode, step: (dir: number, name: string, depth: number) => T): T {
    this.#directory();
    return walkParent(fd, this.#depth, guestPath, dotCode, step);
  }

  /** The other directory of a two-path operation: a live directory of this same worktree. */
  #peer(other: unknown): { descriptor: WorktreeDescriptor; fd: number } {
    const descriptor = asWorktreeDescriptor(other);
    if (descriptor === undefined) throw 'bad-descriptor';
    if (descriptor.#session !== this.#session) throw 'cross-device';
    const fd = liveFd(descriptor.#session, descriptor.#handle);
    descriptor.#directory();
    return { descriptor, fd };
  }

  /** Wrap a freshly opened fd as a descriptor (closing it if it is not a directory or regular file). */
  #adopt(fd: number, flags: DescriptorFlags, depth: number): WorktreeDescriptor {
    let kind: Kind;
    try {
      const stats = fs.fstatSync(fd);
      if (stats.isDirectory()) kind = 'directory';
      else if (stats.isFile()) kind = 'regular-file';
      // FIFOs, devices and sockets are not a worktree's business.
      else throw 'not-permitted';
    } catch (error) {
      closeQuietly(fd);
      throw error;
    }
    return createDescriptor(this.#session, new FdHandle(this.#session, fd), kind, flags, depth, false);
  }

  // --- descriptor methods -------------------------------------------------

  readViaStream(offset: bigint): ShimStream {
    return this.#run(() => {
      this.#file();
      if (!this.#flags.read) throw 'bad-descriptor';
      let position = toNumber(offset);
      const session = this.#session;
      const handle = this.#handle;
      handle.retain();
      let dropped = false;
      return io.inputStreamCreate({
        blockingRead(len: bigint): Uint8Array {
          let bytes: Uint8Array;
          let read: number;
          try {
            const fd = liveFd(session, handle);
            bytes = new Uint8Array(Math.min(Number(len), MAX_READ));
            if (bytes.byteLength === 0) return bytes;
            read = fs.readSync(fd, bytes, 0, bytes.byteLength, position);
          } catch (error) {
            throw streamFailure(error);
          }
          if (read === 0) throw { tag: 'closed' };
          position += read;
          return bytes.subarray(0, read);
        },
        subscribe: () => io.pollableCreate(),
        drop() {
          if (dropped) return;
          dropped = true;
          handle.release();
        },
      });
    });
  }

  writeViaStream(offset: bigint): ShimStream {
    return this.#mutating(() => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      let position = toNumber(offset, 'file-too-large');
      return this.#outputStream((fd, bytes) => {
        writeAll(fd, bytes, position);
        position += bytes.byteLength;
      });
    });
  }

  appendViaStream(): ShimStream {
    return this.#mutating(() => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      return this.#outputStream((fd, bytes) => writeAll(fd, bytes, fs.fstatSync(fd).size));
    });
  }

  #outputStream(write: (fd: number, bytes: Uint8Array) => void): ShimStream {
    const session = this.#session;
    const handle = this.#handle;
    handle.retain();
    let dropped = false;
    const live = (): number => {
      try {
        session.mutation();
        return liveFd(session, handle);
      } catch (error) {
        throw streamFailure(error);
      }
    };
    return io.outputStreamCreate({
      checkWrite(): bigint {
        live();
        return WRITE_PERMIT;
      },
      write(bytes: Uint8Array): void {
        const fd = live();
        try {
          write(fd, bytes);
        } catch (error) {
          throw streamFailure(error);
        }
      },
      flush(): void {
        live();
      },
      blockingFlush(): void {
        live();
      },
      subscribe: () => io.pollableCreate(),
      drop(): void {
        if (dropped) return;
        dropped = true;
        handle.release();
      },
    });
  }

  advise(_offset: bigint, _length: bigint, _advice: Advice): void {
    this.#run(() => {
      if (this.#kind !== 'regular-file') throw 'bad-descriptor';
    });
  }

  syncData(): void {
    this.#run((fd) => fs.fdatasyncSync(fd));
  }

  sync(): void {
    this.#run((fd) => fs.fsyncSync(fd));
  }

  getFlags(): DescriptorFlags {
    return this.#run(() => ({ ...this.#flags }));
  }

  getType(): DescriptorType {
    return this.#run(() => this.#kind);
  }

  setSize(size: bigint): void {
    this.#mutating((fd) => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      fs.ftruncateSync(fd, toNumber(size, 'file-too-large'));
    });
  }

  setTimes(dataAccessTimestamp: NewTimestamp, dataModificationTimestamp: NewTimestamp): void {
    this.#mutating((fd) => {
      const stats = fs.fstatSync(fd, { bigint: true });
      fs.futimesSync(fd, timeFor(dataAccessTimestamp, stats.atimeNs), timeFor(dataModificationTimestamp, stats.mtimeNs));
    });
  }

  read(length: bigint, offset: bigint): [Uint8Array, boolean] {
    return this.#run((fd) => {
      this.#file();
      if (!this.#flags.read) throw 'bad-descriptor';
      const size = Math.min(Number(length), MAX_READ);
      const position = toNumber(offset);
      if (size === 0) return [new Uint8Array(0), false];
      const bytes = new Uint8Array(size);
      const read = fs.readSync(fd, bytes, 0, size, position);
      return [bytes.subarray(0, read), read < size];
    });
  }

  write(buffer: Uint8Array, offset: bigint): bigint {
    return this.#mutating((fd) => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      return BigInt(fs.writeSync(fd, buffer, 0, buffer.byteLength, toNumber(offset, 'file-too-large')));
    });
  }

  readDirectory(): WorktreeDirectoryEntryStream {
    return this.#run((fd) => {
      this.#directory();
      this.#session.ensureCapacity();
      // opendir follows the magic link to the open directory's inode.
      return new DirectoryStream(this.#session, fs.opendirSync(fdPath(fd)));
    });
  }

  createDirectoryAt(guestPath: string): void {
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'exist', (dir, name) => fs.mkdirSync(fdPath(dir, name))));
  }

  stat(): DescriptorStat {
    return this.#run((fd) => describe(fs.fstatSync(fd, { bigint: true })));
  }

  statAt(pathFlags: PathFlags, guestPath: string): DescriptorStat {
    return this.#run((fd) => describe(this.#statAt(fd, pathFlags, guestPath)));
  }

  #statAt(fd: number, pathFlags: PathFlags, guestPath: string): fs.BigIntStats {
    return this.#walk(fd, guestPath, (dir, name) => {
      if (name === null) return fs.fstatSync(dir, { bigint: true });
      const stats = fs.lstatSync(fdPath(dir, name), { bigint: true });
      return stats.isSymbolicLink() && pathFlags.symlinkFollow ? FOLLOW : stats;
    });
  }

  setTimesAt(pathFlags: PathFlags, guestPath: string, dataAccessTimestamp: NewTimestamp, dataModificationTimestamp: NewTimestamp): void {
    this.#mutating((fd) =>
      this.#walk(fd, guestPath, (dir, name) => {
        if (name === null) {
          const stats = fs.fstatSync(dir, { bigint: true });
          fs.futimesSync(dir, timeFor(dataAccessTimestamp, stats.atimeNs), timeFor(dataModificationTimestamp, stats.mtimeNs));
          return;
        }
        const entry = fdPath(dir, name);
        const stats = fs.lstatSync(entry, { bigint: true });
        if (stats.isSymbolicLink() && pathFlags.symlinkFollow) return FOLLOW;
        // lutimes never follows: if the entry became a symlink meanwhile, only that link (inside) is touched.
        fs.lutimesSync(entry, timeFor(dataAccessTimestamp, stats.atimeNs), timeFor(dataModificationTimestamp, stats.mtimeNs));
      }),
    );
  }

  linkAt(oldPathFlags: PathFlags, oldPath: string, newDescriptor: unknown, newPath: string): void {
    this.#mutating((fd) => {
      const peer = this.#peer(newDescriptor);
      this.#walk(fd, oldPath, (oldDir, oldName) => {
        if (oldName === null) throw 'not-permitted';
        const stats = fs.lstatSync(fdPath(oldDir, oldName));
        if (stats.isSymbolicLink() && oldPathFlags.symlinkFollow) return FOLLOW;
        if (stats.isDirectory()) throw 'not-permitted';
        // link(2) does not follow a symlink at the source: a swapped-in link is linked as itself.
        peer.descriptor.#walkParent(peer.fd, newPath, 'exist', (newDir, newName, newDepth) => {
          if (stats.isSymbolicLink()) checkMovedSymlink(oldDir, oldName, newDepth);
          fs.linkSync(fdPath(oldDir, oldName), fdPath(newDir, newName));
        });
      });
    });
  }

  openAt(pathFlags: PathFlags, guestPath: string, openFlags: OpenFlags, flags: DescriptorFlags): WorktreeDescriptor {
    return this.#run((fd) => {
      const session = this.#session;
      const wantsWrite = !!flags.write;
      if (session.readOnly && (openFlags.create || openFlags.truncate || wantsWrite)) throw 'read-only';
      if (openFlags.create && openFlags.directory) throw 'invalid';
      if (openFlags.directory && wantsWrite) throw 'is-directory';
      const exclusive = !!(openFlags.create && openFlags.exclusive);
      // O_CREAT|O_EXCL never follows the last component.
      const follow = !!pathFlags.symlinkFollow && !exclusive;
      let osFlags = (wantsWrite ? (flags.read ? O_RDWR : O_WRONLY) : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
      if (openFlags.create) osFlags |= O_CREAT;
      if (exclusive) osFlags |= O_EXCL;
      if (openFlags.truncate) osFlags |= O_TRUNC;
      if (openFlags.directory) osFlags |= O_DIRECTORY;
      if (flags.fileIntegritySync) osFlags |= O_SYNC;
      if (flags.dataIntegritySync) osFlags |= O_DSYNC;
      const childFlags: DescriptorFlags = {
        read: !!flags.read,
        write: wantsWrite,
        fileIntegritySync: !!flags.fileIntegritySync,
        dataIntegritySync: !!flags.dataIntegritySync,
        requestedWriteSync: !!flags.requestedWriteSync,
        mutateDirectory: !!flags.mutateDirectory && !session.readOnly,
      };
      return this.#walk(fd, guestPath, (dir, name, depth) => {
        session.ensureCapacity();
        if (name === null) {
          if (exclusive) throw 'exist';
          if (wantsWrite || openFlags.truncate) throw 'is-directory';
          // `.` inside the open directory is that directory: no symlink involved.
          return this.#adopt(fs.openSync(fdPath(dir, '.'), O_RDONLY | O_DIRECTORY | O_NONBLOCK), childFlags, depth);
        }
        let opened: number;
        try {
          opened = fs.openSync(fdPath(dir, name), osFlags, 0o666);
        } catch (error) {
          const code = nodeCode(error);
          if ((code === 'ELOOP' || code === 'ENOTDIR') && isSymlink(dir, name)) {
            if (follow) return FOLLOW;
            throw 'loop';
          }
          throw error;
        }
        return this.#adopt(opened, childFlags, depth + 1);
      });
    });
  }

  readlinkAt(guestPath: string): string {
    return this.#run((fd) =>
      this.#walk(fd, guestPath, (dir, name) => {
        if (name === null) throw 'invalid';
        const target = fs.readlinkSync(fdPath(dir, name));
        // An absolute target names a host path: not the guest's to see.
        if (target.startsWith('/')) throw 'not-permitted';
        return target;
      }),
    );
  }

  removeDirectoryAt(guestPath: string): void {
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'invalid', (dir, name) => fs.rmdirSync(fdPath(dir, name))));
  }

  renameAt(oldPath: string, newDescriptor: unknown, newPath: string): void {
    this.#mutating((fd) => {
      const peer = this.#peer(newDescriptor);
      this.#walkParent(fd, oldPath, 'invalid', (oldDir, oldName) =>
        peer.descriptor.#walkParent(peer.fd, newPath, 'invalid', (newDir, newName, newDepth) => {
          checkMovedSymlink(oldDir, oldName, newDepth);
          fs.renameSync(fdPath(oldDir, oldName), fdPath(newDir, newName));
        }),
      );
    });
  }

  symlinkAt(target: string, guestPath: string): void {
    this.#mutating((fd) => {
      if (typeof target !== 'string' || target.includes('\0')) throw 'invalid';
      if (target.startsWith('/')) throw 'not-permitted';
      if (target === '') throw 'no-entry';
      this.#walkParent(fd, guestPath, 'exist', (dir, name, depth) => {
        // Read from the link's directory, the target must not climb above the worktree root.
        // (Following re-checks every step anyway.)
        if (!targetStaysInside(target, depth)) throw 'not-permitted';
        fs.symlinkSync(target, fdPath(dir, name));
      });
    });
  }

  unlinkFileAt(guestPath: string): void {
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'invalid', (dir, name) => fs.unlinkSync(fdPath(dir, name))));
  }

  isSameObject(other: unknown): boolean {
    if (dropRequested) {
      // The drop hook's signal (see installDropHook), not a real comparison.
      dropRequested = false;
      this.drop();
      return true;
    }
    return this.#run((fd) => {
      const peer = asWorktreeDescriptor(other);
      if (peer === undefined || peer.#session !== this.#session || peer.#handle.closed) return false;
      const mine = fs.fstatSync(fd, { bigint: true });
      const theirs = fs.fstatSync(peer.#handle.fd, { bigint: true });
      return mine.dev === theirs.dev && mine.ino === theirs.ino;
    });
  }

  metadataHash(): MetadataHashValue {
    return this.#run((fd) => metadataHashOf(fs.fstatSync(fd, { bigint: true })));
  }

  metadataHashAt(pathFlags: PathFlags, guestPath: string): MetadataHashValue {
    return this.#run((fd) => metadataHashOf(this.#statAt(fd, pathFlags, guestPath)));
  }

  /** Let go of this descriptor's fd (streams opened from it keep it until they are dropped). The preopened root stays open until the adapter is disposed. */
  drop(): void {
    if (this.#dropped || this.#isRoot) return;
    this.#dropped = true;
    this.#handle.release();
  }

  [Symbol.dispose](): void {
    this.drop();
  }
}

/** `value` as one of this module's descriptors, looking through wrappers that expose {@link UNWRAP_DESCRIPTOR}. */
function asWorktreeDescriptor(value: unknown): WorktreeDescriptor | undefined {
  let current = value;
  for (let hops = 0; hops < 16; hops++) {
    if (isWorktreeDescriptor(current)) return current;
    if (typeof current !== 'object' || current === null) return undefined;
    const inner: unknown = Reflect.get(current, UNWRAP_DESCRIPTOR);
    if (inner === undefined || inner === current) return undefined;
    current = inner;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Dropping descriptors

let dropRequested = false;
const HOOKED = Symbol.for('toolhost.worktree-fs.drop-hook');

/**
 * Give one of the shim's public classes a `[Symbol.dispose]` (jco calls it
 * when the guest drops an owned handle) that reaches the implementation. The
 * public classes keep their implementation in a private field and forward
 * only wasi methods, so the hook goes through one of them: it raises a flag
 * and calls `signal` — `isSameObject(this)` for a descriptor,
 * `readDirectoryEntry()` for a directory listing — which this module's
 * implementations answer by releasing their fd. Other adapters' just answer
 * the call (comparing a descriptor with itself, or reading an entry of a
 * listing being dropped).
 */
function installDropHook(prototype: object, signal: (resource: never) => unknown): void {
  if (Reflect.get(prototype, HOOKED) === true) return;
  const previous: unknown = Reflect.get(prototype, Symbol.dispose);
  Object.defineProperty(prototype, Symbol.dispose, {
    configurable: true,
    writable: true,
    value(this: never): void {
      dropRequested = true;
      try {
        signal(this);
      } catch {
        // a dead descriptor: nothing left to release
      } finally {
        dropRequested = false;
      }
      if (typeof previous === 'function') (previous as (this: unknown) => void).call(this);
    },
  });
  Object.defineProperty(prototype, HOOKED, { value: true });
}

installDropHook(browserFilesystem.types.Descriptor.prototype, (descriptor: { isSameObject(other: unknown): boolean }) => descriptor.isSameObject(descriptor));
installDropHook(browserFilesystem.types.DirectoryEntryStream.prototype, (stream: { readDirectoryEntry(): unknown }) => stream.readDirectoryEntry());

// ---------------------------------------------------------------------------
// The adapter

/**
 * preview2-shim browser filesystem adapter confining the guest to `root`:
 * `createFilesystem({ adapter, preopens: { '/worktree': root } })`.
 */
export class WorktreeAdapter {
  readonly root: string;
  readonly readOnly: boolean;
  readonly #session: Session;

  constructor(options: WorktreeAdapterOptions) {
    if (!path.isAbsolute(options.root)) throw new TypeError(`worktree root must be an absolute path: ${options.root}`);
    this.root = path.resolve(options.root);
    this.readOnly = options.readOnly;
    this.#session = new Session(options.readOnly, options.isActive, options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES);
  }

  /** The preopened root descriptor; `capability` may be the root path (or omitted). */
  getRoot(capability?: unknown): WorktreeDescriptor {
    if (capability !== undefined && (typeof capability !== 'string' || path.resolve(capability) !== this.root)) {
      throw new TypeError('WorktreeAdapter: the preopen capability must be the worktree root');
    }
    if (this.#session.disposed) throw new Error('WorktreeAdapter: disposed');
    const fd = fs.openSync(fs.realpathSync(this.root), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    try {
      // Everything here resolves through /proc/self/fd; make sure it is there and means what we think.
      const direct = fs.fstatSync(fd);
      const viaProc = fs.statSync(fdPath(fd));
      if (direct.ino !== viaProc.ino || direct.dev !== viaProc.dev) throw new Error('/proc/self/fd does not resolve to open files');
    } catch (error) {
      closeQuietly(fd);
      throw new Error(`WorktreeAdapter needs a mounted /proc: ${(error as Error).message}`);
    }
    const flags: DescriptorFlags = { read: true, mutateDirectory: !this.readOnly };
    return createDescriptor(this.#session, new FdHandle(this.#session, fd), 'directory', flags, 0, true);
  }

  /** How many fds (descriptors and directory listings) are open. */
  get openFiles(): number {
    return this.#session.resources.size;
  }

  /** Close every fd; from now on every descriptor fails with `bad-descriptor`. Idempotent. */
  dispose(): void {
    this.#session.dispose();
  }
}
