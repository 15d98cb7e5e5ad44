/**
 * `toolhost.lock`, next to toolhost.yaml: for each remote source (as written
 * in the config), what it resolved to when it was last pulled — the manifest
 * digest, the layer digest and size, and the fingerprint of the key whose
 * signature was accepted. A host with a lock fetches a locked source by its
 * pinned digest only, so a tag that moved changes nothing until
 * `toolhost update` (docs/distribution.md).
 *
 * Guarantees: the file is JSON with sorted entries (stable diffs), written
 * through a temporary file renamed into place; a malformed lock is refused
 * (INVALID_INPUT naming the file), never half-read; so is an entry whose
 * `pinned` and `manifestDigest` do not name the same manifest of the same
 * repository as its source (the load fetches by `manifestDigest`: a
 * hand-edited `pinned` must not say otherwise). Not guaranteed: that a
 * locked source is still trusted — its signature is verified at every load
 * with the trust configured then; the recorded signer is information.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import { parseSource, pinnedOciText } from './source.js';

/** The lock file's name, in the config file's directory. */
export const LOCK_FILE = 'toolhost.lock';

/** What one remote source was pinned to. */
export interface LockEntry {
  /** The source pinned by digest: `oci://REGISTRY/REPO@sha256:…` (OCI), or the URL as written. */
  pinned: string;
  /** OCI: the manifest digest its signature was verified against. */
  manifestDigest?: string;
  /** The component's (layer's) sha256. */
  layerDigest: string;
  size: number;
  /** `sha256:` of the accepted key's SPKI (DER); `SUBJECT (ISSUER)` for a keyless signature; `skipped` when verification was skipped; `pinned` for a URL's digest. */
  signer: string;
}

/** The lock's entries, by source as written in the config. */
export type LockEntries = Readonly<Record<string, LockEntry>>;

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The lock file of a config file. */
export function lockPathFor(configFile: string): string {
  return join(dirname(configFile), LOCK_FILE);
}

function isEntry(value: unknown): value is LockEntry {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  return typeof entry.pinned === 'string'
    && (entry.manifestDigest === undefined || (typeof entry.manifestDigest === 'string' && DIGEST.test(entry.manifestDigest)))
    && typeof entry.layerDigest === 'string' && DIGEST.test(entry.layerDigest)
    && Number.isSafeInteger(entry.size) && (entry.size as number) >= 0
    && typeof entry.signer === 'string';
}

/**
 * Read a lock file: its entries, or undefined when there is none.
 * @throws ToolhostError INVALID_INPUT for a lock that is not one.
 */
export function readLock(path: string): LockEntries | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ToolhostError('INVALID_INPUT', `cannot read ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `${path} is not JSON: ${(error as Error).message}; delete it and run toolhost pull`);
  }
  const lock = parsed as { version?: unknown; components?: unknown } | null;
  if (typeof lock !== 'object' || lock === null || lock.version !== 1 || typeof lock.components !== 'object' || lock.components === null) {
    throw new ToolhostError('INVALID_INPUT', `${path} is not a toolhost lock (version 1); delete it and run toolhost pull`);
  }
  const entries: Record<string, LockEntry> = {};
  for (const [source, entry] of Object.entries(lock.components as Record<string, unknown>)) {
    if (!isEntry(entry)) throw new ToolhostError('INVALID_INPUT', `${path}: the entry for ${source} is malformed; run toolhost update ${source}`);
    const mismatch = pinMismatch(source, entry);
    if (mismatch !== undefined) {
      throw new ToolhostError('INVALID_INPUT', `${path}: the entry for ${source} ${mismatch}, so the lock does not say which one to load: run toolhost update ${source} to pin it again`, { details: { reason: 'lock-mismatch', source, pinned: entry.pinned, ...(entry.manifestDigest === undefined ? {} : { manifestDigest: entry.manifestDigest }) } });
    }
    entries[source] = entry;
  }
  return entries;
}

/**
 * Why `entry` does not pin `source` consistently, or undefined: an OCI source's `pinned` must be exactly the source's
 * repository at `manifestDigest` (what lockEntryOf writes), a URL source's `pinned` the source itself, with no
 * manifest digest.
 */
function pinMismatch(text: string, entry: LockEntry): string | undefined {
  let source: ReturnType<typeof parseSource>;
  try {
    source = parseSource(text);
  } catch {
    return 'is not for a remote source (oci://… or https://…#sha256=…)';
  }
  if (source.kind === 'url') {
    if (entry.manifestDigest !== undefined) return `has a manifestDigest (${entry.manifestDigest}), which a URL source has none of`;
    return entry.pinned === text ? undefined : `pins ${entry.pinned}, not the URL itself`;
  }
  if (entry.manifestDigest === undefined) return 'has no manifestDigest';
  if (source.digest !== undefined && source.digest !== entry.manifestDigest) return `has manifestDigest ${entry.manifestDigest}, but the source is pinned to ${source.digest}`;
  const expected = pinnedOciText(source, entry.manifestDigest);
  return entry.pinned === expected ? undefined : `pins ${entry.pinned} but its manifestDigest is ${entry.manifestDigest} (pinned should read ${expected})`;
}

/** Write a lock file (entries sorted by source), atomically. */
export function writeLock(path: string, entries: LockEntries): void {
  const components = Object.fromEntries(Object.keys(entries).sort().map((source) => [source, entries[source]!]));
  const temp = join(dirname(path), `.${LOCK_FILE}.${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(temp, `${JSON.stringify({ version: 1, components }, null, 2)}\n`);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
