/**
 * A cache entry's core modules as the sandbox runs them (module-variants.ts:
 * memories and tables capped, snapshot exports and the instance-state verdict
 * added, the engine split from its image), kept on disk beside the entry, one
 * variant per memory cap, so a later load reads them back instead of making
 * them again; and modules compiled from them kept by the sha256 of their
 * bytes (one table per loader), so an engine many tools carry is read and
 * compiled once whatever tool asks for it (issue 37, D1 and D3).
 *
 * Why: making a componentize-js tool's variant copied its 12 MB module three
 * times and hashed ~30 MB (~100-250 ms of the main thread a distinct tool; 200
 * tools took most of a minute to warm), although the engine is the same bytes
 * in every tool. Read back, a variant costs its small files and the tool's
 * image (~2.9 MB, chunks hashed); its engine's recipe names the engine's
 * sha256, which the compiled-module table already knows after the first tool.
 *
 * What it guarantees: bytes compiled from a stored variant are the bytes its
 * `meta.json` names (a whole file checked against its sha256 through the ids
 * memo, a chunked one through its recipe's hash and every chunk's); a module
 * taken from the compiled table was compiled by this loader from checked
 * bytes of that sha256. A stored variant is keyed by the entry (the component's
 * content hash), the cap, the table cap, the split setting, and a digest of
 * the source of every module that shapes it (memory-cap, snapshot-exports,
 * instance-state-model, table-writes, engine-split, wasm-binary): a change to
 * any of them (a fix to the instance-state model) makes new variants, and the
 * writer removes an entry's variants of other digests. A variant that cannot
 * be read or does not match is made again from the entry, never used.
 * What it does not: it trusts the cache directory as the entry does (a writer
 * of the cache can write a meta.json; the config keeps it out of worktrees).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHUNKED_MIN_FILE, parseRecipe } from '../../base/chunk-store.js';
import type { CoreModuleBytes } from '../process/messages.js';
import { CODE_BYTES_PER_MODULE_BYTE, CompiledByHash, compileCoreModule, type CompiledModules } from './core-compile.js';
import { IMAGE_SUFFIX } from './engine-split.js';
import { CHUNKS_SUFFIX, type CachedComponent, type ComponentCache } from './component-cache.js';

/** The modules whose code decides a variant's bytes: their source is part of the variant's key. */
const PIPELINE = ['memory-cap', 'snapshot-exports', 'instance-state-model', 'table-writes', 'engine-split', 'wasm-binary', 'module-variants'];
const FORMAT = 1;

/** The digest of the pipeline's source as this process runs it (read once: a few small files). */
const pipelineDigest = ((): string => {
  const here = fileURLToPath(import.meta.url);
  const ext = extname(here);
  const hash = createHash('sha256').update(`toolhost-variants-${FORMAT}`);
  for (const name of PIPELINE) hash.update(readFileSync(join(here, '..', `${name}${ext}`)));
  return hash.digest('hex').slice(0, 16);
})();

const VARIANTS_DIR = 'variants';

/** One module of a stored variant. */
export interface StoredModule {
  name: string;
  sha256: string;
  size: number;
  /** The sha256 of its recipe file, when it is kept as chunks. */
  recipe?: string;
}

interface VariantMeta {
  format: typeof FORMAT;
  pipeline: string;
  modules: StoredModule[];
}

/** A variant read back: what it holds, a reader of each module's checked bytes, and where modules compiled from them are kept. */
export interface StoredVariant {
  modules: StoredModule[];
  load(module: StoredModule): Promise<Uint8Array>;
  compiled: CompiledByHash;
}

const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const safeName = (name: string): boolean => name.length > 0 && !name.includes('/') && !name.includes('\\') && name !== '.' && name !== '..';

function parseMeta(text: string): VariantMeta | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const meta = value as Partial<VariantMeta>;
  if (meta.format !== FORMAT || meta.pipeline !== pipelineDigest || !Array.isArray(meta.modules)) return undefined;
  for (const module of meta.modules) {
    if (typeof module !== 'object' || module === null || typeof module.name !== 'string' || !safeName(module.name)) return undefined;
    if (typeof module.sha256 !== 'string' || !Number.isSafeInteger(module.size) || (module.recipe !== undefined && typeof module.recipe !== 'string')) return undefined;
  }
  return meta as VariantMeta;
}

export class VariantCache {
  readonly #cache: Pick<ComponentCache, 'chunks' | 'ids'>;
  /** Modules compiled from this cache's stored variants, by hash: an engine many tools carry is compiled once. */
  readonly #compiled = new CompiledByHash();

  constructor(cache: Pick<ComponentCache, 'chunks' | 'ids'>) {
    this.#cache = cache;
  }

