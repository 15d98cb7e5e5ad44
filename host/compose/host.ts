/**
 * The composition root: the one place a host is assembled from a config.
 * `toolhost list`, `call` and `serve` all open their host here, so they show
 * the same tools for the same config; `serve` only adds servers on top.
 *
 * Order: registry (with the sandbox loader in it) → the config's components →
 * `load` extras → HTTP tools → imported MCP servers → admin tools. If any
 * step fails, what was made so far is closed and the error is re-thrown.
 * A host opened for one call (`forTool`) may skip what cannot serve it
 * (tool-scope.ts).
 */
import { resolve } from 'node:path';
import { embeddedConfig } from '../config/defaults.js';
import { findConfig } from '../config/find.js';
import { configFromObject, loadConfig, type LoadedConfig } from '../config/load.js';
import type { ResolvedConfig } from '../config/resolve.js';
import type { ConfigFile } from '../config/types.js';
import { resolvedOwnedPaths } from '../config/owned-paths.js';
import type { ToolRegistry } from '../core/registry.js';
import type { McpImport } from '../tools/mcp-import.js';
import { createDefaultLogger } from '../base/logger.js';
import { lockPathFor, readLock } from '../distribution/lock.js';
import type { Fleet } from '../fleet/index.js';
import { registerAdminTools } from '../tools/admin-tools.js';
import { registerFleetTools } from '../tools/fleet-tools.js';
import { importConfiguredMcpServers, registerConfiguredComponents, registerHttpTools } from './configured-tools.js';
import { createRegistry, registryOptions, type RegistryOptions } from './registry.js';
import type { CallTracer } from '../core/tracing.js';
import type { Logger } from '../base/logger.js';
import { telemetrySettings } from '../telemetry/settings.js';
import { toolhostPackageRoot } from '../policy/host-owned-paths.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scopeToTool, type ToolScope } from './tool-scope.js';

/** A registry with every tool its config names, and what else must be closed with it. */
export interface Host {
  readonly registry: ToolRegistry;
  readonly config: ResolvedConfig;
  /** Imported MCP servers (their connections close with the host). */
  readonly imports: readonly McpImport[];
  /** The fleet on Redis, when the config has a `cluster` section (its state store and call directory are the registry's). */
  readonly fleet?: Fleet;
  /** Where the host's spans go (OpenTelemetry), when `telemetry:` or the OTEL_* environment turned tracing on. */
  readonly tracer?: CallTracer;
  /** Close the imports, cancel calls in flight and stop the worker pool; then export the spans still held. */
  close(): Promise<void>;
}

export interface CreateHostOptions {
  /** Components (files or directories) loaded after the config's, with no grant of their own. */
  load?: readonly string[];
  /** Registry options that win over the config's (an embedder's logger, audit log, approval hook, state store). */
  overrides?: RegistryOptions;
  /** Where bearer-token variables named by the config are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** What this host adds to its record in the fleet view (`toolhost fleet`): its servers, its pool. */
  describeHost?: () => Record<string, unknown>;
  /**
   * The one tool this host is opened to call (`toolhost call`): only what can
   * serve it is loaded when the transpile cache can tell (see tool-scope.ts);
   * the call's answer is the one a host with everything loaded gives.
   */
  forTool?: string;
  /** Aborts the remote loads the host makes while it is created (Ctrl-C, a shutdown during start): CANCELLED. */
  signal?: AbortSignal;
}

/**
 * Build a host from a config (default: the embedded defaults, i.e. the
 * example tools). The config is either resolved ({@link loadHostConfig},
 * `loadConfig`) or an object of `toolhost.yaml`'s shape, which is checked
 * exactly as a file would be (relative paths start at `process.cwd()`).
 *
 * ```ts
 * const host = await createHost();
 * const result = await host.registry.execute('sha256', { text: 'abc' });
 * await host.close();
 *
 * const mine = await createHost({ tools: [{ path: './my-tool.wasm', grant: { memory_mb: 32 } }] });
 * ```
 *
 * @throws ConfigError (INVALID_INPUT) for a config object the schema or the checks refuse
 */
