/**
 * A registry with the sandbox in it. The core registry knows nothing of Wasm:
 * it holds whatever `WasmToolLoader` it is given, and this is where the
 * sandbox's loader is given to it (composition, not a subclass).
 */
import { createDefaultLogger } from '../base/logger.js';
import { ToolRegistry, type ToolRegistryOptions } from '../core/registry.js';
import { denyAllApprovals, type ApprovalHook } from '../policy/approval.js';
import { askCallerApproval } from '../policy/approval-elicitation.js';
import { createAuditLog } from '../policy/audit.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { SandboxLoader, type SandboxOptions } from '../sandbox/loader.js';
import type { RemoteComponentFetch } from '../sandbox/load/component-file.js';
import { CHUNKS_DIR, defaultCacheDir } from '../sandbox/load/cache-location.js';
import { join } from 'node:path';
import { RemoteFetcher } from '../distribution/fetch.js';
import type { DistributionOptions } from '../distribution/options.js';

/** What `createRegistry` takes: the core registry's options, and the sandbox's instead of a loader. */
export interface RegistryOptions extends Omit<ToolRegistryOptions, 'wasmLoader' | 'pool'> {
  /** The sandbox: worker threads, queue bound, transpile cache directory, output caps. */
  sandbox?: SandboxOptions;
  /**
   * Remote sources (`oci://`, `https://…#sha256=`): store, registries, credentials, trust and caps. Remote
   * sources are always accepted by `registerWasmTools`; with no trust configured an `oci://` one is refused.
   */
  distribution?: DistributionOptions;
}

/**
 * A registry whose `registerWasmTools` loads components into the sandbox's
 * worker pool (started on the first load, closed with the registry).
 *
 * ```ts
 * const registry = createRegistry({ sandbox: { threads: 2 } });
 * await registry.registerWasmTools('path/to/tools');
 * ```
 */
export function createRegistry(options: RegistryOptions = {}): ToolRegistry {
  const { sandbox = {}, distribution = {}, ...rest } = options;
  const logger = rest.logger ?? createDefaultLogger();
  const storeDir = storeDirOf(distribution, sandbox);
  const fetcher = new RemoteFetcher({ ...distribution, storeDir, ...chunksDirOf(distribution, sandbox) }, logger);
  const fetchRemote: RemoteComponentFetch = (source, load) => fetcher.fetch(source, load.verify, load.signal, load.runtime === true);
  const pool = new Sandbox({ ...sandbox, fetchRemote });
  // The registry's schema limits reach the workers that check guests' schemas and args (the loader passes them on).
  const loaderOptions = { ...sandbox, fetchRemote, ...(rest.schemaLimits === undefined ? {} : { schemaLimits: rest.schemaLimits }) };
  const registry = new ToolRegistry({ ...rest, logger, pool, wasmLoader: new SandboxLoader(loaderOptions, logger, pool) });
  // What the host runs is fetched into the store: no writable worktree may reach it (a guest would plant code there).
  registry.hostOwnedPaths.add('store', storeDir);
  // Nor the keys and trusted root that decide what verifies: a guest that replaced one would sign its own code.
  for (const key of distribution.verify?.keys ?? []) registry.hostOwnedPaths.add('verify-key', key);
  if (distribution.verify?.trustedRoot !== undefined) registry.hostOwnedPaths.add('trusted-root', distribution.verify.trustedRoot);
  return registry;
}

/**
 * Where the store keeps large blobs' chunks: with the default store (in the transpile cache) the cache's own
 * chunks, so a component and its transpiled core modules share theirs (issue 37); a store of its own keeps its own.
 */
export function chunksDirOf(distribution: DistributionOptions, sandbox: SandboxOptions): { chunksDir?: string } {
  return distribution.storeDir === undefined ? { chunksDir: join(sandbox.cacheDir ?? defaultCacheDir(), CHUNKS_DIR) } : {};
}

/** Where fetched components are kept: `distribution.store_dir`, else `store-v1` in the transpile cache directory. */
export function storeDirOf(distribution: DistributionOptions, sandbox: SandboxOptions): string {
  return distribution.storeDir ?? join(sandbox.cacheDir ?? defaultCacheDir(), 'store-v1');
}

/** Approves every PRIVILEGED and FULL_ACCESS call (`approval: always`). */
export const approveAll: ApprovalHook = () => true;

/** The hook each `approval` value stands for (`ask`: the calling client's user, policy/approval-elicitation.ts). */
const APPROVAL_HOOKS: Record<ResolvedConfig['approval'], ApprovalHook> = { never: denyAllApprovals, always: approveAll, ask: askCallerApproval };

/**
 * The registry options a resolved config stands for: defaults and ceilings,
 * cancellation grace, retry backoff, sandbox options, the logger (at the
 * config's level), the audit log (stderr, or the configured file, opened now)
 * and the approval hook (from `approval`). `overrides` win over the config,
 * key by key: an embedder's own `approve` hook, logger or audit log replaces
 * the configured one (and the audit file is then not opened).
 */
export function registryOptions(resolved: ResolvedConfig, overrides: RegistryOptions = {}): RegistryOptions {
  const { outputLimits, ...pool } = resolved.sandbox;
  const options: RegistryOptions = {
    defaults: { ...resolved.defaults },
    cancelGraceMs: resolved.cancelGraceMs,
    callIds: { ...resolved.callIds },
    retry: { ...resolved.retry },
    sandbox: outputLimits ? { ...pool, outputLimits: { ...outputLimits } } : pool,
    stateLimits: { ...resolved.stateLimits },
    schemaLimits: { ...resolved.schemaLimits },
    distribution: resolved.distribution,
  };
  if (resolved.maxResultDepth !== undefined) options.maxResultDepth = resolved.maxResultDepth;
  if (resolved.clientRequestBytes !== undefined) options.clientRequestBytes = resolved.clientRequestBytes;
  if (resolved.surfaceItems !== undefined) options.surfaceItems = resolved.surfaceItems;
  if (resolved.surfaceListingWaitMs !== undefined) options.surfaceListingWaitMs = resolved.surfaceListingWaitMs;
  if (overrides.logger === undefined) options.logger = createDefaultLogger(resolved.logLevel);
  if (overrides.audit === undefined) options.audit = resolved.auditLog === 'stderr' ? createAuditLog() : createAuditLog(resolved.auditLog.file);
  if (overrides.approve === undefined) options.approve = APPROVAL_HOOKS[resolved.approval];
  const given = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined)) as RegistryOptions;
  return { ...options, ...given };
}
