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
 * store check a recipe's own hash as they check any file of theirs). Not
 * guaranteed: garbage collection (a chunk no recipe names stays), and the cut
 * points are a format: changing the gear table or the sizes makes new chunks
 * (old ones are still read correctly through their recipes).
 *
 * No imports but Node's: the lowest layer, so both its users can reach it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
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

  /** The bytes a recipe names; undefined when a chunk is missing or no longer matches its hash. */
  async get(recipe: ChunkRecipe): Promise<Buffer | undefined> {
    const out = Buffer.allocUnsafe(recipe.size);
    let at = 0;
    for (const [hex, length] of recipe.chunks) {
      let chunk: Buffer;
      try {
        chunk = await readFile(this.#path(hex));
      } catch {
        return undefined;
      }
      if (chunk.length !== length || sha256(chunk) !== hex) return undefined;
      chunk.copy(out, at);
      at += length;
    }
    return at === recipe.size ? out : undefined;
  }

  async #keep(hex: string, chunk: Uint8Array): Promise<void> {
    const path = this.#path(hex);
    // A chunk already there is kept when it still matches its hash (one that does not is written again).
    const existing = await stat(path).catch(() => undefined);
    if (existing?.size === chunk.length && sha256(await readFile(path).catch(() => Buffer.alloc(0))) === hex) return;
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
}
