/**
 * Who may use the admin tools (`toolhost_load`, `toolhost_unload`) and what
 * `toolhost_load` may load from the host's disk: the one place that decides.
 *
 * Callers: with `callers: 'authenticated'` (the default, and what a host with
 * a network server gets) a call needs a principal, i.e. a server authenticated
 * it (a bearer token, a named token, an OAuth access token); one without is
 * PERMISSION_DENIED (`details.reason: admin-unauthenticated`). `callers: 'any'`
 * is for hosts whose only callers are local (stdio MCP, the CLI, the embedding
 * program): the user's own process, trusted as the user. The config check
 * refuses `admin_tools: true` beside a network server without authentication,
 * and `toolhost serve` refuses to start one, so `any` never faces the network
 * from a config.
 *
 * Local files: only inside the configured load directories (`admin.load_dirs`,
 * default none), checked on the resolved path (`..` is resolved first) and on
 * its real path after symlinks, against each directory's real path; a
 * directory is expanded here to its `.wasm` files, each checked the same way
 * and handed on by its real path, so a link inside an allowed directory cannot
 * reach out of it. A refusal says the same whether the path exists or not.
 * Remote sources (`oci://`, `https://`) are not decided here: the fetcher
 * loads only what `distribution.registries` lists, verified (a runtime load).
 *
 * What it does not guarantee: a file swapped inside an allowed directory
 * between this check and the read is read as it is then (the directories are
 * host-owned paths, so no guest's writable worktree may hold them; people with
 * write access to them are trusted as the host's operators).
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { extname, isAbsolute, join, relative, resolve } from 'node:path';
import { ToolhostError } from '../base/errors.js';

/** What the admin tools allow. */
export interface AdminAccess {
  /** `authenticated` (default): a call needs a principal. `any`: local callers only (stdio, CLI, library). */
  callers?: 'authenticated' | 'any';
  /** Directories `toolhost_load` may load local component files from (default none). */
  loadDirs?: readonly string[];
}

/** Refuse a call without a principal unless every caller is local. */
export function checkAdminCaller(access: AdminAccess, principal: string | undefined, tool: string): void {
  if ((access.callers ?? 'authenticated') === 'any' || principal !== undefined) return;
  throw new ToolhostError('PERMISSION_DENIED', `${tool} needs an authenticated caller: configure the server's tokens or OAuth (servers.auth) and send a token`, {
    details: { reason: 'admin-unauthenticated', tool },
  });
}

function within(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/**
 * The component files `path` may load (real paths), or a PERMISSION_DENIED
 * (`details.reason: admin-load-dir`) when it lies outside every load directory.
 */
export function allowedLocalFiles(access: AdminAccess, path: string): string[] {
  const dirs = (access.loadDirs ?? []).map((dir) => resolve(dir));
  const absolute = resolve(path);
  const refuse = (): never => {
    throw new ToolhostError('PERMISSION_DENIED', dirs.length === 0
      ? `toolhost_load loads no local files on this host (admin.load_dirs is not set); remote sources come from distribution.registries`
      : `toolhost_load loads local files only from admin.load_dirs (${dirs.join(', ')}); ${absolute} is not inside one`, { details: { reason: 'admin-load-dir', path: absolute } });
  };
  const realDirs = dirs.filter((dir) => within(absolute, dir)).map(realOrUndefined).filter((dir): dir is string => dir !== undefined);
  if (realDirs.length === 0) return refuse();
  const inside = (real: string): boolean => realDirs.some((dir) => within(real, dir));
  const real = realOrUndefined(absolute);
  // Not there: the loader says so (nothing outside is revealed: the path is inside an allowed directory).
  if (real === undefined) return [absolute];
  if (!inside(real)) return refuse();
  if (!statSync(real).isDirectory()) return [real];
  const files = readdirSync(real).filter((entry) => extname(entry) === '.wasm').sort().map((entry) => realOrUndefined(join(real, entry)) ?? join(real, entry));
  if (files.some((file) => !inside(file))) return refuse();
  return files.length === 0 ? [real] : files;
}
