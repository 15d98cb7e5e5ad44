/**
 * Host-owned paths: every path the host reads code or configuration from
 * (the config file, the host's own package with its `dist/` and worker
 * bootstrap, the `node_modules` directories it loads dependencies from, the
 * Node binary, the transpile cache, the audit log, component files and
 * directories, imported MCP servers' commands, and the trust anchors: the
 * publisher keys and `trusted_root` that verify remote components, the lock
 * that pins them, the store they are fetched into), and the one rule about them:
 * a worktree a guest can **write** must not overlap any of them.
 *
 * Overlap is checked both ways on resolved paths: the worktree (after its
 * symlinks) holds an owned path, or lies inside one. "Holds" counts every
 * directory entry the owned path's resolution passes through, symlinks
 * included: a worktree that holds a symlink on the way to the config file
 * lets a guest replace the link, so it overlaps even when the file itself is
 * elsewhere.
 *
 * What it does not guarantee: a symlink or mount made after the check (by
 * someone other than the guest: the confinement layer never follows a
 * guest's link out of the worktree) is not seen until the next check; hard
 * links made by the operator are not detected; paths the host is never told
 * about (an MCP server's script named only in its `args`, files an embedder's
 * own code loads) are not known. Read-only worktrees may overlap: reading the
 * host's configuration is not running code.
 *
 * Decisions only, `node:fs` reads (realpath, lstat, readlink); no heavy imports.
 */
import { existsSync, lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What an owned path is (the messages name it). */
export type HostOwnedKind =
  | 'config'
  | 'package'
  | 'node_modules'
  | 'runtime'
  | 'cache'
  | 'audit-log'
  | 'component'
  | 'mcp-server'
  | 'lock'
  | 'store'
  | 'verify-key'
  | 'trusted-root'
  | 'worktree';

/** One path the host reads code or configuration from. */
export interface HostOwnedPath {
  kind: HostOwnedKind;
  /** Absolute (made so when added). It need not exist yet (a cache made at first use). */
  path: string;
}

/** How a worktree overlaps an owned path. */
export interface HostOwnedOverlap {
  owned: HostOwnedPath;
  /** The worktree as given, and resolved. */
  worktree: string;
  realWorktree: string;
  /** `holds`: the worktree holds the owned path (or an entry on the way to it); `inside`: the worktree lies inside it. */
  relation: 'holds' | 'inside';
  /** The entry the worktree holds (the owned path itself, or a symlink on the way to it). */
  entry?: string;
}

const KIND_NAMES: Record<HostOwnedKind, string> = {
  config: 'the config file',
  package: "toolhost's own package",
  node_modules: 'a node_modules directory the host loads code from',
  runtime: 'the Node.js binary',
  cache: 'the transpile cache',
  'audit-log': 'the audit log',
  component: 'a component the host loads',
  'mcp-server': 'an imported MCP server the host runs',
  lock: 'the lock file that pins remote components (toolhost.lock)',
  store: 'the store of fetched components',
  'verify-key': 'a publisher key remote components are verified with (distribution.verify.keys)',
  'trusted-root': 'the Sigstore trusted root remote components are verified with (distribution.verify.trusted_root)',
  worktree: "another tool's worktree",
};

/** The real path of `path`, or of its nearest existing ancestor joined with the rest (it may not exist yet). */
export function realPath(path: string): string {
  const absolute = resolve(path);
  // realpath's native form is one syscall (~5 us here; the JS one lstats every component). Most
  // owned paths exist: trying first beats an existsSync before (a thrown ENOENT costs ~16 us).
  try {
    return realpathSync.native(absolute);
  } catch {
    const parent = dirname(absolute);
    return parent === absolute ? absolute : join(realPath(parent), basename(absolute));
  }
}

/** Whether `path` is `dir` or lies inside it, both already resolved. */
function within(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Every directory entry resolving `path` passes through, each named by its
 * parent's real path and its own name: the path's own entry, and each
 * symlink on the way (a link's target is followed, up to 40 links).
 */
export function resolutionEntries(path: string): string[] {
  const entries: string[] = [];
  let pending = resolve(path).split(sep).filter((part) => part !== '');
  let current: string = sep;
  for (let links = 0; pending.length > 0;) {
    const name = pending.shift()!;
    const entry = join(current, name);
    entries.push(entry);
    let target: string | undefined;
    try {
      if (lstatSync(entry).isSymbolicLink()) target = readlinkSync(entry);
    } catch {
      // Not there (yet): the rest is lexical.
    }
    if (target === undefined || ++links > 40) {
      current = entry;
      continue;
    }
    const absolute = resolve(current, target);
    pending = [...absolute.split(sep).filter((part) => part !== ''), ...pending];
    current = sep;
  }
  return entries;
}

/** Whether the resolved worktree `realWorktree` overlaps `owned`, and how. */
function overlapOf(owned: HostOwnedPath, worktree: string, realWorktree: string): HostOwnedOverlap | undefined {
  const realOwned = realPath(owned.path);
  if (within(realWorktree, realOwned)) return { owned, worktree, realWorktree, relation: realWorktree === realOwned ? 'holds' : 'inside', entry: realOwned };
  if (within(realOwned, realWorktree)) return { owned, worktree, realWorktree, relation: 'holds', entry: realOwned };
  // Without a symlink on the way, the entries are realOwned's own prefixes: checked above.
  if (realOwned === resolve(owned.path)) return undefined;
  for (const entry of resolutionEntries(owned.path)) {
    // An entry above the worktree is the worktree's own ancestor: the guest cannot replace it.
    if (within(entry, realWorktree) && entry !== realWorktree) return { owned, worktree, realWorktree, relation: 'holds', entry };
  }
  return undefined;
}

/** What a message says of an overlap: both paths, and what the owned one is. */
export function describeOverlap(overlap: HostOwnedOverlap): string {
  const { owned, worktree, realWorktree, relation, entry } = overlap;
  const shown = realWorktree === resolve(worktree) ? worktree : `${worktree} (${realWorktree})`;
  const what = `${KIND_NAMES[owned.kind]} (${owned.path})`;
  if (relation === 'inside') return `the worktree ${shown} lies inside ${what}`;
  const through = entry !== undefined && entry !== realPath(owned.path) ? `, through ${entry}` : '';
  return `the worktree ${shown} holds ${what}${through}`;
}

/** The directory of toolhost's package.json (the package this file belongs to). */
export function toolhostPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'toolhost') return dir;
      } catch {
        // keep looking upwards
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find toolhost\'s package.json');
    dir = parent;
  }
}

