/**
 * `toolhost pull [REF...]` and `toolhost update [REF...]`: fetch remote
 * components, verify them with the trust the config (and `--verify-key`)
 * gives, keep them in the store, and write `toolhost.lock` next to the config
 * file. `pull` keeps what the lock already pins (fetching it by digest, so a
 * host can then start offline); `update` resolves tags again. Without REFs,
 * the config's remote sources (and the lock then holds exactly those); with
 * REFs, those only (the other entries stay). Prints a JSON report.
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
  process.stdout.write(`${JSON.stringify({ lock: lockPath, changed, components: entries }, null, 2)}\n`);
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
      .option('--config <path>', `the config file (default: ./toolhost.yaml); ${mode === 'pull' ? 'the lock is written next to it' : 'its lock is rewritten'}`);
    addTrustOptions(command).action(async (refs: string[], flags: PullFlags) => {
      process.exitCode = await pull(refs, flags, mode);
    });
  }
}

