/**
 * Compiling a component's core modules. jco's transpile reads a component's
 * structure but not its functions' code, so a module whose code does not
 * validate first fails here: that is the component's fault (COMPONENT_INVALID),
 * not an internal error.
 */
import { ToolhostError } from '../../base/errors.js';
import type { CoreModules } from '../protocol.js';
import type { CoreModuleBytes } from '../process/messages.js';
import { IMAGE_SUFFIX } from './engine-split.js';

/**
 * Compiled modules with an estimate of what their code holds (`codeBytes`: an array property, which
 * structured clone carries to a worker): {@link CODE_BYTES_PER_MODULE_BYTE} per byte of module; and
 * `imageBytes`, the bytes of the tool's own images (./engine-split.ts: V8 keeps a module's wire bytes as
 * long as it is referenced), which a worker's memory budget counts while it holds them.
 */
export type CompiledModules = CoreModules & { codeBytes?: number; imageBytes?: number };

/**
 * What compiled code costs per byte of module, as the workers' memory budget estimates it (issue 36, M8:
 * one variant of a 12 MB componentize-js module held ~37 MiB).
 */
export const CODE_BYTES_PER_MODULE_BYTE = 3;

/** Compiles each core module; a module that does not compile rejects with COMPONENT_INVALID naming it. */
export async function compileCoreModules(modules: CoreModuleBytes, what: string): Promise<CompiledModules> {
  const compiled: CompiledModules = await compileEach(modules, what);
  compiled.codeBytes = modules.reduce((sum, [, bytes]) => sum + bytes.byteLength, 0) * CODE_BYTES_PER_MODULE_BYTE;
  compiled.imageBytes = modules.reduce((sum, [name, bytes]) => sum + (name.endsWith(IMAGE_SUFFIX) ? bytes.byteLength : 0), 0);
  return compiled;
}

function compileEach(modules: CoreModuleBytes, what: string): Promise<CoreModules> {
  return Promise.all(modules.map(async ([name, bytes]): Promise<[string, WebAssembly.Module]> => [name, await compileCoreModule(name, bytes, what)]));
}

/** Compiles one core module; one that does not compile rejects with COMPONENT_INVALID naming it. */
export async function compileCoreModule(name: string, bytes: Uint8Array, what: string): Promise<WebAssembly.Module> {
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    if (!(error instanceof WebAssembly.CompileError)) throw error;
    throw new ToolhostError('COMPONENT_INVALID', `${what}: its core module ${name} does not compile (${error.message.replace(/^WebAssembly\.compile\(\): /, '')})`, {
      details: { reason: 'compile', module: name },
    });
  }
}

/**
 * Compiled modules by the sha256 of their bytes, held weakly: a module some variant or worker still holds is
 * found again; one nothing holds is collected and compiled anew when asked for. One table per loader (its
 * stored variants, ./variant-cache.ts): a module is taken from it only where it was compiled from checked bytes.
 */
export class CompiledByHash {
  readonly #compiled = new Map<string, WeakRef<WebAssembly.Module>>();
  readonly #compiling = new Map<string, Promise<WebAssembly.Module>>();
  /** Dead references are swept when the table passes this size (then it is twice what is alive, at least 256). */
  #sweepAt = 256;

  /** The module compiled from the bytes of `digest`: the one this table has, or `compile(await bytes())`. */
  get(digest: string, bytes: () => Promise<Uint8Array>, compile: (bytes: Uint8Array) => Promise<WebAssembly.Module>): Promise<WebAssembly.Module> {
    const known = this.#compiled.get(digest)?.deref();
    if (known !== undefined) return Promise.resolve(known);
    const pending = this.#compiling.get(digest);
    if (pending !== undefined) return pending;
    const made = bytes().then(compile).then((module) => {
      if (this.#compiled.size >= this.#sweepAt) {
        for (const [key, ref] of this.#compiled) if (ref.deref() === undefined) this.#compiled.delete(key);
        this.#sweepAt = Math.max(256, this.#compiled.size * 2);
      }
      this.#compiled.set(digest, new WeakRef(module));
      return module;
    });
    this.#compiling.set(digest, made);
    made.then(() => this.#compiling.delete(digest), () => this.#compiling.delete(digest));
    return made;
  }
}
