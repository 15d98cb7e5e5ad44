/**
 * `toolhost pull [REF...]` and `toolhost update [REF...]`: fetch remote
 * components, verify them with the trust the config (and `--verify-key`)
 * gives, keep them in the store, and write `toolhost.lock` next to the config
 * file. `pull` keeps what the lock already pins (fetching it by digest, so a
 * host can then start offline); `update` resolves tags again. Without REFs,
 * the config's remote sources (and the lock then holds exactly those); with
 * REFs, those only (the other entries stay). Prints a summary a person reads
 * (each source, its digest, `update`: old → new) on a terminal or with
 * `--no-json`; the JSON report (`{lock, changed, components}`) with `--json` or
 * when stdout is not a terminal (what scripts always read). Progress: on a
 * terminal's stderr only (cli/progress.ts).
 *
 * Nothing is written to the lock unless every source was fetched and
 * verified: one refusal and the command fails with its error, lock unchanged.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import type { TrustPolicy } from '../distribution/options.js';
import { addTrustOptions, interruptible, trustOf, type TrustFlags } from './distribution.js';
import { UsageError } from './usage-error.js';

interface PullFlags extends TrustFlags {
  config?: string;
  /** `--json` / `--no-json`; undefined: JSON unless stdout is a terminal. */
  json?: boolean;
}

type Entry = import('../distribution/lock.js').LockEntry;

/** The summary of a pull or update, for a person: each source, what it is pinned to now, and what it was. */
export function pullSummary(mode: 'pull' | 'update', lockPath: string, sources: readonly string[], before: Readonly<Record<string, Entry>>, after: Readonly<Record<string, Entry | undefined>>): string {
  const short = (digest: string | undefined): string => digest === undefined ? 'none' : digest.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, '$1…');
  const digestOf = (entry: Entry | undefined): string | undefined => entry === undefined ? undefined : entry.manifestDigest ?? entry.layerDigest;
  const changed = sources.filter((source) => before[source]?.pinned !== after[source]?.pinned).length;
  const lines = [`${mode === 'pull' ? 'pulled' : 'updated'} ${sources.length} component${sources.length === 1 ? '' : 's'} (${changed} changed); lock: ${lockPath}`];
  for (const source of sources) {
    const [old, now] = [before[source], after[source]];
    const state = old === undefined ? 'new' : old.pinned === now?.pinned ? 'unchanged' : 'changed';
    const digests = state === 'changed' ? `${short(digestOf(old))} → ${short(digestOf(now))}` : short(digestOf(now));
    const signer = now === undefined ? '' : now.signer === 'skipped' ? ', UNVERIFIED (verification skipped)' : now.signer === 'pinned' ? ', pinned by its URL digest' : `, signed by ${short(now.signer)}`;
    lines.push(`  ${source}`, `    ${state}: ${digests} (${now === undefined ? '?' : formatSize(now.size)}${signer})`);
  }
  return `${lines.join('\n')}\n`;
}

function formatSize(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

async function pull(refs: string[], flags: PullFlags, mode: 'pull' | 'update'): Promise<number> {
  const [{ loadHostConfig }, { chunksDirOf, storeDirOf }, { RemoteFetcher, lockEntryOf }, lock, { isRemoteSource }, { createDefaultLogger }] = await Promise.all([
    import('../compose/host.js'),
    import('../compose/registry.js'),
    import('../distribution/fetch.js'),
    import('../distribution/lock.js'),
    import('../distribution/source.js'),
    import('../base/logger.js'),
  ]);
  const { config, file } = await loadHostConfig({ ...(flags.config === undefined ? {} : { configPath: flags.config }), trust: trustOf(flags) });
  if (file === undefined && refs.length === 0) throw new UsageError(`${mode} needs a toolhost.yaml naming remote tools (or REFs to ${mode})`);
  const lockPath = file === undefined ? join(process.cwd(), lock.LOCK_FILE) : lock.lockPathFor(file);
  const existing = lock.readLock(lockPath) ?? {};
  const configured = new Map(config.tools.filter((tool) => isRemoteSource(tool.path)).map((tool) => [tool.path, tool.options.verify]));
  for (const ref of refs) if (!isRemoteSource(ref)) throw new UsageError(`${ref} is not a remote source (oci://… or https://…#sha256=…)`);
  const sources = refs.length > 0 ? [...new Set(refs)] : [...configured.keys()];
  // pull: what is locked stays pinned. update: the sources named are resolved again.
  const pins = mode === 'pull' ? existing : Object.fromEntries(Object.entries(existing).filter(([source]) => !sources.includes(source)));
  const { lock: _ignored, ...distribution } = config.distribution;
  const fetcher = new RemoteFetcher({ ...distribution, lock: pins, storeDir: storeDirOf(distribution, config.sandbox), ...chunksDirOf(distribution, config.sandbox) }, createDefaultLogger(config.logLevel));
  const entries: Record<string, ReturnType<typeof lockEntryOf>> = refs.length > 0 ? { ...existing } : {};
  // Ctrl-C ends the fetch in progress (CANCELLED) and leaves the lock unchanged.
  await interruptible(async (signal) => {
    for (const source of sources) {
      const trust: TrustPolicy | undefined = configured.get(source);
      entries[source] = lockEntryOf(await fetcher.fetch(source, trust, signal));
    }
  });
  lock.writeLock(lockPath, entries);
  const changed = sources.filter((source) => existing[source]?.pinned !== entries[source]?.pinned);
  if (flags.json ?? process.stdout.isTTY !== true) {
    process.stdout.write(`${JSON.stringify({ lock: lockPath, changed, components: entries }, null, 2)}\n`);
  } else {
    process.stdout.write(pullSummary(mode, lockPath, sources, existing, entries));
  }
  return 0;
}

/** `toolhost pull` and `toolhost update`. */
export function addPullCommands(root: Command): void {
  for (const mode of ['pull', 'update'] as const) {
    const command = root
      .command(mode)
      .description(mode === 'pull'
        ? 'fetch and verify remote components into the store and pin them in toolhost.lock (locked ones stay pinned)'
        : 'resolve remote components\' tags again, verify and store them, and rewrite their pins in toolhost.lock')
      .argument('[refs...]', 'oci://… or https://…#sha256=… sources (default: every remote tool the config names)')
      .option('--config <path>', `the config file (default: ./toolhost.yaml); ${mode === 'pull' ? 'the lock is written next to it' : 'its lock is rewritten'}`)
      .option('--json', 'print the JSON report (the default when stdout is not a terminal); no progress display')
      .option('--no-json', 'print the summary for a person (the default on a terminal)');
    addTrustOptions(command).action(async (refs: string[], flags: PullFlags) => {
      process.exitCode = await pull(refs, flags, mode);
    });
  }
}

