/**
 * The worktree from a JS/TS guest (`toolhost/guest`): read and write text and bytes, list, stat. The host mounts
 * the call's worktree at `/worktree` only when the call's policy grants one (`DEFAULT`: read-only, `ELEVATED`:
 * read-write); paths are `/worktree/...` or relative to it. The host alone confines them: `..` above the
 * worktree, other absolute paths and symlinks out of it fail with the tool-error `FS_ERROR` (`details.errno`,
 * e.g. `not-permitted`, `no-entry`, `read-only`). Without a worktree every helper throws `NO_WORKTREE`.
 * For anything else, import `wasi:filesystem/types@0.2.3` and `wasi:filesystem/preopens@0.2.3` directly.
 */
/// <reference path="./world.d.ts" />
import type { Descriptor, DescriptorType } from 'wasi:filesystem/types@0.2.3';

/** `/worktree`: where the host mounts the call's worktree. */
export declare const WORKTREE: '/worktree';

/** One directory entry. */
export interface WorktreeEntry {
  name: string;
  type: DescriptorType;
}

/** What `stat` reports (symlinks followed, inside the worktree only). */
export interface WorktreeStat {
  type: DescriptorType;
  size: number;
  /** Last data modification, ms since the epoch, when the host reports it. */
  modifiedMs: number | undefined;
}

/** The worktree's root descriptor (for direct wasi:filesystem calls), or the tool-error NO_WORKTREE. */
export declare function worktreeRoot(): Descriptor;
export declare function readBytes(path: string): Uint8Array;
/** The file's content as UTF-8 text. */
export declare function readText(path: string): string;
/** Create or replace the file (needs a read-write worktree: `ELEVATED`). */
export declare function writeBytes(path: string, bytes: Uint8Array): void;
export declare function writeText(path: string, text: string): void;
/** A directory's entries, sorted by name (default: the worktree's root). */
export declare function list(path?: string): WorktreeEntry[];
export declare function stat(path: string): WorktreeStat;
