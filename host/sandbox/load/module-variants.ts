/**
 * A loaded component's core modules as the sandbox runs them, one variant per
 * memory cap: read back from the transpile cache (hash checked again), memories
 * and tables capped (./memory-cap.ts), snapshot exports and the instance-state
 * verdict added (./snapshot-exports.ts), compiled here or sent as bytes to the
 * sandbox process. Part of the loading pipeline (./loader.ts). A variant made
 * once is kept on disk beside its entry (./variant-cache.ts) and read back by
 * later loads and processes.
 */
import { ToolhostError } from '../../base/errors.js';
import { GLUE_FILE, type CachedComponent, type ComponentCache } from './component-cache.js';
import { compileCoreModules, type CompiledModules } from './core-compile.js';
import { capModuleMemory, coreInstantiations, definedMemories, definedTables, pagesForMb, planMemoryCaps } from './memory-cap.js';
import type { CoreModuleBytes } from '../process/messages.js';
import type { ComponentHandle } from '../sandboxed-tool.js';
import { exposeSnapshotState } from './snapshot-exports.js';
import { engineSplitEnabled, engineSplitSetting, IMAGE_SUFFIX, splitVerified, type EngineSplitSetting } from './engine-split.js';
import { compileStoredModules, type StoredVariant, type VariantCache } from './variant-cache.js';
import { DEFAULT_POLICY_DEFAULTS } from '../../policy/execution-policy.js';

/**
 * Variants made, shared by every component whose transpiled entry has the same
 * core modules and glue (by their sha256, checked when each entry was read):
 * components that differ only in what jco's output does not carry (a custom
 * section, a name) are capped and compiled once, not once each (issue 28:
 * 250 copies of a componentize-js tool took ~250 ms each to warm).
 */
export type SharedVariants = Map<string, Promise<unknown>>;

/** The name of the split setting a variant was made under, in its stored key and its digest (the default keeps the name it had). */
const STORED_SPLIT: Record<EngineSplitSetting, string> = { off: 'whole', large: 'split', always: 'split-all' };

/** What a component's variants are made from, by digest: entries whose core modules and glue are the same share them. */
export function variantDigest(cached: CachedComponent, tableElements: number): string {
  const { sha256 } = cached.meta;
  return `${STORED_SPLIT[engineSplitSetting()]}:${tableElements}:${[...cached.meta.coreModules.map((name) => sha256[name]), sha256[GLUE_FILE]].join(',')}`;
}

/** How long capped bytes for the sandbox process are kept after they are made (ms). */
const BYTES_KEPT_MS = 30_000;

/**
 * Each shared table's release timers, by variant key (see `releaseMs` of {@link modulesPerCap}): a variant
 * is forgotten once no worker has asked for it for that long.
 */
const releaseTimers = new WeakMap<SharedVariants, Map<string, NodeJS.Timeout>>();

/**
 * Compiled variants for caps other than the load's (`DEFAULT_POLICY_DEFAULTS.memoryMb`, compiled at load and
 * kept) this process keeps per component, the most recently asked for: a worker holds its own reference
 * (counted in its memory budget, worker/memory-budget.ts) until its budget drops it, so the main thread's copy
 * only saves a compile for the next worker. Caps come in size classes (policy/memory-classes.ts).
 */
const KEPT_CALLER_VARIANTS = 2;

/**
 * The component's core modules with their memories and tables capped, once
 * per (component, cap) and kept, so no call compiles: compiled here
 * (`modulesFor`, thread containment), or as checked bytes (`bytesFor`) that
 * the sandbox process compiles (process containment). The memory cap is split
 * over every memory the component's core instances define (see
 * `planMemoryCaps`), so it bounds the component's total.
 */
