/**
 * The open resources of one worktree adapter: the fds its descriptors,
 * streams and directory listings hold, counted against a cap (worker threads
 * share the process's fd table), and all closed at once when the call ends.
 * Once the session is disposed, or its call is no longer active, every
 * operation fails with `bad-descriptor`.
 */
import fs from 'node:fs';
import { toErrorCode } from './errno.js';
import type { DirectoryEntry } from './shim.js';
import { closeQuietly, nodeCode } from './worktree-confinement.js';
import { takeDropRequest } from './worktree-drop-hook.js';
import type { WorktreePermissions } from './worktree-permissions.js';
import { typeOf } from './worktree-stat.js';

interface Resource {
  close(): void;
}

/** One adapter's state, shared by its descriptors. */
export class Session {
  disposed = false;
  readonly resources = new Set<Resource>();

  constructor(
    readonly permissions: WorktreePermissions,
    private readonly isActive: (() => boolean) | undefined,
    private readonly maxOpen: number,
  ) {}

  /** Throw `bad-descriptor` once the call has ended. */
  check(): void {
    if (this.disposed || (this.isActive !== undefined && !this.isActive())) throw 'bad-descriptor';
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
export class FdHandle implements Resource {
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
export function liveFd(session: Session, handle: FdHandle): number {
  session.check();
  if (handle.closed) throw 'bad-descriptor';
  return handle.fd;
}

/** A directory listing, as the shim's DirectoryEntryStream wants it. */
export interface WorktreeDirectoryEntryStream {
  readDirectoryEntry(): DirectoryEntry | undefined;
}

export class DirectoryStream implements Resource, WorktreeDirectoryEntryStream {
  #dir: fs.Dir | undefined;

  constructor(
    private readonly session: Session,
    dir: fs.Dir,
  ) {
    this.#dir = dir;
    session.resources.add(this);
  }

  readDirectoryEntry(): DirectoryEntry | undefined {
    if (takeDropRequest()) {
      // The drop hook's signal (see worktree-drop-hook.ts), not a read.
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
