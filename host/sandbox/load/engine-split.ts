/**
 * One compiled engine, many images (issue 37, item 1): a core module whose
 * data segments are all active is split into its engine (the same module with
 * no data segments) and its image (a module of no code that imports a memory
 * and holds the original data section, byte for byte).
 *
 * Why: every componentize-js tool's largest core module is the StarlingMonkey
 * engine plus Wizer's heap image in its data section; the engines of tools
 * built with one componentize-js version and the same imports are the same
 * bytes, and V8 shares compiled code between byte-identical modules (its
 * native module cache): the engine compiles once per process whatever tools
 * carry it (~12 MiB of RSS and ~0.3 s of CPU a distinct tool before), and each
 * tool keeps its image (~2.7 MB of data, no code).
 *
 * What the split preserves (the fresh-instance guarantee): the worker
 * instantiates the image right after the engine, inside the instantiation hook
 * jco's glue calls for each core module (worker/guest-instance.ts), before
 * the glue instantiates the next module or calls any export; the image's active
 * segments are then written by V8 in their order, with its bounds checks, into
 * the engine's memory, exactly as the original module's were at its
 * instantiation. A module is split only when that equivalence is evident from
 * its bytes: no start function (nothing runs between the two
 * instantiations), exactly one memory, defined and neither shared nor 64-bit (the
 * image imports it as plain), no memory imported, every data segment active on
 * memory 0 at an `i32.const` offset (the image has no globals), and no
 * instruction that names a data segment (`memory.init`, `data.drop`): the
 * engine declares a data count of 0, so it compiles only when none does
 * (`splitVerified` compiles it, off the main thread, once per distinct engine:
 * a byte scan for the opcodes is not exact, and found false ones in the 9 MB
 * engine). Anything else stays whole: a refusal costs memory, never correctness.
 * The engine keeps the snapshot exports and the instance-state verdict the
 * whole module was given (the split runs after them), and holds no segment
 * whose dropped flag could outlive a reset.
 *
 * `TOOLHOST_ENGINE_SPLIT=off` in the environment leaves every module whole
 * (for measuring before and after); `always` splits small modules too (so
 * the instance-state tests' C fixtures run split).
 */
import { createHash } from 'node:crypto';
import { concatBytes, encodeLeb, ModuleReader, moduleSections } from './wasm-binary.js';

/** The image of core module NAME travels with the variant as NAME + this suffix (never a name jco gives). */
export const IMAGE_SUFFIX = '#toolhost-image';
/** Where the image module imports the engine's memory from. */
export const IMAGE_MEMORY_IMPORT = { module: 'toolhost:image', name: 'memory' } as const;

const SECTION = { import: 2, memory: 5, start: 8, data: 11, dataCount: 12 } as const;
/** Modules smaller than this are not worth a split (C guests, adapters: their data is small). */
const SPLIT_MIN_DATA_BYTES = 256 * 1024;

export interface SplitModule {
  /** The module without its data segments: the same bytes for every tool that shares the engine. */
  engine: Uint8Array;
  /** A module of no code: imports the memory, holds the original data section. */
  image: Uint8Array;
}

/** Which modules are split: none (`off`), those with a large image (the default), or every one that can be (`always`). */
export type EngineSplitSetting = 'off' | 'large' | 'always';

export function engineSplitSetting(env: NodeJS.ProcessEnv = process.env): EngineSplitSetting {
  const value = env.TOOLHOST_ENGINE_SPLIT;
  return value === 'off' || value === 'always' ? value : 'large';
}

export function engineSplitEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return engineSplitSetting(env) !== 'off';
}

const minDataBytes = (env: NodeJS.ProcessEnv = process.env): number => (engineSplitSetting(env) === 'always' ? 1 : SPLIT_MIN_DATA_BYTES);