export async function createHost(given: ResolvedConfig | ConfigFile = embeddedConfig().resolved, options: CreateHostOptions = {}): Promise<Host> {
  const config = isResolved(given) ? given : (await configFromObject(given, options.env === undefined ? {} : { env: options.env })).resolved;
  const scope = options.forTool === undefined ? undefined : await scopeToTool(options.forTool, config, options.load ?? []);
  if (scope === undefined) return assembleHost(config, options);
  const host = await assembleHost(config, options, scope);
  if (host.registry.resolveName(options.forTool ?? '') !== undefined) return host;
  // Not there after all (a cache entry that lied about its tools): everything, as without a scope.
  await host.close();
  return assembleHost(config, options);
}

/** The host for `config`, with everything it names, or only what `scope` keeps. */
async function assembleHost(config: ResolvedConfig, options: CreateHostOptions, scope?: ToolScope): Promise<Host> {
  const base = registryOptions(config, options.overrides);
  // A fleet: state and calls in Redis, unless an embedder passed its own state store.
  // The Redis client loads only for a host in a fleet.
  const fleet = config.cluster === undefined ? undefined : (await import('../fleet/index.js')).openFleet({
    ...config.cluster,
    // MCP sessions in Redis live as long as an idle session on one host.
    sessions: { ...config.cluster.sessions, ttlMs: config.servers.mcp.http.sessionIdleMs },
    events: { maxEvents: config.servers.mcp.http.resumeEvents, maxBytes: config.servers.mcp.http.resumeBytes },
    ...(options.describeHost === undefined ? {} : { describe: options.describeHost }),
  }, base.logger ?? createDefaultLogger());
  // Tracing: the SDK loads only when `telemetry:` or the OTEL_* environment asks for it (an embedder's own tracer wins).
  const tracer = base.tracer ?? await openTracer(config, options.env ?? process.env, base.logger ?? createDefaultLogger());
  const withTracer = tracer === undefined ? base : { ...base, tracer };
  const registry = createRegistry(fleet === undefined ? withTracer : { stateStore: fleet.stateStore, ...withTracer, fleet: fleet.directory });
  // The config file and the MCP servers it runs: no call's writable worktree may overlap them.
  registry.hostOwnedPaths.addAll(resolvedOwnedPaths(config));
  const imports: McpImport[] = [];
  const host: Host = {
    registry,
    config,
    imports,
    ...(fleet === undefined ? {} : { fleet }),
    ...(tracer === undefined ? {} : { tracer }),
    async close() {
      await Promise.allSettled(imports.map((imported) => imported.close()));
      await registry.close();
      await fleet?.close();
      // Only a tracer this host made: an embedder's own is theirs to shut down.
      if (tracer !== undefined && base.tracer === undefined) await tracer.shutdown().catch(() => undefined);
    },
  };
  try {
    if (fleet !== undefined) registerFleetTools(registry);
    await registerConfiguredComponents(registry, scope?.tools ?? config.tools, options.signal);
    const load = scope?.load ?? options.load ?? [];
    if (load.length > 0) await registry.registerWasmTools([...load], options.signal === undefined ? {} : { signal: options.signal });
    await registerHttpTools(registry, scope?.httpTools ?? config.httpTools);
    if (scope === undefined) await importConfiguredMcpServers(registry, config.mcpServers, imports, options.env);
    // With a network server configured, its callers must be authenticated (the config check saw to tokens or OAuth).
    const networked = config.servers.mcp.http.enabled || config.servers.grpc.enabled;
    if (config.adminTools) registerAdminTools(registry, { callers: networked ? 'authenticated' : 'any', loadDirs: config.adminLoadDirs });
  } catch (error) {
    await host.close();
    throw error;
  }
  return host;
}

