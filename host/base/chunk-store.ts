/**
 * Content-addressed chunks on disk, shared by the component store
 * (distribution/store.ts) and the transpile cache (sandbox/load/component-cache.ts),
 * so a byte run they hold many times is kept once (issue 37, D5).
 *
 * Why: every componentize-js component carries the same StarlingMonkey engine
 * (a 9.2 MB code section, byte-identical across tools built with one
 * componentize-js version) and differs in its ~2.9 MB heap image. A store blob
 * (the whole component) and a cache entry (jco's core modules: the same core
 * module bytes again) each held all 12 MB a tool. Files are cut at boundaries
 * chosen by their content (a gear rolling hash over the last 32 bytes, as in
 * FastCDC: a cut where the hash's top bits are zero, at least `MIN_CHUNK` and at
 * most `MAX_CHUNK` apart), so the same run of bytes is cut the same way
 * wherever it sits: in a component or in a core module, after another tool's
 * own bytes. Each chunk is kept once, under its sha256; a file is a recipe
 * (its size, its sha256, its chunks' hashes in order).
 *
 * Guarantees: a chunk file is written through a temporary file renamed into
 * place; every chunk read is hashed again and its length checked, so bytes
 * assembled from a recipe are the bytes whose hashes the recipe names (a
 * tampered or missing chunk fails the read, `undefined`); the caller trusts a
 * recipe only as far as it trusts where it read it from (the cache and the
 * store check a recipe's own hash as they check any file of theirs). Chunks no
 * recipe names are removed only by `collect` (chunk-gc.ts says when), which
 * never removes one a writer may be about to name: see `collect`. Not
 * guaranteed: the cut points are a format: changing the gear table or the
 * sizes makes new chunks (old ones are still read correctly through their
 * recipes).
 *
 * No imports but Node's: the lowest layer, so both its users can reach it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/** Smallest chunk (but the last). */
export const MIN_CHUNK = 16 * 1024;
/** Largest chunk. */
export const MAX_CHUNK = 256 * 1024;
/** A cut where these bits of the hash are zero: one position in 65 536, so chunks average ~80 KiB. */
const CUT_MASK = 0xffff0000;
/** Files smaller than this are not worth a recipe (callers keep them whole). */
export const CHUNKED_MIN_FILE = 1024 * 1024;

export const RECIPE_FORMAT = 'toolhost-chunks-1';

export interface ChunkRecipe {
  format: typeof RECIPE_FORMAT;
  /** The file's length. */
  size: number;
  /** The file's sha256 (hex). */
  sha256: string;
  /** Its chunks in order: [sha256 hex, length]. */
  chunks: Array<[string, number]>;
}

/** 256 fixed pseudo-random 32-bit values (a seeded xorshift: part of the format, never change them). */
const GEAR = (() => {
  const table = new Uint32Array(256);
  let x = 0x9e3779b9;
  for (let i = 0; i < 256; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    table[i] = x >>> 0;
  }
  return table;
})();

/** Where `bytes` is cut: the end offset of each chunk, the last one `bytes.length`. */
export function chunkEnds(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  let start = 0;
  const length = bytes.length;
  while (start < length) {
    if (length - start <= MIN_CHUNK) {
      ends.push(length);
      break;
    }
    const limit = Math.min(length, start + MAX_CHUNK);
    // The hash depends on the last 32 bytes only: starting 32 bytes before the smallest cut gives the same cuts.
    let i = start + MIN_CHUNK - 32;
    let hash = 0;
    let cut = limit;
    for (; i < limit; i += 1) {
      hash = ((hash << 1) + GEAR[bytes[i]!]!) >>> 0;
      if (i + 1 - start >= MIN_CHUNK && (hash & CUT_MASK) === 0) {
        cut = i + 1;
        break;
      }
    }
    ends.push(cut);
    start = cut;
  }
  return ends;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const HEX = /^[0-9a-f]{64}$/;

/** A recipe read from text, when it is one (shape checked: hashes, lengths, the sum). */
export function parseRecipe(text: string): ChunkRecipe | undefined {
  let value: Partial<ChunkRecipe>;
  try {
    value = JSON.parse(text) as Partial<ChunkRecipe>;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || value.format !== RECIPE_FORMAT || typeof value.sha256 !== 'string' || !HEX.test(value.sha256)) return undefined;
  if (!Number.isSafeInteger(value.size) || !Array.isArray(value.chunks)) return undefined;
  let sum = 0;
  for (const entry of value.chunks) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string' || !HEX.test(entry[0]) || !Number.isSafeInteger(entry[1]) || entry[1] <= 0 || entry[1] > MAX_CHUNK) return undefined;
    sum += entry[1];
  }
  return sum === value.size ? (value as ChunkRecipe) : undefined;
}

