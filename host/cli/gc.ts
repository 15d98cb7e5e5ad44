/**
 * `toolhost gc`: remove the chunks (base/chunk-store.ts) that no recipe of the
 * component store or the transpile cache names any more, once they are older
 * than the grace (base/chunk-gc.ts: why that is safe beside a running host).
 * First it removes what pins chunks for nothing: cached variants made by an
 * older pipeline (load/variant-cache.ts `removeStaleVariants`: a host that
 * needs one makes it again) and, with `--old-formats`, whole cache
 * directories of other cache formats (a host of another toolhost version
 * that shares the cache transpiles again). Prints what it removed and kept:
 * a line a person reads, or JSON with `--json`.
 */
import { readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';

interface GcFlags {
  config?: string;
  grace?: string;
  json?: boolean;
  oldFormats?: boolean;
}

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

async function gc(flags: GcFlags): Promise<number> {
  const grace = flags.grace === undefined ? undefined : Number(flags.grace);
  if (grace !== undefined && !(Number.isFinite(grace) && grace >= 0)) throw new UsageError('--grace must be a number of seconds, 0 or more');
  const [{ loadHostConfig }, { ChunkStore }, { collectChunks, DEFAULT_GC_GRACE_MS }, { CHUNKS_DIR, defaultCacheDir, isCacheFormatDir }, { ComponentCache }, { removeStaleVariants }] = await Promise.all([
    import('../compose/host.js'),
    import('../base/chunk-store.js'),
    import('../base/chunk-gc.js'),
    import('../sandbox/load/cache-location.js'),
    import('../sandbox/load/component-cache.js'),
    import('../sandbox/load/variant-cache.js'),
  ]);
  const { config, warnings } = await loadHostConfig({ load: [], ...(flags.config === undefined ? {} : { configPath: flags.config }) });
  for (const warning of warnings) process.stderr.write(`toolhost: ${warning}\n`);
  const graceMs = grace === undefined ? DEFAULT_GC_GRACE_MS : Math.round(grace * 1000);
  const cacheDir = config.sandbox.cacheDir ?? defaultCacheDir();
  const formatDir = new ComponentCache(cacheDir).formatDir;
  const staleVariants = await removeStaleVariants(formatDir);
  const current = basename(formatDir);
  const oldFormats = (await readdir(cacheDir).catch(() => [] as string[])).filter((name) => isCacheFormatDir(name) && name !== current).sort();
  if (flags.oldFormats) for (const name of oldFormats) await rm(join(cacheDir, name), { recursive: true, force: true });
  // The cache's chunks serve the cache and the default store (in the cache); a store of its own keeps its own.
  const stores: Array<{ chunks: string; roots: string[] }> = [{ chunks: join(cacheDir, CHUNKS_DIR), roots: [cacheDir] }];
  const storeDir = config.distribution.storeDir;
  if (storeDir !== undefined) stores.push({ chunks: join(storeDir, CHUNKS_DIR), roots: [storeDir] });
  const reports = [];
  for (const { chunks, roots } of stores) reports.push({ chunks, ...await collectChunks(new ChunkStore(chunks), roots, graceMs) });
  const cache = { formatDir, staleVariantsRemoved: staleVariants, oldFormats, oldFormatsRemoved: flags.oldFormats === true };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ graceMs, cache, stores: reports }, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(`${formatDir}: removed ${staleVariants} variant${staleVariants === 1 ? '' : 's'} an older pipeline made\n`);
  if (oldFormats.length > 0) {
    process.stdout.write(flags.oldFormats
      ? `${cacheDir}: removed ${oldFormats.length} cache director${oldFormats.length === 1 ? 'y' : 'ies'} of other cache formats (${oldFormats.join(', ')})\n`
      : `${cacheDir}: kept ${oldFormats.length} cache director${oldFormats.length === 1 ? 'y' : 'ies'} of other cache formats (${oldFormats.join(', ')}): their chunks stay; --old-formats removes them\n`);
  }
  for (const r of reports) {
    process.stdout.write(`${r.chunks}: removed ${r.removed} chunk${r.removed === 1 ? '' : 's'} (${mib(r.removedBytes)}); kept ${r.kept + r.young} (${mib(r.keptBytes)}, ${r.young} unnamed but younger than the grace of ${graceMs / 1000} s); ${r.recipes} recipes read${r.unreadable > 0 ? `, ${r.unreadable} unreadable` : ''}\n`);
  }
  return 0;
}

export function addGcCommand(root: Command): void {
  root
    .command('gc')
    .description('remove the chunks of the transpile cache and the component store that no cached or stored file names any more (never one younger than the grace: safe beside a running host)')
    .option('--config <path>', 'the config file (its cache_dir and store_dir)')
    .option('--grace <seconds>', 'keep unnamed chunks younger than this (default 3600)')
    .option('--old-formats', 'also remove the cache directories of other cache formats (a host of another toolhost version sharing the cache transpiles again)')
    .option('--json', 'print a JSON report')
    .action(async (flags: GcFlags) => {
      process.exitCode = await gc(flags);
    });
}