const section = (id: number, content: Uint8Array): Uint8Array => concatBytes([Uint8Array.of(id, ...encodeLeb(content.length)), content]);
const name = (text: string): Uint8Array => {
  const bytes = new TextEncoder().encode(text);
  return concatBytes([Uint8Array.of(...encodeLeb(bytes.length)), bytes]);
};

/** The split of `bytes`, or undefined when the module stays whole (see the file comment for when). */
export function splitEngine(bytes: Uint8Array): SplitModule | undefined {
  try {
    return trySplit(bytes);
  } catch {
    return undefined;
  }
}

function trySplit(bytes: Uint8Array): SplitModule | undefined {
  const sections = moduleSections(bytes);
  const data = sections.find((s) => s.id === SECTION.data);
  if (data === undefined || data.end - data.contentStart < minDataBytes()) return undefined;
  if (sections.some((s) => s.id === SECTION.start)) return undefined;
  // No memory imported.
  const imports = sections.find((s) => s.id === SECTION.import);
  if (imports !== undefined) {
    const reader = new ModuleReader(bytes, imports.contentStart);
    for (let i = reader.leb(); i > 0; i -= 1) {
      reader.name();
      reader.name();
      const kind = reader.byte();
      if (kind === 0x00) reader.leb();
      else if (kind === 0x01) reader.tableType();
      else if (kind === 0x02) return undefined;
      else if (kind === 0x03) {
        reader.valueType();
        reader.byte();
      } else return undefined;
    }
  }
  // Exactly one memory, plain (flags 0 or 1: no shared, no 64-bit).
  const memory = sections.find((s) => s.id === SECTION.memory);
  if (memory === undefined) return undefined;
  const memories = new ModuleReader(bytes, memory.contentStart);
  if (memories.leb() !== 1) return undefined;
  if (memories.byte() > 1) return undefined;
  // Every segment active on memory 0 at an i32.const offset.
  const segments = new ModuleReader(bytes, data.contentStart);
  for (let i = segments.leb(); i > 0; i -= 1) {
    if (segments.leb() !== 0) return undefined;
    if (segments.byte() !== 0x41) return undefined;
    segments.leb();
    if (segments.byte() !== 0x0b) return undefined;
    segments.skip(segments.leb());
  }
  if (segments.offset !== data.end) return undefined;

  const parts: Uint8Array[] = [bytes.subarray(0, 8)];
  for (const s of sections) {
    if (s.id === SECTION.data) parts.push(Uint8Array.of(SECTION.data, 1, 0));
    else if (s.id === SECTION.dataCount) parts.push(Uint8Array.of(SECTION.dataCount, 1, 0));
    else if (s.id === 0) continue; // custom sections (names, producers): not code, and they differ between tools
    else parts.push(bytes.subarray(s.start, s.end));
  }
  const memoryImport = concatBytes([Uint8Array.of(1), name(IMAGE_MEMORY_IMPORT.module), name(IMAGE_MEMORY_IMPORT.name), Uint8Array.of(0x02, 0x00, 0x00)]);
  const image = concatBytes([bytes.subarray(0, 8), section(SECTION.import, memoryImport), bytes.subarray(data.start, data.end)]);
  return { engine: concatBytes(parts), image };
}

/**
 * Engines that compiled, by the sha256 of their bytes (the compiled module is kept: V8 shares its code with every
 * later module of the same bytes, so the check is the one compile of the engine); engines that did not, as false.
 */
const verdicts = new Map<string, Promise<WebAssembly.Module | false>>();

/** `splitEngine`, kept only when the engine compiles (no instruction names a data segment); else undefined. */
export async function splitVerified(bytes: Uint8Array): Promise<SplitModule | undefined> {
  const split = splitEngine(bytes);
  if (split === undefined) return undefined;
  const digest = createHash('sha256').update(split.engine).digest('hex');
  let verdict = verdicts.get(digest);
  if (verdict === undefined) {
    verdict = WebAssembly.compile(split.engine).catch(() => false as const);
    verdicts.set(digest, verdict);
  }
  return (await verdict) === false ? undefined : split;
}