let processPaths: readonly HostOwnedPath[] | undefined;

/**
 * What every host in this process loads code from, found once: toolhost's
 * package root (its `dist/`, `package.json` and worker bootstrap inside),
 * every existing `node_modules` directory Node looks in from here (the app's,
 * when toolhost is installed as a dependency), each dependency's own
 * directory after symlinks, and the Node.js binary.
 */
export function processOwnedPaths(): readonly HostOwnedPath[] {
  if (processPaths !== undefined) return processPaths;
  const paths: HostOwnedPath[] = [];
  const root = toolhostPackageRoot();
  paths.push({ kind: 'package', path: root });
  const require = createRequire(join(root, 'package.json'));
  const lookup = (require.resolve.paths('toolhost-owned-paths-probe') ?? []).filter((dir) => existsSync(dir));
  for (const dir of lookup) paths.push({ kind: 'node_modules', path: dir });
  let dependencies: string[] = [];
  try {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    dependencies = Object.keys(manifest.dependencies ?? {});
  } catch {
    // no manifest to read: the lookup directories stand
  }
  for (const name of dependencies) {
    const found = lookup.map((dir) => join(dir, name)).find((dir) => existsSync(dir));
    if (found === undefined) continue;
    const real = realPath(found);
    if (!lookup.some((dir) => within(real, realPath(dir)))) paths.push({ kind: 'node_modules', path: real });
  }
  paths.push({ kind: 'runtime', path: process.execPath });
  processPaths = paths;
  return paths;
}

/**
 * The set of host-owned paths one host knows: the process's own (see
 * {@link processOwnedPaths}, found at the first check) and whatever the host
 * adds (its config file, cache, audit log, components, MCP servers).
 */
export class HostOwnedPaths {
  readonly #added: HostOwnedPath[] = [];
  readonly #seen = new Set<string>();
  readonly #withProcess: boolean;

  /** @param options.process include the process's own paths (default true; false for tests of one kind) */
  constructor(paths: Iterable<HostOwnedPath> = [], options: { process?: boolean } = {}) {
    this.#withProcess = options.process ?? true;
    this.addAll(paths);
  }

  /** Add one path (made absolute; duplicates are ignored). */
  add(kind: HostOwnedKind, path: string): this {
    const absolute = resolve(path);
    const key = `${kind}\0${absolute}`;
    if (!this.#seen.has(key)) {
      this.#seen.add(key);
      this.#added.push({ kind, path: absolute });
    }
    return this;
  }

  addAll(paths: Iterable<HostOwnedPath>): this {
    for (const { kind, path } of paths) this.add(kind, path);
    return this;
  }

  /** Every owned path: the process's, then those added. */
  list(): HostOwnedPath[] {
    return [...(this.#withProcess ? processOwnedPaths() : []), ...this.#added];
  }

  /** The first owned path `worktree` overlaps (see the file's header), or undefined. */
  overlap(worktree: string): HostOwnedOverlap | undefined {
    return overlapWith(worktree, this.list());
  }
}

/** The first of `paths` that `worktree` overlaps, or undefined. */
export function overlapWith(worktree: string, paths: Iterable<HostOwnedPath>): HostOwnedOverlap | undefined {
  const realWorktree = realPath(worktree);
  for (const owned of paths) {
    const found = overlapOf(owned, worktree, realWorktree);
    if (found !== undefined) return found;
  }
  return undefined;
}
