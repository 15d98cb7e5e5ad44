/**
 * The host-owned paths a config names (see policy/host-owned-paths.ts for the
 * rule): the config file itself and its lock file (`toolhost.lock`, which pins
 * what remote sources load), the trust anchors remote components are verified
 * with (each `verify.keys` file and `verify.trusted_root`, of `distribution`
 * and of each tool entry), the transpile cache, the store of fetched
 * components, the audit log file, every component path and `admin.load_dirs`, and each stdio MCP
 * server's command and the files its arguments name (relative to its cwd). Each comes with the YAML node that
 * names it, so a config check can point at the line to change.
 *
 * What it does not know: files an MCP server loads on its own (its imports),
 * or anything named only inside another program's configuration.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { lockPathFor } from '../distribution/lock.js';
import type { HostOwnedPath } from '../policy/host-owned-paths.js';
import { defaultCacheDir } from '../sandbox/load/cache-location.js';
import type { ResolvedConfig } from './resolved-types.js';
import type { ConfigPath } from './source.js';
import type { ConfigFile, VerifyEntry } from './types.js';

/** An owned path, and the config node that names it (none for the config file itself). */
export interface ConfiguredOwnedPath extends HostOwnedPath {
  at?: ConfigPath;
}

/** Whether `path` is an existing regular file. */
function isFile(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A stdio server's command (when it is a path) and the existing files its arguments name. */
function serverFiles(command: string, args: readonly string[], cwd: string, baseDir: string): Array<{ path: string; arg?: number }> {
  const files: Array<{ path: string; arg?: number }> = [];
  if (command.includes('/')) files.push({ path: resolve(baseDir, command) });
  args.forEach((arg, i) => {
    if (arg.startsWith('-') || arg === '') return;
    const path = resolve(cwd, arg);
    if (isFile(path)) files.push({ path, arg: i });
  });
  return files;
}

/** The trust anchors a `verify` entry names (`base` is where the entry sits). */
function verifyAnchors(verify: VerifyEntry | undefined, base: ConfigPath, baseDir: string): ConfiguredOwnedPath[] {
  if (verify === undefined) return [];
  const owned: ConfiguredOwnedPath[] = (verify.keys ?? []).map((key, i) => ({ kind: 'verify-key', path: resolve(baseDir, key), at: [...base, 'keys', i] }));
  if (verify.trusted_root !== undefined) owned.push({ kind: 'trusted-root', path: resolve(baseDir, verify.trusted_root), at: [...base, 'trusted_root'] });
  return owned;
}

/** The trust anchors of a resolved `verify` (absolute already). */
export function trustAnchors(verify: { keys?: readonly string[]; trustedRoot?: string } | undefined): HostOwnedPath[] {
  if (verify === undefined) return [];
  const owned: HostOwnedPath[] = (verify.keys ?? []).map((path) => ({ kind: 'verify-key', path }));
  if (verify.trustedRoot !== undefined) owned.push({ kind: 'trusted-root', path: verify.trustedRoot });
  return owned;
}

/**
 * The owned paths a config file names.
 *
 * @param file the config file (absolute), unless the config is an object
 */
export function configOwnedPaths(config: ConfigFile, baseDir: string, file?: string): ConfiguredOwnedPath[] {
  const owned: ConfiguredOwnedPath[] = [];
  if (file !== undefined) owned.push({ kind: 'config', path: file }, { kind: 'lock', path: lockPathFor(file) });
  const host = config.host ?? {};
  owned.push(...verifyAnchors(config.distribution?.verify, ['distribution', 'verify'], baseDir));
  (config.tools ?? []).forEach((entry, i) => owned.push(...verifyAnchors(entry.verify, ['tools', i, 'verify'], baseDir)));
  if (config.distribution?.store_dir !== undefined) owned.push({ kind: 'store', path: resolve(baseDir, config.distribution.store_dir), at: ['distribution', 'store_dir'] });
  owned.push(host.pool?.cache_dir !== undefined
    ? { kind: 'cache', path: resolve(baseDir, host.pool.cache_dir), at: ['host', 'pool', 'cache_dir'] }
    : { kind: 'cache', path: defaultCacheDir() });
  if (host.audit_log !== undefined && host.audit_log !== 'stderr') owned.push({ kind: 'audit-log', path: resolve(baseDir, host.audit_log), at: ['host', 'audit_log'] });
  (config.tools ?? []).forEach((entry, i) => owned.push({ kind: 'component', path: resolve(baseDir, entry.path), at: ['tools', i, 'path'] }));
  // What toolhost_load may load: a guest that could write there would choose the next admin load's code.
  (config.admin?.load_dirs ?? []).forEach((dir, i) => owned.push({ kind: 'component', path: resolve(baseDir, dir), at: ['admin', 'load_dirs', i] }));
  (config.mcp_servers ?? []).forEach((entry, i) => {
    if (entry.url !== undefined) return;
    const cwd = resolve(baseDir, entry.cwd ?? '.');
    for (const { path, arg } of serverFiles(entry.command, entry.args ?? [], cwd, baseDir)) {
      owned.push({ kind: 'mcp-server', path, at: arg === undefined ? ['mcp_servers', i, 'command'] : ['mcp_servers', i, 'args', arg] });
    }
  });
  return owned;
}

/**
 * The owned paths a resolved config adds to its host's: the config file, its
 * lock, the trust anchors (the registry adds the `distribution` ones too, for
 * embedders), the MCP servers (the cache, the audit log, the store and the
 * components are added by the registry as it opens and loads them).
 */
export function resolvedOwnedPaths(config: ResolvedConfig): HostOwnedPath[] {
  const owned: HostOwnedPath[] = [];
  if (config.file !== undefined) owned.push({ kind: 'config', path: config.file }, { kind: 'lock', path: lockPathFor(config.file) });
  owned.push(...trustAnchors(config.distribution.verify));
  for (const dir of config.adminLoadDirs) owned.push({ kind: 'component', path: dir });
  for (const tool of config.tools) owned.push(...trustAnchors(tool.options.verify));
  for (const server of config.mcpServers) {
    if (server.transport !== 'stdio') continue;
    for (const { path } of serverFiles(server.command, server.args, server.cwd, config.baseDir)) owned.push({ kind: 'mcp-server', path });
  }
  return owned;
}
