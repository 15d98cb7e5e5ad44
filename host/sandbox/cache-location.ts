/**
 * Where the transpile cache lives, and whether a directory lies inside
 * another (the cache must never lie inside a worktree a guest can write: it
 * holds the glue code the host imports). No heavy imports: the config checks
 * use it.
 */
import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve, isAbsolute, basename } from 'node:path';

/** The default cache directory: `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`. */
export function defaultCacheDir(): string {
  if (process.env.TOOLHOST_CACHE_DIR) return process.env.TOOLHOST_CACHE_DIR;
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'toolhost');
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest (it may not exist yet). */
function realPath(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    const parent = dirname(absolute);
    return parent === absolute ? absolute : join(realPath(parent), basename(absolute));
  }
}

/** Whether `path` is `dir` or lies inside it (symlinks resolved). */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(realPath(dir), realPath(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
