/**
 * What D5 of `toolhost bench --scale N --distinct` weighs (issue 37): the bytes a
 * directory takes on disk, and the bytes of a set of components that are their
 * own (their "distinct bytes").
 *
 * Distinct bytes are read from the components themselves, not from how the
 * host stores them: every core module's code section is hashed, and a code
 * section that several components carry byte for byte (the StarlingMonkey
 * engine of componentize-js tools built with one version and the same
 * imports) counts once; every other byte counts for each component.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { moduleSections } from '../sandbox/load/wasm-binary.js';

/** Section ids: a component's core module (1), a core module's code (10) and data (11). */
const CORE_MODULE = 1;
const CODE = 10;
const DATA = 11;

export interface DistinctBytes {
  components: number;
  /** The components' sizes, summed. */
  totalBytes: number;
  /** The same, a shared code section counted once. */
  distinctBytes: number;
  /** The largest code section seen and how many components carry it. */
  engine: { bytes: number; carriers: number };
  /** The data sections of the components carrying that code section, mean (the per-tool heap image). */
  meanDataBytes: number;
}

export async function distinctBytes(files: readonly string[]): Promise<DistinctBytes> {
  const codes = new Map<string, { bytes: number; carriers: number; data: number }>();
  let total = 0;
  for (const file of files) {
    const bytes = new Uint8Array(await readFile(file));
    total += bytes.length;
    for (const section of moduleSections(bytes)) {
      if (section.id !== CORE_MODULE) continue;
      const module = bytes.subarray(section.contentStart, section.end);
      const inner = moduleSections(module);
      const code = inner.find((s) => s.id === CODE);
      if (code === undefined) continue;
      const data = inner.find((s) => s.id === DATA);
      const key = createHash('sha256').update(module.subarray(code.contentStart, code.end)).digest('hex');
      const seen = codes.get(key) ?? { bytes: code.end - code.start, carriers: 0, data: 0 };
      seen.carriers += 1;
      seen.data += data === undefined ? 0 : data.end - data.start;
      codes.set(key, seen);
    }
  }
  let shared = 0;
  let engine = { bytes: 0, carriers: 0, data: 0 };
  for (const code of codes.values()) {
    shared += (code.carriers - 1) * code.bytes;
    if (code.bytes > engine.bytes) engine = code;
  }
  return {
    components: files.length,
    totalBytes: total,
    distinctBytes: total - shared,
    engine: { bytes: engine.bytes, carriers: engine.carriers },
    meanDataBytes: engine.carriers === 0 ? 0 : Math.round(engine.data / engine.carriers),
  };
}

/** The bytes `dir` takes on disk (allocated blocks; a file with several links counted once). */
export async function diskBytes(dir: string): Promise<number> {
  const seen = new Set<string>();
  let sum = 0;
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path).catch(() => undefined);
    if (info === undefined) return;
    const inode = `${info.dev}:${info.ino}`;
    if (seen.has(inode)) return;
    seen.add(inode);
    sum += info.blocks * 512;
    if (info.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir);
  return sum;
}
