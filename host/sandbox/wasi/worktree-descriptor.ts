/**
 * The wasi:filesystem descriptor binding of the worktree: the implementation
 * behind each guest `descriptor` (the shim's public Descriptor delegates to
 * it). Each operation is, in order: the descriptor is live (else
 * `bad-descriptor`: the call ended or the adapter was disposed), the
 * permission step (worktree-permissions.ts: every mutation on a read-only
 * worktree is `read-only`), the path resolved by worktree-confinement.ts,
 * then one `node:fs` call on the final entry that does not follow it; what
 * it throws becomes a wasi error-code (errno.ts).
 *
 * Only directories and regular files can be opened (no FIFOs or devices);
 * readlink of an absolute target is `not-permitted` (it would reveal a host
 * path). Dropped descriptors close their fd (worktree-drop-hook.ts).
 *
 * (Over 400 lines: one class, one wasi resource with some thirty methods.)
 */
import fs from 'node:fs';
import { toErrorCode } from './errno.js';
import { shimFilesystem, type Advice, type DescriptorFlags, type DescriptorStat, type DescriptorType, type MetadataHashValue, type NewTimestamp, type OpenFlags, type PathFlags, type ShimInputStream, type ShimOutputStream } from './shim.js';
import {
  checkMovedSymlink,
  checkSymlinkStaysInside,
  checkSymlinkTarget,
  closeQuietly,
  FOLLOW,
  fdPath,
  isSymlink,
  nodeCode,
  walk,
  walkParent,
  type FinalStep,
} from './worktree-confinement.js';
import { takeDropRequest } from './worktree-drop-hook.js';
import { descriptorStat, metadataHashOf, timeFor } from './worktree-stat.js';
import { fileInputStream, fileOutputStream, MAX_READ, writeAll } from './worktree-streams.js';
import { DirectoryStream, FdHandle, liveFd, type Session, type WorktreeDirectoryEntryStream } from './worktree-session.js';

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_SYNC, O_DSYNC } = fs.constants;

type Kind = 'directory' | 'regular-file';

/** A non-negative safe integer from a wasi u64, else `code`. */
function toNumber(value: bigint | number, code: 'invalid' | 'file-too-large' = 'invalid'): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (!Number.isSafeInteger(n) || n < 0) throw code;
  return n;
}

// Set in WorktreeDescriptor's static block.
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

  /** The preopened root: `fd` is the worktree root's open directory (see openRoot). */
  static root(session: Session, fd: number): WorktreeDescriptor {
    return createDescriptor(session, new FdHandle(session, fd), 'directory', session.permissions.rootFlags(), 0, true);
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

  /** Run one operation that changes the worktree: the permission check comes first. */
  #mutating<T>(operation: (fd: number) => T): T {
    return this.#run((fd) => {
      this.#session.permissions.requireMutation();
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

  #walkParent<T>(fd: number, guestPath: string, dotEntryCode: 'EEXIST' | 'EINVAL', step: (dir: number, name: string, depth: number) => T): T {
    this.#directory();
    return walkParent(fd, this.#depth, guestPath, dotEntryCode, step);
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

  readViaStream(offset: bigint): ShimInputStream {
    return this.#run(() => {
      this.#file();
      if (!this.#flags.read) throw 'bad-descriptor';
      return fileInputStream(this.#session, this.#handle, toNumber(offset));
    });
  }

  writeViaStream(offset: bigint): ShimOutputStream {
    return this.#mutating(() => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      let position = toNumber(offset, 'file-too-large');
      return fileOutputStream(this.#session, this.#handle, (fd, bytes) => {
        writeAll(fd, bytes, position);
        position += bytes.byteLength;
      });
    });
  }

  appendViaStream(): ShimOutputStream {
    return this.#mutating(() => {
      this.#file();
      if (!this.#flags.write) throw 'bad-descriptor';
      return fileOutputStream(this.#session, this.#handle, (fd, bytes) => writeAll(fd, bytes, fs.fstatSync(fd).size));
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
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'EEXIST', (dir, name) => fs.mkdirSync(fdPath(dir, name))));
  }

  stat(): DescriptorStat {
    return this.#run((fd) => descriptorStat(fs.fstatSync(fd, { bigint: true })));
  }

  statAt(pathFlags: PathFlags, guestPath: string): DescriptorStat {
    return this.#run((fd) => descriptorStat(this.#statAt(fd, pathFlags, guestPath)));
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
        peer.descriptor.#walkParent(peer.fd, newPath, 'EEXIST', (newDir, newName, newDepth) => {
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
      session.permissions.requireOpen(openFlags, flags);
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
      const childFlags = session.permissions.openedFlags(flags);
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
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'EINVAL', (dir, name) => fs.rmdirSync(fdPath(dir, name))));
  }

  renameAt(oldPath: string, newDescriptor: unknown, newPath: string): void {
    this.#mutating((fd) => {
      const peer = this.#peer(newDescriptor);
      this.#walkParent(fd, oldPath, 'EINVAL', (oldDir, oldName) =>
        peer.descriptor.#walkParent(peer.fd, newPath, 'EINVAL', (newDir, newName, newDepth) => {
          checkMovedSymlink(oldDir, oldName, newDepth);
          fs.renameSync(fdPath(oldDir, oldName), fdPath(newDir, newName));
        }),
      );
    });
  }

  symlinkAt(target: string, guestPath: string): void {
    this.#mutating((fd) => {
      checkSymlinkTarget(target);
      this.#walkParent(fd, guestPath, 'EEXIST', (dir, name, depth) => {
        // Read from the link's directory, the target must not climb above the worktree root.
        checkSymlinkStaysInside(target, depth);
        fs.symlinkSync(target, fdPath(dir, name));
      });
    });
  }

  unlinkFileAt(guestPath: string): void {
    this.#mutating((fd) => this.#walkParent(fd, guestPath, 'EINVAL', (dir, name) => fs.unlinkSync(fdPath(dir, name))));
  }

  isSameObject(other: unknown): boolean {
    if (takeDropRequest()) {
      // The drop hook's signal (see worktree-drop-hook.ts), not a real comparison.
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

/** `value` as one of this module's descriptors, looking through wrappers that expose the shim's `UNWRAP_DESCRIPTOR`. */
function asWorktreeDescriptor(value: unknown): WorktreeDescriptor | undefined {
  let current = value;
  for (let hops = 0; hops < 16; hops++) {
    if (isWorktreeDescriptor(current)) return current;
    if (typeof current !== 'object' || current === null) return undefined;
    const inner: unknown = Reflect.get(current, shimFilesystem.UNWRAP_DESCRIPTOR);
    if (inner === undefined || inner === current) return undefined;
    current = inner;
  }
  return undefined;
}