export function modulesPerCap(cached: CachedComponent, what: string, tableElements: number, cache: Pick<ComponentCache, 'readEntryFile'>, shared: SharedVariants = new Map(), releaseMs = 0, stored?: VariantCache): Pick<ComponentHandle, 'modulesFor' | 'bytesFor'> {
  const digest = variantDigest(cached, tableElements);
  // The split setting is part of the key: a variant stored under one (a small module left whole by default) is never
  // read under another (`always` splits it).
  const storedKey = (memoryMb: number): string => `${memoryMb}-${tableElements}-${STORED_SPLIT[engineSplitSetting()]}`;
  /** Kept for later loads once it compiled (or, for bytes, once made). */
  const keep = (memoryMb: number, modules: CoreModuleBytes): void => {
    stored?.write(cached, storedKey(memoryMb), modules).catch(() => {});
  };
  /**
   * What `fromStored` makes of the stored variant, else what `fromMade` makes of the variant made from the
   * entry (then kept). A ToolhostError from the stored bytes stands (the same bytes made again would fail
   * alike); anything else (a file changed, a chunk gone) makes the variant again.
   */
  const storedOr = async <T>(memoryMb: number, fromStored: (kept: StoredVariant) => Promise<T>, fromMade: (modules: CoreModuleBytes) => Promise<T>): Promise<T> => {
    const kept = await stored?.read(cached, storedKey(memoryMb));
    if (kept !== undefined) {
      try {
        return await fromStored(kept);
      } catch (error) {
        if (error instanceof ToolhostError) throw error;
      }
    }
    const modules = await capped(memoryMb);
    const made = await fromMade(modules);
    keep(memoryMb, modules);
    return made;
  };
  const compiledFor = (memoryMb: number): Promise<CompiledModules> => storedOr(memoryMb, (kept) => compileStoredModules(kept, what), (modules) => compileCoreModules(modules, what));
  const bytesFor = (memoryMb: number): Promise<CoreModuleBytes> => storedOr(
    memoryMb,
    (kept) => Promise.all(kept.modules.map(async (module): Promise<[string, Uint8Array]> => [module.name, await kept.load(module)])),
    async (modules) => modules,
  );
  const capped = async (memoryMb: number): Promise<CoreModuleBytes> => {
    // The bytes compiled are the bytes hashed: checked again here, not only when the entry was read
    // (by the memo when the file's stat did not change while it was read, see component-ids.ts; a chunked
    // module chunk by chunk).
    const verified = (file: string): Promise<Buffer> => cache.readEntryFile(cached, file, what);
    // Read for each cap, not kept: a componentize-js component's files are ~12 MB, held as long as the
    // component was loaded (issue 28); a cap is made once per process (or sandbox process) anyway.
    const files = await Promise.all(cached.meta.coreModules.map(async (name): Promise<[string, Uint8Array]> => [name, new Uint8Array(await verified(name))]));
    const instances = coreInstantiations((await verified('component.mjs')).toString('utf8'));
    const caps = planMemoryCaps(files.map(([name, bytes]) => ({ name, memories: definedMemories(bytes), instances: instances.get(name) ?? 1 })), pagesForMb(memoryMb));
    const tableCaps = planMemoryCaps(files.map(([name, bytes]) => ({ name, memories: definedTables(bytes), instances: instances.get(name) ?? 1 })), tableElements, tableElements);
    const exposedModules = files.map(([name, bytes]): [string, Uint8Array] => {
      const maxPages = caps.get(name) ?? 0;
      const maxTable = tableCaps.get(name) ?? 0;
      const result = capModuleMemory(bytes, maxPages, maxTable);
      if (result.initialTableElements > maxTable) {
        throw new ToolhostError('MEMORY_LIMIT_EXCEEDED', `${what} needs ${result.initialTableElements} table elements at start, over its share (${maxTable}) of the cap of ${tableElements}`, {
          details: { tableElements, initialTableElements: result.initialTableElements },
        });
      }
      if (result.initialPages > maxPages) {
        throw new ToolhostError('MEMORY_LIMIT_EXCEEDED', `${what} needs ${Math.ceil((result.initialPages * 65536) / 1048576)} MiB of memory at start, over the cap of ${memoryMb} MiB`, {
          details: { capMb: memoryMb, initialBytes: result.initialPages * 65536 },
        });
      }
      // Snapshot exports: a used instance can be reset instead of replaced (worker/instance-snapshot.ts).
      return [name, exposeSnapshotState(result.bytes)];
    });
    // One compiled engine, many images (./engine-split.ts): the worker applies the image at instantiation.
    const out: CoreModuleBytes = [];
    for (const [name, exposed] of exposedModules) {
      const split = engineSplitEnabled() ? await splitVerified(exposed) : undefined;
      if (split === undefined) out.push([name, exposed]);
      else out.push([name, split.engine], [`${name}${IMAGE_SUFFIX}`, split.image]);
    }
    return out;
  };
  /** This component's compiled caller variants' keys, least recently asked for first. */
  const callerVariants: string[] = [];
  const keepRecent = (key: string): void => {
    const at = callerVariants.indexOf(key);
    if (at >= 0) callerVariants.splice(at, 1);
    callerVariants.push(key);
    while (callerVariants.length > KEPT_CALLER_VARIANTS) {
      const dropped = callerVariants.shift() as string;
      shared.delete(dropped);
      // Its release timer holds it too: gone with it.
      const timers = releaseTimers.get(shared);
      clearTimeout(timers?.get(dropped));
      timers?.delete(dropped);
    }
  };
  /**
   * Compiled modules are forgotten `releaseMs` after a worker last asked for them (issue 37, item 2): a worker
   * asks once, when it first runs the component or runs it again after its memory budget dropped it
   * (worker/memory-budget.ts, idle release), so a tool idle that long is held by no worker and, once this
   * table forgets it, by nothing: its images and compiled code go, and the next ask makes them again from
   * the transpile cache (read back from its chunks, hash checked; the shared engine is still compiled,
   * ./engine-split.ts). 0 keeps them while the component is loaded.
   */
  const releaseLater = (key: string, variant: Promise<unknown>): void => {
    if (releaseMs <= 0) return;
    let timers = releaseTimers.get(shared);
    if (timers === undefined) releaseTimers.set(shared, timers = new Map());
    const table = timers;
    // Counted from when the variant is ready (making one may take longer than the release time).
    variant.then(() => {
      clearTimeout(table.get(key));
      table.set(key, setTimeout(() => {
        table.delete(key);
        if (shared.get(key) === variant) shared.delete(key);
      }, releaseMs).unref());
    }, () => {});
  };
  const oncePerCap = <T>(kind: string, make: (memoryMb: number) => Promise<T>, keepMs?: number): ((memoryMb: number) => Promise<T>) => {
    return (memoryMb) => {
      const key = `${kind}:${memoryMb}:${digest}`;
      if (kind === 'modules' && memoryMb !== DEFAULT_POLICY_DEFAULTS.memoryMb) keepRecent(key);
      const variant = askedFor<T>(key, make, memoryMb, keepMs);
      if (kind === 'modules') releaseLater(key, variant);
      return variant;
    };
  };
  const askedFor = <T>(key: string, make: (memoryMb: number) => Promise<T>, memoryMb: number, keepMs?: number): Promise<T> => {
    const known = shared.get(key) as Promise<T> | undefined;
    if (known) return known;
    const made = make(memoryMb);
    made.catch(() => {
      if (shared.get(key) === made) shared.delete(key);
    });
    shared.set(key, made);
    // Bytes are kept a while (the load's check, then the sandbox process's compile ask for them), not
    // for the component's life: a sandbox process that restarts has them made again.
    if (keepMs !== undefined) {
      made.then(() => setTimeout(() => {
        if (shared.get(key) === made) shared.delete(key);
      }, keepMs).unref(), () => {});
    }
    return made;
  };
  return {
    bytesFor: oncePerCap('bytes', bytesFor, BYTES_KEPT_MS),
    modulesFor: oncePerCap('modules', compiledFor),
  };
}
