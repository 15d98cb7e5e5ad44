/**
 * Loading components into tools: read → check the header → transpile once
 * per content hash (on-disk cache) → check the world → compile the core
 * modules once → ask a worker for `describe()` (cached too) → one
 * SandboxedTool per tool the component carries.
 */
import { basename } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { LoadedComponentTools, WasmLoadOptions, WasmToolLoader } from '../core/registry.js';
import type { JsonSchema } from '../core/tool.js';
import { ComponentCache, GLUE_FILE, schemaCheckOf, type CachedComponent } from './load/component-cache.js';
import { expandComponentPaths, isRemotePath, readComponentSources, sourceFromFile, type ComponentSource } from './load/component-file.js';
import { DEFAULT_GUEST_OUTPUT_LIMITS, DEFAULT_IDLE_RELEASE_MS, type GuestOutputLimits, type GuestToolInfo } from './protocol.js';
import type { CoreModuleBytes } from './process/messages.js';
import { Sandbox } from './sandbox.js';
import { SandboxedTool, type ComponentHandle } from './sandboxed-tool.js';
import { SUPPORTED_HOST_IMPORTS } from './load/supported-imports.js';
import { DEFAULT_TABLE_ELEMENTS, tableElementsForHeap } from './load/memory-cap.js';
import { modulesPerCap, variantDigest, type SharedVariants } from './load/module-variants.js';
import { VariantCache } from './load/variant-cache.js';
import { TOOL_EXPORTS, worldOfExports } from './load/tool-world.js';
import { SURFACE_GUEST_NAME, surfaceOfExports } from './load/surface-exports.js';
import { SURFACE_TOOL_PREFIX, SURFACE_INPUT_SCHEMA } from '../core/surfaces.js';
import { resolveSchemaLimits, type SchemaLimits } from '../core/schema-limits.js';
import { DEFAULT_POLICY_DEFAULTS } from '../policy/execution-policy.js';
import { parseEgressAllowlist } from '../net/allowlist.js';
import type { ToolGrant } from '../policy/grant.js';
import type { HostOwnedPath } from '../policy/host-owned-paths.js';
import type { SandboxOptions } from './sandbox-options.js';
export type { SandboxOptions };

/** The reserved call that reaches a component's prompts and resources (its name and grant are added per component). */
const SURFACE_TOOL_SPEC = { guestName: SURFACE_GUEST_NAME, description: 'A component\'s prompts and resources', inputSchema: SURFACE_INPUT_SCHEMA, idempotent: true, streaming: false };

/** The interface every 0.1.0 tool component exports (see tool-world.ts for both worlds). */
export const TOOL_EXPORT = TOOL_EXPORTS['0.1.0'];

/** Hung spare instances after which a component is quarantined. */
const QUARANTINE_STRIKES = 2;

/** How long a component may take to instantiate and describe itself at load, unless configured. */
export const DEFAULT_DESCRIBE_TIMEOUT_MS = 10_000;

/** A component source whose bytes may be read only when needed (see `SandboxLoader.#fileSource`). */
type LazySource = Omit<ComponentSource, 'bytes'> & { bytes: Uint8Array | (() => Promise<Uint8Array>) };

/** A component compiled in this process. */
interface CompiledComponent { handle: ComponentHandle; cached: CachedComponent; tools: GuestToolInfo[] }

export class SandboxLoader implements WasmToolLoader {
  readonly #options: SandboxOptions;
  readonly #logger: Logger;
  readonly #cache: ComponentCache;
  readonly #limits: GuestOutputLimits;
  /** What a tool's schemas may cost: checked in the worker that describes a component, and in each call's worker. */
  readonly #schemaLimits: SchemaLimits;
  readonly #compiled = new Map<string, Promise<CompiledComponent>>();
  /** Components loaded but not compiled yet (see `warm`). */
  readonly #cold = new Set<ComponentHandle>();
  /** Spare instances of a component that hung, and the components quarantined for it. */
  readonly #strikes = new Map<string, number>();
  readonly #quarantined = new Set<string>();
  /** Components compiled or being compiled, by id: where the sandbox process gets their module bytes. */
  readonly #handles = new Map<string, ComponentHandle>();
  /** Capped and compiled core modules, shared by components with the same transpiled entry (module-variants.ts). */
  readonly #variants: SharedVariants = new Map();
  /** Each compiled component's variant digest (module-variants.ts), by component id. */
  readonly #digests = new Map<string, string>();
  /** Variants kept beside their cache entries for later loads (load/variant-cache.ts), made at the first load. */
  #stored: VariantCache | undefined;
  /** Glue modules by their sha256: the URL the first entry with that glue was imported from (see `#glueUrl`). */
  readonly #glueUrls = new Map<string, string>();
  readonly #sandbox: Sandbox;
  /** Whether the sandbox was made here (then the loader closes it; else its maker does). */
  readonly #ownsSandbox: boolean;