/** The tracer `telemetry:` and the environment describe (telemetry/settings.ts), or undefined when tracing is off. */
async function openTracer(config: ResolvedConfig, env: NodeJS.ProcessEnv, logger: Logger): Promise<CallTracer | undefined> {
  const settings = telemetrySettings(config.telemetry, env);
  if (settings === undefined) return undefined;
  for (const warning of settings.warnings) logger.warn({ telemetry: warning }, 'telemetry: an OTEL_* setting was not applied');
  const { createTracer } = await import('../telemetry/sdk.js');
  return createTracer(settings, toolhostVersion());
}

function toolhostVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(toolhostPackageRoot(), 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** A resolved config has what only resolving adds (the file's shape has neither key). */
function isResolved(config: ResolvedConfig | ConfigFile): config is ResolvedConfig {
  return typeof config === 'object' && config !== null && 'sandbox' in config && 'baseDir' in config;
}

export interface OpenHostOptions extends CreateHostOptions {
  /** The config file (`--config`); default `./toolhost.yaml` in `cwd` when present, else the embedded defaults. */
  configPath?: string;
  /** Where `./toolhost.yaml` is looked for and relative paths start (default `process.cwd()`). */
  cwd?: string;
  /**
   * Trust from the command line (`--verify-key FILE`, `--insecure-skip-verify`): keys are added to
   * `distribution.verify.keys`, `skip` sets `distribution.verify.skip`. A tool entry's own `verify` still wins.
   */
  trust?: { keys?: readonly string[]; skip?: boolean };
}

/** The config a host will be built from, and what was said while loading it. */
export interface HostConfig {
  config: ResolvedConfig;
  /** The config file, or undefined for the embedded defaults. */
  file?: string;
  /** Config warnings, formatted `<file>:<line>:<column>: <message>`: print them to stderr. */
  warnings: string[];
}

/**
 * Find and load the config the way the CLI does. With the embedded defaults,
 * `load` replaces the example tools (so `toolhost call echo --load mine.wasm`
 * calls your `echo`, not the example's); with a config file, `load` adds to
 * what the file names (see `createHost`).
 */
export async function loadHostConfig(options: OpenHostOptions = {}): Promise<HostConfig> {
  const cwd = options.cwd ?? process.cwd();
  const loaded: LoadedConfig = await loadConfig(findConfig(cwd, options.configPath), { cwd, ...(options.env === undefined ? {} : { env: options.env }) });
  const replacesExamples = loaded.file === undefined && options.load !== undefined && options.load.length > 0;
  const config = replacesExamples ? { ...loaded.resolved, tools: [] } : loaded.resolved;
  const { trust } = options;
  if (trust !== undefined && ((trust.keys?.length ?? 0) > 0 || trust.skip === true)) {
    const verify = config.distribution.verify ?? {};
    config.distribution = {
      ...config.distribution,
      verify: { ...verify, keys: [...(verify.keys ?? []), ...(trust.keys ?? []).map((key) => resolve(cwd, key))], ...(trust.skip === true || verify.skip === true ? { skip: true } : {}) },
    };
  }
  // toolhost.lock next to the config file: its tags are fetched by their pinned digests only.
  const lock = loaded.file === undefined ? undefined : readLock(lockPathFor(loaded.file));
  if (lock !== undefined) config.distribution = { ...config.distribution, lock };
  return {
    config,
    warnings: replacesExamples ? [] : loaded.warnings,
    ...(loaded.file === undefined ? {} : { file: loaded.file }),
  };
}

/** `loadHostConfig`, then `createHost`: what `toolhost list`, `call` and `serve` run. */
export async function openHost(options: OpenHostOptions = {}): Promise<HostConfig & { host: Host }> {
  const loaded = await loadHostConfig(options);
  return { ...loaded, host: await createHost(loaded.config, options) };
}