export class ChunkStore {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  #path(hex: string): string {
    return join(this.root, 'sha256', hex.slice(0, 2), hex);
  }

  /** Keep `bytes` as chunks (each written only when not already there); its recipe. */
  async put(bytes: Uint8Array): Promise<ChunkRecipe> {
    const chunks: Array<[string, number]> = [];
    let start = 0;
    for (const end of chunkEnds(bytes)) {
      const chunk = bytes.subarray(start, end);
      const hex = sha256(chunk);
      chunks.push([hex, chunk.length]);
      await this.#keep(hex, chunk);
      start = end;
    }
    return { format: RECIPE_FORMAT, size: bytes.length, sha256: sha256(bytes), chunks };
  }

  /**
   * The bytes a recipe names; undefined when a chunk is missing or no longer matches its hash. Each chunk is
   * read straight into its place and hashed there (a chunk file longer than its length is read no further: the
   * bytes used are the ones hashed): reading whole files into buffers of their own and copying them cost a 3 MB
   * tool image a copy and a round trip a chunk (200 distinct tools' images: ~0.5 s of the main thread).
   */
  async get(recipe: ChunkRecipe): Promise<Buffer | undefined> {
    const out = Buffer.allocUnsafe(recipe.size);
    let at = 0;
    for (const [hex, length] of recipe.chunks) {
      if (at + length > recipe.size) return undefined;
      const place = out.subarray(at, at + length);
      let handle: FileHandle | undefined;
      try {
        handle = await open(this.#path(hex), 'r');
        if ((await handle.read(place, 0, length, 0)).bytesRead !== length) return undefined;
      } catch {
        return undefined;
      } finally {
        await handle?.close().catch(() => {});
      }
      if (sha256(place) !== hex) return undefined;
      at += length;
    }
    return at === recipe.size ? out : undefined;
  }

  async #keep(hex: string, chunk: Uint8Array): Promise<void> {
    const path = this.#path(hex);
    // A chunk already there is kept when it still matches its hash (one that does not is written again), and
    // made young again: `collect` never removes a young chunk, and one it moved aside before this touch fails
    // the touch (ENOENT), so the chunk is written anew.
    const existing = await stat(path).catch(() => undefined);
    if (existing?.size === chunk.length && sha256(await readFile(path).catch(() => Buffer.alloc(0))) === hex) {
      const now = new Date();
      if (await utimes(path, now, now).then(() => true, () => false)) return;
    }
    const dir = join(path, '..');
    await mkdir(dir, { recursive: true });
    const temp = join(dir, `.tmp-${randomBytes(6).toString('hex')}`);
    try {
      await writeFile(temp, chunk);
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  /**
   * Remove the chunks no recipe names (`referenced`: the hashes every recipe names) and older than `graceMs`,
   * and writers' temporary files as old. Safe beside writers of this store in any process: a writer makes every
   * chunk it names young (written, or touched by `#keep`) before it writes its recipe (through a rename), so
   * a chunk named by a recipe written after `referenced` was read is young unless the writer took longer than
   * the grace. A chunk is moved aside before it is removed, and put back if its time changed meanwhile (a
   * writer touched it between the look and the move); a touch after the move fails, and that writer writes it again.
   */
  async collect(referenced: ReadonlySet<string>, graceMs: number, now = Date.now()): Promise<ChunkCollection> {
    const summary: ChunkCollection = { removed: 0, removedBytes: 0, kept: 0, keptBytes: 0, young: 0 };
    const cutoff = now - graceMs;
    const top = join(this.root, 'sha256');
    for (const prefix of await readdir(top).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
      const dir = join(top, prefix);
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const path = join(dir, name);
        const info = await stat(path).catch(() => undefined);
        if (info === undefined || !info.isFile()) continue;
        if (name.startsWith('.tmp-') || name.startsWith('.gc-')) {
          // A writer's (or an earlier collection's) leftover, once it is old enough not to be in use.
          if (info.mtimeMs < cutoff && await unlink(path).then(() => true, () => false)) {
            summary.removed += 1;
            summary.removedBytes += info.size;
          }
          continue;
        }
        if (!HEX.test(name) || name.slice(0, 2) !== prefix) continue;
        if (referenced.has(name)) {
          summary.kept += 1;
          summary.keptBytes += info.size;
        } else if (info.mtimeMs >= cutoff) {
          summary.young += 1;
          summary.keptBytes += info.size;
        } else if (await this.#remove(path, dir, info.mtimeMs)) {
          summary.removed += 1;
          summary.removedBytes += info.size;
        } else {
          summary.young += 1;
          summary.keptBytes += info.size;
        }
      }
    }
    return summary;
  }

  /** Move `path` aside, then remove it unless a writer touched it since its time was read (`mtimeMs`). */
  async #remove(path: string, dir: string, mtimeMs: number): Promise<boolean> {
    const aside = join(dir, `.gc-${randomBytes(6).toString('hex')}`);
    if (!await rename(path, aside).then(() => true, () => false)) return false;
    const moved = await stat(aside).catch(() => undefined);
    if (moved !== undefined && moved.mtimeMs !== mtimeMs) {
      // Touched by a writer between the look and the move: it counts on this chunk. Back in place (a copy a
      // writer wrote there meanwhile holds the same bytes).
      await rename(aside, path).catch(() => undefined);
      return false;
    }
    await unlink(aside).catch(() => undefined);
    return true;
  }
}

/** What `ChunkStore.collect` did. */
export interface ChunkCollection {
  /** Chunks (and leftover temporary files) removed, and their bytes. */
  removed: number;
  removedBytes: number;
  /** Chunks a recipe names, and every chunk kept's bytes. */
  kept: number;
  keptBytes: number;
  /** Chunks no recipe names, kept because they are younger than the grace (a writer may be about to name them). */
  young: number;
}
