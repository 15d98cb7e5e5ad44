/** Reading component files and telling components from everything else. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { ToolhostError } from '../../base/errors.js';
import { sha256Hex, type ComponentFileRead, type ComponentIds } from './component-ids.js';
import type { WasmLoadOptions } from '../../core/registry-types.js';

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];

/** A component's bytes and identity. */
export interface ComponentSource {
  /** Name used for namespacing: the file name without `.wasm`, or the caller's. */
  name: string;
  path?: string;
  bytes: Uint8Array;
  /** sha256 of the bytes, hex. */
  id: string;
}

/**
 * Check the binary header: `\0asm` followed by the component layer's version
 * (`0d 00 01 00`). A core module (version 1) or anything else is
 * COMPONENT_INVALID with a message that says what it is.
 */
export function checkComponentHeader(bytes: Uint8Array, what: string): void {
  if (bytes.length < 8 || WASM_MAGIC.some((byte, i) => bytes[i] !== byte)) {
    throw new ToolhostError('COMPONENT_INVALID', `${what} is not a WebAssembly binary (no \\0asm header)`);
  }
  const layer = (bytes[6] ?? 0) | ((bytes[7] ?? 0) << 8);
  if (layer === 0) {
    throw new ToolhostError('COMPONENT_INVALID', `${what} is a core WebAssembly module, not a component; wrap it with \`jco new\` (or build it with componentize-js / wasm-tools component new)`);
  }
  if (layer !== 1) {
    throw new ToolhostError('COMPONENT_INVALID', `${what} has an unknown WebAssembly layer ${layer} (expected a component, layer 1)`);
  }
}

export function componentId(bytes: Uint8Array): string {
  return sha256Hex(bytes);
}

/** Component bytes given directly. */
export function sourceFromBytes(bytes: Uint8Array, name: string): ComponentSource {
  checkComponentHeader(bytes, `component "${name}"`);
  return { name, bytes, id: componentId(bytes) };
}

/** The component files a path names: the file itself, or a directory's `.wasm` files (sorted). */
export async function expandComponentPaths(paths: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    const absolute = resolve(path);
    let info;
    try {
      info = await stat(absolute);
    } catch (error) {
      throw new ToolhostError('COMPONENT_INVALID', `cannot read component path "${path}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (info.isDirectory()) {
      const entries = (await readdir(absolute)).filter((entry) => extname(entry) === '.wasm').sort();
      files.push(...entries.map((entry) => join(absolute, entry)));
    } else {
      files.push(absolute);
    }
  }
  return [...new Set(files)];
}

/**
 * Fetches a remote source (`oci://…`, `https://…#sha256=…`) into verified bytes, with the load's trust policy.
 * The composition root supplies it (host/distribution/); the sandbox only calls it.
 */
export type RemoteComponentFetch = (source: string, load: Pick<WasmLoadOptions, 'verify' | 'runtime' | 'signal'>) => Promise<{ name: string; bytes: Uint8Array }>;

/** Whether a component path names a remote source rather than a file. */
export function isRemotePath(path: string): boolean {
  return /^(oci|https?):\/\//i.test(path);
}

/**
 * The components `paths` name, in order: files and directories read from disk, remote sources fetched (and
 * verified) by `remote`; a remote source without a fetcher is COMPONENT_INVALID.
 */
export async function readComponentSources(paths: string[], ids: ComponentIds, remote: RemoteComponentFetch | undefined, load: Parameters<RemoteComponentFetch>[1]): Promise<ComponentSource[]> {
  const groups = await Promise.all(paths.map(async (path): Promise<ComponentSource[]> => {
    if (!isRemotePath(path)) return Promise.all((await expandComponentPaths([path])).map((file) => sourceFromFile(file, ids)));
    if (remote === undefined) throw new ToolhostError('COMPONENT_INVALID', `${path}: remote sources need a registry made by createRegistry (which fetches and verifies them)`);
    const fetched = await remote(path, load);
    return [{ ...sourceFromBytes(fetched.bytes, fetched.name), path }];
  }));
  const seen = new Set<string>();
  return groups.flat().filter((source) => source.path === undefined || isRemotePath(source.path) || (!seen.has(source.path) && Boolean(seen.add(source.path))));
}

/** A component file's bytes and id; `ids` (the transpile cache's memo) spares hashing an unchanged file again. */
export async function sourceFromFile(path: string, ids?: ComponentIds): Promise<ComponentSource> {
  let read: ComponentFileRead;
  try {
    if (ids !== undefined) {
      read = await ids.read(path);
    } else {
      const bytes = new Uint8Array(await readFile(path));
      read = { bytes, id: componentId(bytes) };
    }
  } catch (error) {
    throw new ToolhostError('COMPONENT_INVALID', `cannot read component "${path}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  checkComponentHeader(read.bytes, `"${path}"`);
  return { name: basename(path, '.wasm'), path, bytes: read.bytes, id: read.id };
}