  /** `sandbox`: the pool to run on (createRegistry makes one and hands it to the registry too); made here when absent. */
  constructor(options: SandboxOptions, logger: Logger, sandbox?: Sandbox) {
    this.#options = options;
    this.#logger = logger;
    this.#cache = new ComponentCache(options.cacheDir);
    this.#limits = { ...DEFAULT_GUEST_OUTPUT_LIMITS, ...options.outputLimits };
    this.#schemaLimits = resolveSchemaLimits(options.schemaLimits);
    this.#ownsSandbox = sandbox === undefined;
    this.#sandbox = sandbox ?? new Sandbox(options);
    this.#sandbox.supply({ moduleBytes: (componentId, memoryMb) => this.#moduleBytes(componentId, memoryMb), wedged: (componentId) => this.#wedged(componentId) });
  }

  /** The transpile cache's directory: the host imports glue from it, so no writable worktree may overlap it. */
  ownedPaths(): HostOwnedPath[] {
    return [{ kind: 'cache', path: this.#cache.root }];
  }

  /** The transpile cache (its `transpiles` count shows whether loads were served from disk). */
  get cache(): ComponentCache {
    return this.#cache;
  }

  /** The sandbox the components run on (its pool, stats and end). */
  get sandbox(): Sandbox {
    return this.#sandbox;
  }

  /**
   * A worker hung preparing a spare instance of this component (its
   * initialization did not end in time) and was replaced. Twice, and the
   * component is quarantined: its calls fail at once with COMPONENT_INVALID
   * instead of wedging workers that other components' calls need.
   */
  #wedged(componentId: string): void {
    const strikes = (this.#strikes.get(componentId) ?? 0) + 1;
    this.#strikes.set(componentId, strikes);
    this.#logger.warn({ componentId, strikes }, 'a worker hung initializing a spare instance of a component and was replaced');
    if (strikes >= QUARANTINE_STRIKES) this.#quarantined.add(componentId);
  }

  #moduleBytes(componentId: string, memoryMb: number): Promise<CoreModuleBytes> {
    const handle = this.#handles.get(componentId);
    if (!handle) return Promise.reject(new ToolhostError('INTERNAL', `no component ${componentId} is loaded`));
    return handle.bytesFor(memoryMb);
  }

  async load(paths: string[], options: WasmLoadOptions): Promise<LoadedComponentTools[]> {
    const loaded: LoadedComponentTools[] = [];
    const seen = new Set<string>();
    for (const path of paths) {
      if (isRemotePath(path)) {
        for (const source of await readComponentSources([path], this.#cache.ids, this.#options.fetchRemote, options)) loaded.push(await this.loadSource(source, options));
        continue;
      }
      for (const file of await expandComponentPaths([path])) {
        if (seen.has(file)) continue;
        seen.add(file);
        loaded.push(await this.loadSource(await this.#fileSource(file), options));
      }
    }
    return loaded;
  }

  /**
   * A component file as a source, one at a time (250 componentize-js files read at once held 3 GB). When the
   * ids memo knows the file's id by its stat (component-ids.ts), its bytes are not read: a cached entry is
   * all a load needs, and reading 12 MB files cost more in GC than anything else when 500 were loaded
   * (8.4 s of CPU, 4.8 s of it the collector). They are read on a cache miss, and must still have that id.
   */
  async #fileSource(file: string): Promise<LazySource> {
    const ids = this.#cache.ids;
    const id = await ids.known(file);
    if (id === undefined) return sourceFromFile(file, ids);
    return {
      name: basename(file, '.wasm'),
      path: file,
      id,
      bytes: async () => {
        const read = await sourceFromFile(file, ids);
        if (read.id !== id) throw new ToolhostError('COMPONENT_INVALID', `"${file}" changed while it was loaded; load it again`);
        return read.bytes;
      },
    };
  }

  /** Load one component from its bytes (or, from a file whose id is known, what reads them on a cache miss). */
  async loadSource(source: ComponentSource | LazySource, options: WasmLoadOptions = {}): Promise<LoadedComponentTools> {
    const { id, name, path } = source;
    // Loading a component again is the operator's way to lift its quarantine.
    this.#quarantined.delete(id);
    this.#strikes.delete(id);
    let pending = this.#compiled.get(id);
    if (!pending) {
      pending = this.#compile(source);
      this.#compiled.set(id, pending);
      pending.catch(() => this.#compiled.delete(id));
    }
    return this.#toolsOf(await pending, id, name, path, options);
  }

  /**
   * A compiled component's tools, as loaded under `name` with `options`. (A
   * method of its own: the closures made here must not share a scope with a
   * `ComponentSource`, whose bytes they would keep alive.)
   */
  #toolsOf(compiled: CompiledComponent, id: string, name: string, path: string | undefined, options: WasmLoadOptions): LoadedComponentTools {
    const isolation = options.isolation ?? 'call';
    const handle: ComponentHandle = { ...compiled.handle, name };
    if (options.memoryMb !== undefined && !(Number.isInteger(options.memoryMb) && options.memoryMb > 0)) {
      throw new ToolhostError('INVALID_INPUT', 'memoryMb must be a positive integer');
    }
    const grant: ToolGrant = { ...options.grant, ...(options.memoryMb === undefined ? {} : { memoryMb: options.memoryMb }) };
    if (grant.egressAllow) parseEgressAllowlist(grant.egressAllow);
    const tools = compiled.tools.map((info) => new SandboxedTool(
      { ...toolSpec(info, name), grant, ...(options.defaultPolicy === undefined ? {} : { defaultPolicy: options.defaultPolicy }) },
      handle,
      () => this.#sandbox.pool,
      isolation,
      this.#limits,
      this.#schemaLimits,
    ));
    const result: LoadedComponentTools = { component: name, id, cache: compiled.cached.cache, tools };
    const offers = surfaceOfExports(compiled.cached.meta.exports);
    if (offers.prompts || offers.resources) {
      const spec = { ...SURFACE_TOOL_SPEC, name: `${SURFACE_TOOL_PREFIX}${name}`, grant, ...(options.defaultPolicy === undefined ? {} : { defaultPolicy: options.defaultPolicy }) };
      result.surface = { tool: new SandboxedTool(spec, handle, () => this.#sandbox.pool, isolation, this.#limits, this.#schemaLimits), ...offers };
    }
    if (path !== undefined) result.path = path;
    return result;
  }

  async #compile(source: ComponentSource | LazySource): Promise<CompiledComponent> {
    const what = source.path === undefined ? `component "${source.name}"` : `"${source.path}"`;
    // Nothing made below may hold `source`: its bytes (~12 MB for componentize-js) would live as long as the
    // component (a closure over it kept every loaded component's file in memory: 120 MB for 10 JS tools).
    const { id, name } = source;
    const cached = await this.#cache.prepare(id, source.bytes, what);
    // A file read while young (just built) was not remembered: once it settles, for the next start (background).
    if (cached.cache === 'miss' && source.path !== undefined && !isRemotePath(source.path)) void this.#cache.ids.rememberWhenSettled(source.path, { ref: false });
    return this.#compileCached(id, name, cached, what);
  }

  async #compileCached(id: string, name: string, cached: CachedComponent, what: string): Promise<CompiledComponent> {
    const { meta } = cached;
    if (worldOfExports(meta.exports) === undefined) {
      const found = meta.exports.filter((name) => name.includes(':')).join(', ') || 'nothing';
      throw new ToolhostError('COMPONENT_INVALID', `${what} does not export ${Object.values(TOOL_EXPORTS).reverse().join(' or ')} (it exports ${found}); build it against a tool-provider world in wit/`);
    }
    const unsupported = meta.imports.filter((name) => !SUPPORTED_HOST_IMPORTS.has(name));
    if (unsupported.length > 0) {
      throw new ToolhostError('COMPONENT_INVALID', `${what} imports interfaces toolhost does not provide: ${unsupported.join(', ')}`);
    }
    // A component's tables in all, within what a worker's heap can hold while they grow.
    const tableElements = Math.min(this.#options.tableElements ?? DEFAULT_TABLE_ELEMENTS, tableElementsForHeap(this.#options.maxHeapMb ?? 512));
    // Compiled modules no worker asked for in the idle-release time are forgotten (module-variants.ts).
    const variants = modulesPerCap(cached, what, tableElements, this.#cache, this.#variants, this.#options.idleReleaseMs ?? DEFAULT_IDLE_RELEASE_MS, this.#stored ??= new VariantCache(this.#cache));
    this.#digests.set(id, variantDigest(cached, tableElements));
    const handle: ComponentHandle = {
      id,
      name,
      moduleUrl: this.#glueUrl(cached),
      quarantined: () => this.#quarantined.has(id),
      ...variants,
      // With process containment the modules are compiled in the sandbox process: this process only caps and checks them.
      ...readiness(this.#sandbox.containment === 'process' ? variants.bytesFor : variants.modulesFor),
    };
    this.#handles.set(id, handle);
    try {
      return await this.#describeOnce(handle, cached, what);
    } catch (error) {
      this.#handles.delete(id);
      throw error;
    }
  }

  /**
   * The glue module to import for `cached`: the first loaded entry's with the same glue (by its sha256, checked
   * when each entry was read), so components whose glue is the same (one toolchain, one world, e.g. copies
   * that differ only in a custom section) share one imported module per worker instead of one each (~400 KB of
   * source and its compiled JS for componentize-js glue).
   */
  #glueUrl(cached: CachedComponent): string {
    const digest = cached.meta.sha256[GLUE_FILE];
    if (digest === undefined) return cached.moduleUrl;
    const known = this.#glueUrls.get(digest);
    if (known !== undefined) return known;
    this.#glueUrls.set(digest, cached.moduleUrl);
    return cached.moduleUrl;
  }

  async #describeOnce(handle: ComponentHandle, cached: CachedComponent, what: string): Promise<CompiledComponent> {
    const { meta } = cached;
    const schemaCheck = schemaCheckOf(this.#schemaLimits);
    let tools = meta.schemaCheck === schemaCheck ? meta.tools : undefined;
    if (tools) {
      // describe() ran on these very bytes before (the cache is keyed by their hash), so they compiled
      // then: compile on first use (or `warm()`), and `toolhost list` never pays for it.
      this.#cold.add(handle);
    } else {
      // Compile (or cap and check) the default variant now, so a broken module fails the load, not the first call.
      await handle.prepare(DEFAULT_POLICY_DEFAULTS.memoryMb);
      tools = await this.#describe(handle, what);
      await this.#cache.saveTools(cached, tools, schemaCheck).catch((error: unknown) => {
        this.#logger.warn({ err: (error as Error).message, component: handle.name }, 'could not cache describe() output');
      });
    }
    for (const info of tools) toolSpec(info, what);
    return { handle, cached, tools };
  }

  async #describe(handle: ComponentHandle, what: string): Promise<GuestToolInfo[]> {
    const timeoutMs = this.#options.describeTimeoutMs ?? DEFAULT_DESCRIBE_TIMEOUT_MS;
    // Guest code runs here too (its initialization, then describe()): under a
    // budget like any call, so a component that never finishes cannot hang a load.
    const budget = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // The clock starts when the worker is about to run the guest's code, not while the task waits for a
    // worker (busy with other calls) or one starts: only the guest's own time is charged to it.
    const startClock = (): void => {
      timer ??= setTimeout(() => budget.abort(new ToolhostError('COMPONENT_INVALID', `${what} did not instantiate and describe its tools within ${timeoutMs} ms; its worker was stopped`, {
        details: { reason: 'describe-timeout', timeoutMs },
      })), timeoutMs);
    };
    const outcome = await this.#sandbox.pool.run(
      // The worker also checks that each tool's schemas compile within the limits (worker/args-check.ts), under this budget.
      { kind: 'describe', componentId: handle.id, moduleUrl: handle.moduleUrl, memoryMb: DEFAULT_POLICY_DEFAULTS.memoryMb, schemaLimits: this.#schemaLimits },
      {
        // (A wall clock: the worker's describe does not publish a CPU clock to watch.)
        signal: budget.signal,
        onMessage: (message) => {
          if (message.type === 'guest-starting') startClock();
        },
        rpc: async (request) => {
          if (request.op === 'modules' && request.componentId === handle.id) return handle.modulesFor(request.memoryMb);
          throw new Error(`${request.op} is not available while a component describes itself`);
        },
      },
    ).catch((error: unknown) => {
      if (error instanceof ToolhostError && error.code !== 'COMPONENT_INVALID') {
        throw new ToolhostError('COMPONENT_INVALID', `${what} failed while describing its tools: ${error.message}`, { details: { reason: 'describe', cause: error.toData() } });
      }
      throw error;
    }).finally(() => clearTimeout(timer));
    if (!outcome.ok && outcome.refused === true) {
      // A schema that does not compile (INVALID_INPUT) or is past a cost limit (COMPONENT_INVALID), as registration said it before.
      throw ToolhostError.fromData({ ...outcome.error, message: `${what}: ${outcome.error.message}` });
    }
    if (!outcome.ok) {
      throw new ToolhostError('COMPONENT_INVALID', `${what} failed while describing its tools: ${outcome.error.message}`);
    }
    if (!('tools' in outcome)) throw new ToolhostError('INTERNAL', 'the worker answered describe with a call result');
    if (outcome.tools.length === 0) throw new ToolhostError('COMPONENT_INVALID', `${what} describes no tools`);
    return outcome.tools;
  }

  /** Compile what was loaded without compiling (its description came from the cache), so first calls do not wait for it. */
  async warm(): Promise<void> {
    const cold = [...this.#cold];
    this.#cold.clear();
    await Promise.all(cold.map((handle) => handle.prepare(DEFAULT_POLICY_DEFAULTS.memoryMb)));
    // The sandbox process compiles one component of each transpiled entry ahead: each ask carries the
    // component's bytes over IPC (12 MB for componentize-js), and 250 copies asked at once held 3 GB in this
    // process. The others' first calls bring their bytes (V8 then finds the compiled module it has).
    const asked = new Set<string>();
    for (const handle of cold) {
      const digest = this.#digests.get(handle.id);
      if (digest !== undefined && asked.has(digest)) continue;
      if (digest !== undefined) asked.add(digest);
      this.#sandbox.warm(handle.id, DEFAULT_POLICY_DEFAULTS.memoryMb);
    }
  }

  async close(): Promise<void> {
    if (this.#ownsSandbox) await this.#sandbox.close();
  }
}

function parseSchema(text: string, tool: string, field: string, what: string): JsonSchema {
  try {
    const schema = JSON.parse(text) as unknown;
    if (typeof schema === 'boolean' || (typeof schema === 'object' && schema !== null && !Array.isArray(schema))) return schema as JsonSchema;
  } catch {
    // reported below
  }
  throw new ToolhostError('COMPONENT_INVALID', `${what}: tool "${tool}" has an ${field} that is not a JSON Schema object`);
}

function toolSpec(info: GuestToolInfo, what: string) {
  if (typeof info.name !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/.test(info.name)) {
    throw new ToolhostError('COMPONENT_INVALID', `${what}: tool name ${JSON.stringify(info.name)} must match [A-Za-z0-9_][A-Za-z0-9_-]{0,63}`);
  }
  const spec = {
    guestName: info.name,
    description: info.description,
    inputSchema: parseSchema(info.inputSchema, info.name, 'input-schema', what),
    inputSchemaText: info.inputSchema,
    idempotent: info.idempotent,
    streaming: info.streaming,
  };
  const metadata = {
    ...(info.title === undefined ? {} : { title: info.title }),
    ...(info.annotations === undefined ? {} : { annotations: info.annotations }),
    ...(info.icons === undefined ? {} : { icons: info.icons }),
  };
  return info.outputSchema === undefined ? { ...spec, ...metadata } : { ...spec, ...metadata, outputSchema: parseSchema(info.outputSchema, info.name, 'output-schema', what) };
}

/** `prepare` as given, and `prepared`, which says which caps it has succeeded for. */
function readiness(prepare: (memoryMb: number) => Promise<unknown>): Pick<ComponentHandle, 'prepare' | 'prepared'> {
  const ready = new Set<number>();
  return {
    prepare: (memoryMb) => {
      const preparing = prepare(memoryMb);
      preparing.then(() => ready.add(memoryMb), () => {});
      return preparing;
    },
    prepared: (memoryMb) => ready.has(memoryMb),
  };
}
