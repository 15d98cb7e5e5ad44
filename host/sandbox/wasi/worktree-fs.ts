/**
 * A wasi:filesystem adapter for preview2-shim's browser build that gives a
 * guest one host directory (the call's worktree) and nothing outside it:
 * `createFilesystem({ adapter, preopens: { '/worktree': root } })`.
 *
 * The guest runs synchronously in a worker thread, so every operation is a
 * synchronous `node:fs` call. The pieces, in the order a reviewer should read
 * them:
 * - worktree-confinement.ts: how a guest path is resolved beneath an open
 *   directory without ever leaving it (pure node:fs; its header states the
 *   guarantees);
 * - worktree-permissions.ts: read-only vs read-write, checked before any
 *   mutation;
 * - worktree-descriptor.ts: the wasi:filesystem descriptor binding, with its
 *   streams (worktree-streams.ts), open resources (worktree-session.ts) and
 *   drop hook (worktree-drop-hook.ts);
 * - errno.ts: Node codes and confinement failures as wasi error codes.
 *
 * Read-only adapters refuse every mutation with `read-only`. When `isActive`
 * says the call has ended, or after {@link WorktreeAdapter.dispose}, every
 * operation fails with `bad-descriptor`, and the fds are closed. Open
 * descriptors per adapter are capped ({@link WorktreeAdapterOptions.maxOpenFiles}):
 * worker threads share the process's fd table.
 */
import path from 'node:path';
import { openRoot } from './worktree-confinement.js';
import { WorktreeDescriptor } from './worktree-descriptor.js';
import { WorktreePermissions } from './worktree-permissions.js';
import { Session } from './worktree-session.js';

export { MAX_SYMLINKS } from './worktree-confinement.js';
export { WorktreeDescriptor } from './worktree-descriptor.js';
export type { WorktreeDirectoryEntryStream } from './worktree-session.js';

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

/** preview2-shim browser filesystem adapter confining the guest to `root`. */
export class WorktreeAdapter {
  readonly root: string;
  readonly readOnly: boolean;
  readonly #session: Session;

  constructor(options: WorktreeAdapterOptions) {
    if (!path.isAbsolute(options.root)) throw new TypeError(`worktree root must be an absolute path: ${options.root}`);
    this.root = path.resolve(options.root);
    this.readOnly = options.readOnly;
    this.#session = new Session(new WorktreePermissions(options.readOnly), options.isActive, options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES);
  }

  /** The preopened root descriptor; `capability` may be the root path (or omitted). */
  getRoot(capability?: unknown): WorktreeDescriptor {
    if (capability !== undefined && (typeof capability !== 'string' || path.resolve(capability) !== this.root)) {
      throw new TypeError('WorktreeAdapter: the preopen capability must be the worktree root');
    }
    if (this.#session.disposed) throw new Error('WorktreeAdapter: disposed');
    return WorktreeDescriptor.root(this.#session, openRoot(this.root));
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
