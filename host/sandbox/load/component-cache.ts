/**
 * The on-disk cache of transpiled components, keyed by content hash (and by
 * the transpiler's version): a component is transpiled once, ever, on a
 * machine; later loads and later processes read the files back.
 *
 * Layout: `<dir>/<format>/<sha256>/` holds jco's instantiation-mode glue
 * (`component.mjs`), the core modules (`component.core*.wasm`) and
 * `meta.json`, written last, so a directory without it is incomplete.
 * Entries are built in a temporary directory and renamed into place, so
 * concurrent processes never see half an entry. Next to the entries,
 * `<dir>/ids-v1/` remembers component files' ids by their stat
 * (component-ids.ts): not part of an entry, so not of its format.
 *
 * A core module of `CHUNKED_MIN_FILE` or more is kept as content-addressed
 * chunks in `<dir>/chunks-v1/` (base/chunk-store.ts), shared with the
 * component store: the entry holds its recipe (`<file>.chunks`) instead of the
 * file, so the engine every componentize-js tool carries is on disk once
 * (issue 37). `meta.chunked` names those files and their recipes' sha256.
 *
 * `meta.json` records the sha256 of every file of the entry, and an entry is
 * used only when every file still matches (checked before anything is
 * compiled or imported): a rewritten `component.mjs` is never run, the entry
 * is transpiled again instead. The cache directory must not be writable by a
 * guest (the config refuses one inside a tool's worktree).
 */
import type { SchemaLimits } from '../../core/schema-limits.js';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { ToolhostError } from '../../base/errors.js';
import { reportProgress } from '../../base/progress.js';
import { patchGlue } from './glue-patch.js';
import type { GuestToolInfo } from '../protocol.js';
import { CHUNKS_DIR, defaultCacheDir } from './cache-location.js';
import { ComponentIds } from './component-ids.js';
import { CHUNKED_MIN_FILE, ChunkStore, parseRecipe } from '../../base/chunk-store.js';
/** The recipe of a chunked file of an entry is kept as `<file><CHUNKS_SUFFIX>`. */
export const CHUNKS_SUFFIX = '.chunks';

/** How a cache entry names the schema limits its tools were checked under (`CacheMeta.schemaCheck`). */
export function schemaCheckOf(limits: SchemaLimits): string {
  return JSON.stringify(limits);
}

/**
 * 2: glue rewritten by glue-patch.ts (no JSPI probe that throws on every instance).
 * 3: meta.json records each file's sha256.
 * 5: the glue also exposes its state digest for snapshot-and-restore (4 was that alone, on a branch).
 * 6: jco's _debugLog reads JCO_DEBUG once per module, not on every call.
 * 7: the glue also exposes its resource tables, so a reset can drop a call's stdio handles.
 * 8: the glue also counts the resource handles an instance holds (the handles_per_call cap).
 * 9: 7 and 8 together (they were made on branches sharing the test cache).
 * 10: the state digest is a flat list compared item by item, not a JSON string.
 * 11: core modules of 1 MiB or more as chunk recipes (`meta.chunked`), the chunks shared (issue 37).
 */
const CACHE_FORMAT = 11;
export const GLUE_FILE = 'component.mjs';

