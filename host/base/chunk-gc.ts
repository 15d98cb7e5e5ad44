/**
 * Garbage collection of a chunk store (base/chunk-store.ts): the chunks no
 * recipe names any more (a store blob or a transpile-cache entry removed, a
 * cache format left behind) are removed. Run at a safe point, by the operator
 * (`toolhost gc`), never on a call's path.
 *
 * Which recipes count: every file named `*.chunks` under the roots given (the
 * transpile cache directory, which holds the default store; a store configured
 * elsewhere with a chunk store of its own is collected against its own
 * directory), whatever format or entry it sits in. A recipe that does not
 * parse names nothing a reader would use (readers refuse it too); it is
 * counted (`unreadable`) so the summary says so.
 *
 * Safety beside a running host or another writer: the store's writers make
 * every chunk young before they write the recipe that names it, and
 * `ChunkStore.collect` never removes a chunk younger than the grace (default
 * {@link DEFAULT_GC_GRACE_MS}), so a recipe written while this runs keeps its
 * chunks. Symbolic links under the roots are not followed.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseRecipe, type ChunkCollection, type ChunkStore } from './chunk-store.js';

/** Chunks younger than this are never removed: a writer may be between its chunks and its recipe. */
export const DEFAULT_GC_GRACE_MS = 60 * 60 * 1000;
/** Largest recipe file read (a 64 MiB file's recipe is ~60 KiB): larger ones are not recipes. */
const MAX_RECIPE_BYTES = 4 * 1024 * 1024;

export interface ChunkGcSummary extends ChunkCollection {
  /** Recipes read, and those that did not parse. */
  recipes: number;
  unreadable: number;
}

/** Every chunk named by a `*.chunks` recipe under `roots` (the chunk store's own directory is not walked). */
export async function referencedChunks(roots: readonly string[], skip: string): Promise<{ referenced: Set<string>; recipes: number; unreadable: number }> {
  const referenced = new Set<string>();
  let recipes = 0;
  let unreadable = 0;
  const skipped = resolve(skip);
  const pending = roots.map((root) => resolve(root));
  const seen = new Set<string>();
  while (pending.length > 0) {
    const dir = pending.pop()!;
    if (dir === skipped || seen.has(dir)) continue;
    seen.add(dir);
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        pending.push(path);
      } else if (entry.isFile() && entry.name.endsWith('.chunks')) {
        recipes += 1;
        const text = await readFile(path).then((bytes) => (bytes.length <= MAX_RECIPE_BYTES ? bytes.toString('utf8') : ''), () => '');
        const recipe = parseRecipe(text);
        if (recipe === undefined) {
          unreadable += 1;
          continue;
        }
        for (const [hex] of recipe.chunks) referenced.add(hex);
      }
    }
  }
  return { referenced, recipes, unreadable };
}

/** Remove the chunks of `store` that no recipe under `roots` names and that are older than `graceMs`. */
export async function collectChunks(store: ChunkStore, roots: readonly string[], graceMs = DEFAULT_GC_GRACE_MS): Promise<ChunkGcSummary> {
  // The time is taken before the recipes are read: a chunk touched after it is young whatever the walk saw.
  const now = Date.now();
  const { referenced, recipes, unreadable } = await referencedChunks(roots, store.root);
  const collection = await store.collect(referenced, graceMs, now);
  return { ...collection, recipes, unreadable };
}
