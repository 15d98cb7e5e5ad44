/**
 * Component ids (the sha256 of a component file), and the hashes the cache
 * checks its own entries' files against, remembered by the file's stat, so a
 * process that loads the same unchanged files as the last one does not hash
 * them again (the example tools are 36 MB, and their entries as much: ~50 ms
 * of CPU each on every `toolhost call`).
 *
 * The memo lives in the transpile cache directory, which is trusted already
 * (it holds the glue code the host imports): `<cache>/ids-v1/<key>` holds the
 * id, where the key is the file's (dev, ino, size, mtime ns, ctime ns). The
 * entries of the cache itself are untouched (their format number stays).
 *
 * Why the stat key is sound: every write to a file, and every `utimes`, sets
 * its ctime to the current time, and nothing can set ctime back; a file put
 * in its place (rename) is another inode, created now. So a file whose key
 * is unchanged has not been written since the key was taken, with one gap:
 * timestamps tick coarsely (a jiffy), so a write in the same tick as the
 * last one could keep the key ("racy git"). Hence a key is remembered only
 * when the file's ctime is older than SETTLED_NS when it is read, and the
 * file's stat is the same after the read as before it: then no write can
 * share the key's tick any more, and the bytes hashed are the bytes the key
 * stands for. A file with a younger ctime is hashed every time until it
 * settles. (This relies on the file system keeping ctime from a clock close
 * to this one, as local file systems do.)
 *
 * Two ways past that wait, so the first start after a transpile (or a
 * priming) is as warm as later ones:
 * - `wrote`: the cache's own entry files are remembered as soon as they are
 *   in place. The cache built them in a directory of its own and renamed it
 *   into place; nothing writes an entry's files in place afterwards (an
 *   entry is replaced by a rename, another inode), and whoever could write
 *   them within the tick could write this memo, which lives in the same
 *   trusted directory. So the stat taken after the rename is the bytes'.
 * - `rememberWhenSettled`: a component file read while young is read and
 *   hashed once more when it has settled (the loader does that after a
 *   transpile, in the background; the bench's priming waits for it).
 * A remembered key is recalled whatever its age: it was sound when it was
 * written, and a later write gives the file another key.
 */
import { randomBytes, createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';

/** The memo's directory under the cache root (its own version: independent of the entries' format). */
const MEMO_DIR = 'ids-v1';

/** How old a file's ctime must be before its id is remembered (well past any timestamp tick). */
const SETTLED_NS = 2_000_000_000n;

/** A component file's bytes and id. */
export interface ComponentFileRead {
  bytes: Uint8Array;
  /** sha256 of the bytes, hex. */
  id: string;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function statKey(stats: BigIntStats): string {
  return `${stats.dev}-${stats.ino}-${stats.size}-${stats.mtimeNs}-${stats.ctimeNs}`;
}

export class ComponentIds {
  readonly #dir: string;
  readonly #now: () => number;
  /** Files waited for by rememberWhenSettled, by path. */
  readonly #settling = new Map<string, Promise<string | undefined>>();

  /** `now`: the wall clock in ms (a test's own, to see files as settled). */
  constructor(cacheRoot: string, now: () => number = Date.now) {
    this.#dir = join(cacheRoot, MEMO_DIR);
    this.#now = now;
  }

  #settled(stats: BigIntStats): boolean {
    return stats.ctimeNs < BigInt(Math.floor(this.#now())) * 1_000_000n - SETTLED_NS;
  }

  /** The remembered id for a file with these stats, if any. */
  async #recall(stats: BigIntStats): Promise<string | undefined> {
    try {
      const id = (await readFile(join(this.#dir, statKey(stats)), 'utf8')).trim();
      return /^[0-9a-f]{64}$/.test(id) ? id : undefined;
    } catch {
      return undefined;
    }
  }

  /** Remember `id` for the key (best effort: a read-only cache only costs the hash next time). */
  async #remember(stats: BigIntStats, id: string): Promise<void> {
    const file = join(this.#dir, statKey(stats));
    const temporary = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await mkdir(this.#dir, { recursive: true });
      await writeFile(temporary, id);
      await rename(temporary, file);
    } catch {
      await rm(temporary, { force: true }).catch(() => undefined);
    }
  }

  /**
   * Remember the id of a file the cache itself just wrote and put in place (an entry's file: see the header
   * for why its stat may be remembered at once). Best effort, like every remembering.
   */
  async wrote(path: string, id: string): Promise<void> {
    const stats = await stat(path, { bigint: true }).catch(() => undefined);
    if (stats !== undefined) await this.#remember(stats, id);
  }

  /**
   * Once the file has settled (its ctime older than SETTLED_NS), its id from the memo, else read, hashed and
   * remembered: what a file read while young needs for the next process to find it. `ref: false` lets the
   * process exit while it waits (a background remembering). Undefined when the file is gone or unreadable.
   */
  async rememberWhenSettled(path: string, options: { ref?: boolean } = {}): Promise<string | undefined> {
    // One wait a file at a time (`toolhost dev` transpiles the same path again on every rebuild).
    const pending = this.#settling.get(path);
    if (pending !== undefined) return pending;
    const settling = this.#rememberWhenSettled(path, options.ref ?? true).finally(() => this.#settling.delete(path));
    this.#settling.set(path, settling);
    return settling;
  }

  async #rememberWhenSettled(path: string, ref: boolean): Promise<string | undefined> {
    try {
      for (;;) {
        const stats = await stat(path, { bigint: true });
        const waitNs = stats.ctimeNs + SETTLED_NS - BigInt(Math.floor(this.#now())) * 1_000_000n;
        if (waitNs < 0n) break;
        await sleep(Number(waitNs / 1_000_000n) + 10, undefined, { ref });
      }
      return await this.hashOf(path);
    } catch {
      return undefined;
    }
  }

  /** The file's id when the memo knows its current stat, without reading it; else undefined. */
  async known(path: string): Promise<string | undefined> {
    const handle = await open(path, 'r').catch(() => undefined);
    if (handle === undefined) return undefined;
    try {
      return await this.#recall(await handle.stat({ bigint: true }));
    } finally {
      await handle.close();
    }
  }

  /** The file's sha256: from the memo when it knows the file's current stat, else read and hashed (and remembered). */
  async hashOf(path: string): Promise<string> {
    return (await this.known(path)) ?? (await this.read(path)).id;
  }

  /** Read the file, and take its id from the memo (or hash it, and remember it when its stat allows). */
  async read(path: string): Promise<ComponentFileRead> {
    const handle = await open(path, 'r');
    try {
      const before = await handle.stat({ bigint: true });
      const data = await handle.readFile();
      // The buffer itself when it is this read's own (a large file's always is), else a copy.
      const bytes = data.byteOffset === 0 && data.buffer.byteLength === data.byteLength ? new Uint8Array(data.buffer) : new Uint8Array(data);
      // Written while it was read: these bytes may be no key's, so they are hashed.
      const stable = this.#settled(before) && statKey(await handle.stat({ bigint: true })) === statKey(before);
      if (!stable) return { bytes, id: sha256Hex(bytes) };
      const remembered = await this.#recall(before);
      if (remembered !== undefined) return { bytes, id: remembered };
      const id = sha256Hex(bytes);
      await this.#remember(before, id);
      return { bytes, id };
    } finally {
      await handle.close();
    }
  }
}
