/**
 * What a call may do to its worktree, checked as one named step before any
 * operation touches the filesystem. A worktree is read-only below ELEVATED
 * and read-write at ELEVATED and above (the sandbox worker decides from the
 * call's resolved privilege; see policy/capabilities.ts). The shim's
 * preopens have no read-only mode, so this is the only enforcement.
 */
import type { DescriptorFlags, OpenFlags } from './shim.js';

export class WorktreePermissions {
  constructor(readonly readOnly: boolean) {}

  /** Every mutation (write, truncate, create, remove, rename, link, symlink, set-times) asks first: `read-only` if not allowed. */
  requireMutation(): void {
    if (this.readOnly) throw 'read-only';
  }

  /** Opening to create, truncate or write is a mutation. */
  requireOpen(openFlags: OpenFlags, flags: DescriptorFlags): void {
    if (this.readOnly && (openFlags.create || openFlags.truncate || !!flags.write)) throw 'read-only';
  }

  /** The flags an opened descriptor carries: as asked, but never `mutate-directory` on a read-only worktree. */
  openedFlags(flags: DescriptorFlags): DescriptorFlags {
    return {
      read: !!flags.read,
      write: !!flags.write,
      fileIntegritySync: !!flags.fileIntegritySync,
      dataIntegritySync: !!flags.dataIntegritySync,
      requestedWriteSync: !!flags.requestedWriteSync,
      mutateDirectory: !!flags.mutateDirectory && !this.readOnly,
    };
  }

  /** The preopened root's flags. */
  rootFlags(): DescriptorFlags {
    return { read: true, mutateDirectory: !this.readOnly };
  }
}