function transpilerVersion(): string {
  const entry = fileURLToPath(import.meta.resolve('@bytecodealliance/jco-transpile'));
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

export { defaultCacheDir } from './cache-location.js';

export interface CacheMeta {
  format: number;
  transpiler: string;
  /** Core module file names, in the order jco's glue asks for them. */
  coreModules: string[];
  /** Interfaces the component imports (unversioned, as the glue keys them). */
  imports: string[];
  /** Interfaces and functions the component exports. */
  exports: string[];
  /** The component's `describe()` output, once a worker has run it. */
  tools?: GuestToolInfo[];
  /**
   * The schema limits (as JSON) the worker checked `tools`' schemas under. A load under other limits describes the
   * component again, so a limit tightened since (or an entry from before the check moved to the worker) is met at
   * load, not only at the first call.
   */
  schemaCheck?: string;
  /** The sha256 (hex) of every file of the entry, by name (of a chunked file: of its bytes, as assembled). */
  sha256: Record<string, string>;
  /** Files kept as chunk recipes: the sha256 of each recipe file (`<file>.chunks`), by the file's name. */
  chunked?: Record<string, string>;
}

export interface CachedComponent {
  dir: string;
  /** The glue module's path (verified against its hash when the entry was read). */
  glueFile: string;
  /** file: URL of the glue module. */
  moduleUrl: string;
  meta: CacheMeta;
  /** `hit`: read from disk; `miss`: transpiled by this call. */
  cache: 'hit' | 'miss';
}

export class ComponentCache {
  readonly #root: string;
  readonly #transpiler = transpilerVersion();
  #transpiles = 0;
  /** Component ids remembered by file stat, next to the entries (see component-ids.ts). */
  readonly ids: ComponentIds;
  /** The chunks large core modules are kept as (shared with the store when it lies in the cache). */
  readonly chunks: ChunkStore;

  constructor(dir: string = defaultCacheDir()) {
    this.#root = dir;
    this.ids = new ComponentIds(dir);
    this.chunks = new ChunkStore(join(dir, CHUNKS_DIR));
  }

  get root(): string {
    return this.#root;
  }

  /** Transpilations this cache object performed (a warm cache performs none). */
  get transpiles(): number {
    return this.#transpiles;
  }

  /** The directory this build's entries live in (`v<format>-jco-transpile-<version>`); other ones are stale. */
  get formatDir(): string {
    return join(this.#root, `v${CACHE_FORMAT}-jco-transpile-${this.#transpiler}`);
  }

  #entryDir(id: string): string {
    return join(this.formatDir, id);
  }

  /** The cached entry for `id`, transpiling the component's bytes (`source`, or what it reads) first when there is none. */
  async prepare(id: string, source: Uint8Array | (() => Promise<Uint8Array>), what: string): Promise<CachedComponent> {
    const dir = this.#entryDir(id);
    const existing = await this.#read(dir);
    if (existing === 'tampered') {
      // Not ours any more: move it aside (kept for inspection) and build it again.
      await rename(dir, `${dir}.tampered-${process.pid}-${randomBytes(4).toString('hex')}`).catch(() => rm(dir, { recursive: true, force: true }));
    } else if (existing) {
      return { dir, glueFile: join(dir, GLUE_FILE), moduleUrl: pathToFileURL(join(dir, GLUE_FILE)).href, meta: existing, cache: 'hit' };
    }

    let files: Record<string, Uint8Array>;
    let imports: string[];
    let exports: Array<[string, string]>;
    // A first load transpiles for seconds (componentize-js: ~12 MB): said on the progress channel (base/progress.ts).
    reportProgress({ kind: 'stage', task: what, stage: 'transpiling (first load; cached after)' });
    try {
      this.#transpiles += 1;
      // jco-transpile is loaded only on a miss: a warm start never pays for it.
      const { transpileBytes } = await import('@bytecodealliance/jco-transpile');
      // The component's bytes are read only now, on a miss, when they were not given (see SandboxLoader.load).
      const bytes = typeof source === 'function' ? await source() : source;
      ({ files, imports, exports } = await transpileBytes(bytes, {
        name: 'component',
        instantiation: 'sync',
        emitTypescriptDeclarations: false,
        validLiftingOptimization: false,
      }));
    } catch (error) {
      reportProgress({ kind: 'end', task: what, ok: false });
      const message = (error instanceof Error ? error.message : String(error)).split('\n').filter(Boolean).slice(0, 4).join(': ');
      throw new ToolhostError('COMPONENT_INVALID', `${what} is not a valid component: ${message}`);
    }
    reportProgress({ kind: 'end', task: what, ok: true });
    const coreModules = Object.keys(files).filter((name) => name.endsWith('.wasm')).sort(coreModuleOrder);
    const meta: CacheMeta = {
      format: CACHE_FORMAT,
      transpiler: this.#transpiler,
      coreModules,
      imports,
      exports: exports.map(([name]) => name),
      sha256: {},
    };
    const temporary = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(temporary, { recursive: true });
    try {
      for (const [name, content] of Object.entries(files)) {
        if (name.includes('/') || name.includes('..')) continue;
        // `.mjs`: the cache directory has no package.json to say `.js` is ESM.
        const [file, bytes] = name === 'component.js' ? [GLUE_FILE, Buffer.from(patchGlue(Buffer.from(content).toString('utf8')).source)] : [name, content];
        if (file !== GLUE_FILE && !coreModules.includes(file)) continue;
        meta.sha256[file] = sha256(bytes);
        if (file !== GLUE_FILE && bytes.length >= CHUNKED_MIN_FILE) {
          const recipe = Buffer.from(JSON.stringify(await this.chunks.put(bytes)));
          (meta.chunked ??= {})[file] = sha256(recipe);
          await writeFile(join(temporary, `${file}${CHUNKS_SUFFIX}`), recipe);
        } else {
          await writeFile(join(temporary, file), bytes);
        }
      }
      await writeFile(join(temporary, 'meta.json'), JSON.stringify(meta, null, 2));
      try {
        await rename(temporary, dir);
        // The next process reads these files' ids back instead of hashing them again (component-ids.ts: `wrote`).
        await Promise.all(Object.entries(meta.sha256).map(([file, id]) => {
          const recipe = meta.chunked?.[file];
          return recipe === undefined ? this.ids.wrote(join(dir, file), id) : this.ids.wrote(join(dir, `${file}${CHUNKS_SUFFIX}`), recipe);
        }));
      } catch (error) {
        // Another process finished the same entry first: use it.
        const other = await this.#read(dir);
        if (!other || other === 'tampered') throw error;
      }
    } finally {
      await rm(temporary, { recursive: true, force: true });
    }
    return { dir, glueFile: join(dir, GLUE_FILE), moduleUrl: pathToFileURL(join(dir, GLUE_FILE)).href, meta, cache: 'miss' };
  }

  /**
   * Whether the cache holds an entry for `id` with its `describe()` output, read from `meta.json`
   * alone (its files are verified when the entry is used, not here): what a warm-up can skip.
   */
  async hasDescribed(id: string): Promise<boolean> {
    return (await this.describedTools(id)) !== undefined;
  }

  /** The `describe()` output cached for `id`, read from `meta.json` alone (unverified, like `hasDescribed`). */
  async describedTools(id: string): Promise<GuestToolInfo[] | undefined> {
    try {
      const meta = JSON.parse(await readFile(join(this.#entryDir(id), 'meta.json'), 'utf8')) as Partial<CacheMeta>;
      return meta.format === CACHE_FORMAT && meta.transpiler === this.#transpiler && Array.isArray(meta.tools) ? meta.tools : undefined;
    } catch {
      return undefined;
    }
  }

  /** Remember a component's `describe()` output next to its glue, with the schema limits it was checked under (`schemaCheckOf`). */
  async saveTools(entry: CachedComponent, tools: GuestToolInfo[], schemaCheck: string): Promise<void> {
    entry.meta.tools = tools;
    entry.meta.schemaCheck = schemaCheck;
    const temporary = join(entry.dir, `meta.json.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    await writeFile(temporary, JSON.stringify(entry.meta, null, 2));
    await rename(temporary, join(entry.dir, 'meta.json'));
  }

  /** The entry's meta when every file matches its hash; `tampered` when one does not; undefined when there is no usable entry. */
  async #read(dir: string): Promise<CacheMeta | 'tampered' | undefined> {
    let meta: CacheMeta;
    try {
      meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as CacheMeta;
    } catch {
      return undefined;
    }
    if (meta.format !== CACHE_FORMAT || meta.transpiler !== this.#transpiler) return undefined;
    const files = [GLUE_FILE, ...(Array.isArray(meta.coreModules) ? meta.coreModules : [])];
    if (typeof meta.sha256 !== 'object' || meta.sha256 === null) return 'tampered';
    if (meta.chunked !== undefined && (typeof meta.chunked !== 'object' || meta.chunked === null)) return 'tampered';
    for (const file of files) {
      if (file.includes('/') || file.includes('..')) return 'tampered';
      const recipe = meta.chunked?.[file];
      try {
        // The file's hash by its stat when the memo knows it: a file written since has another stat. A chunked
        // file's recipe is checked here; its chunks are hashed when they are read (readEntryFile).
        if (recipe === undefined ? (await this.ids.hashOf(join(dir, file))) !== meta.sha256[file] : (await this.ids.hashOf(join(dir, `${file}${CHUNKS_SUFFIX}`))) !== recipe) return 'tampered';
      } catch {
        return 'tampered';
      }
    }
    return meta;
  }

  /**
   * One file of an entry, checked against the hash its `meta.json` records (by the ids memo for a whole file;
   * a chunked file's recipe by the memo and each chunk by its own hash), or COMPONENT_INVALID naming `what`.
   */
  async readEntryFile(cached: CachedComponent, file: string, what: string): Promise<Buffer> {
    const stale = (): ToolhostError => new ToolhostError('COMPONENT_INVALID', `${what}: the cached ${file} no longer matches its hash (was the cache directory written to?)`);
    const recipeHash = cached.meta.chunked?.[file];
    if (recipeHash === undefined) {
      const { bytes: read, id } = await this.ids.read(join(cached.dir, file));
      if (id !== cached.meta.sha256[file]) throw stale();
      return Buffer.from(read.buffer, read.byteOffset, read.byteLength);
    }
    const { bytes: text, id } = await this.ids.read(join(cached.dir, `${file}${CHUNKS_SUFFIX}`));
    const recipe = id === recipeHash ? parseRecipe(Buffer.from(text).toString('utf8')) : undefined;
    if (recipe === undefined || recipe.sha256 !== cached.meta.sha256[file]) throw stale();
    const bytes = await this.chunks.get(recipe);
    if (bytes === undefined) throw stale();
    return bytes;
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** `component.core.wasm` before `component.core2.wasm` before `component.core10.wasm`. */
function coreModuleOrder(a: string, b: string): number {
  const index = (name: string): number => Number(/core(\d*)\.wasm$/.exec(name)?.[1] || 1);
  return index(a) - index(b);
}
