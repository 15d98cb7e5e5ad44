/**
 * Where the transpile cache lives by default. (It must never lie inside a
 * worktree a guest can write: it holds the glue code the host imports; that
 * rule, for it and every other host-owned path, is policy/host-owned-paths.ts.)
 * No heavy imports: the config checks use it.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The default cache directory: `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`. */
export function defaultCacheDir(): string {
  if (process.env.TOOLHOST_CACHE_DIR) return process.env.TOOLHOST_CACHE_DIR;
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'toolhost');
}

/** Where a cache keeps its content-addressed chunks (base/chunk-store.ts), and the store too when it lies in the cache. */
export const CHUNKS_DIR = 'chunks-v1';

/** Whether a name in the cache directory is a directory of transpiled entries (`v<format>-jco-transpile-<version>`). */
export function isCacheFormatDir(name: string): boolean {
  return /^v\d+-jco-transpile-/.test(name);
}