  /** Where the variant `key` of `entry` is kept. */
  #dir(entry: CachedComponent, key: string): string {
    return join(entry.dir, VARIANTS_DIR, pipelineDigest, key);
  }

  /** The stored variant `key` of `entry`, or undefined when there is none this process can use. */
  async read(entry: CachedComponent, key: string): Promise<StoredVariant | undefined> {
    const dir = this.#dir(entry, key);
    const meta = parseMeta(await readFile(join(dir, 'meta.json'), 'utf8').catch(() => ''));
    if (meta === undefined) return undefined;
    return { modules: meta.modules, load: (module) => this.#load(dir, module), compiled: this.#compiled };
  }

  /** One module's bytes, checked; throws when they do not match (the caller makes the variant again). */
  async #load(dir: string, module: StoredModule): Promise<Uint8Array> {
    const { ids, chunks } = this.#cache;
    if (module.recipe === undefined) {
      const { bytes, id } = await ids.read(join(dir, module.name));
      if (id !== module.sha256) throw new Error(`stored ${module.name} does not match its hash`);
      return bytes;
    }
    const { bytes: text, id } = await ids.read(join(dir, `${module.name}${CHUNKS_SUFFIX}`));
    const recipe = id === module.recipe ? parseRecipe(Buffer.from(text).toString('utf8')) : undefined;
    if (recipe === undefined || recipe.sha256 !== module.sha256 || recipe.size !== module.size) throw new Error(`stored ${module.name}'s recipe does not match its hash`);
    const bytes = await chunks.get(recipe);
    if (bytes === undefined) throw new Error(`stored ${module.name}'s chunks are missing or changed`);
    return bytes;
  }

  /**
   * Keep `modules` as the variant `key` of `entry` (written aside and renamed into place: a reader sees all
   * of it or none), and remove the entry's variants made by another pipeline. Best effort: a failure leaves
   * no variant, and the next load makes it again.
   */
  async write(entry: CachedComponent, key: string, modules: CoreModuleBytes): Promise<void> {
    if (!modules.every(([name]) => safeName(name))) return;
    const dir = this.#dir(entry, key);
    const temporary = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(temporary, { recursive: true });
    const written: Array<[string, string]> = [];
    try {
      const meta: VariantMeta = { format: FORMAT, pipeline: pipelineDigest, modules: [] };
      for (const [name, bytes] of modules) {
        let stored: StoredModule;
        if (bytes.byteLength >= CHUNKED_MIN_FILE) {
          // The recipe carries the file's sha256 (the chunk store hashed it whole): not hashed again here.
          const recipe = await this.#cache.chunks.put(bytes);
          const text = JSON.stringify(recipe);
          stored = { name, sha256: recipe.sha256, size: bytes.byteLength, recipe: sha256(text) };
          await writeFile(join(temporary, `${name}${CHUNKS_SUFFIX}`), text);
          written.push([`${name}${CHUNKS_SUFFIX}`, stored.recipe!]);
        } else {
          stored = { name, sha256: sha256(bytes), size: bytes.byteLength };
          await writeFile(join(temporary, name), bytes);
          written.push([name, stored.sha256]);
        }
        meta.modules.push(stored);
      }
      await writeFile(join(temporary, 'meta.json'), JSON.stringify(meta));
      try {
        await rename(temporary, dir);
      } catch {
        // Another process kept the same variant first: theirs is as good.
        return;
      }
      // The next process reads these files' ids back instead of hashing them again (component-ids.ts).
      await Promise.all(written.map(([file, id]) => this.#cache.ids.wrote(join(dir, file), id)));
      await removeOtherPipelines(entry.dir);
    } finally {
      await rm(temporary, { recursive: true, force: true });
    }
  }

}

/** Remove the variants under the cache entry `entryDir` that another pipeline made; returns how many. */
async function removeOtherPipelines(entryDir: string): Promise<number> {
  const root = join(entryDir, VARIANTS_DIR);
  let removed = 0;
  for (const name of await readdir(root).catch(() => [] as string[])) {
    if (name === pipelineDigest || name.includes('.tmp-')) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/**
 * Every entry's variants made by another pipeline, under `formatDir` (a cache's entries): `toolhost gc`'s sweep,
 * for entries no load rewrites (a load removes its own entry's). Safe beside a running host: a variant removed
 * under a reader is made again from its entry (`read` finds nothing, or `#load` throws and the caller remakes it).
 */
export async function removeStaleVariants(formatDir: string): Promise<number> {
  let removed = 0;
  for (const id of await readdir(formatDir).catch(() => [] as string[])) removed += await removeOtherPipelines(join(formatDir, id));
  return removed;
}

/**
 * Compiles a stored variant's modules, each by the sha256 of its bytes: a module this loader compiled from the
 * same bytes (the engine every componentize-js tool carries) is taken again without reading its bytes.
 */
export async function compileStoredModules(stored: StoredVariant, what: string): Promise<CompiledModules> {
  const compiledModules: CompiledModules = await Promise.all(stored.modules.map(async (module): Promise<[string, WebAssembly.Module]> => [
    module.name,
    await stored.compiled.get(module.sha256, () => stored.load(module), (bytes) => compileCoreModule(module.name, bytes, what)),
  ]));
  compiledModules.codeBytes = stored.modules.reduce((sum, module) => sum + module.size, 0) * CODE_BYTES_PER_MODULE_BYTE;
  compiledModules.imageBytes = stored.modules.reduce((sum, module) => sum + (module.name.endsWith(IMAGE_SUFFIX) ? module.size : 0), 0);
  return compiledModules;
}
