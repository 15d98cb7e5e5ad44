// The worktree from a JS/TS guest: typed helpers over wasi:filesystem (see worktree.d.ts).
//
// The host mounts the call's worktree at `/worktree` when its policy grants one (DEFAULT: read-only, ELEVATED:
// read-write) and nothing otherwise. These helpers only translate: every path goes to the host as written, and
// the host alone decides what it may reach (`..` above the worktree, absolute paths elsewhere and symlinks out of
// it are refused there, not here). Importing this module makes `toolhost build` add wasi:filesystem to the
// component's world; a tool that uses none of it does not import it (the bundler drops unused imports).
import { getDirectories } from 'wasi:filesystem/preopens@0.2.3';

/** Where the host mounts the worktree, as the guest sees it. */
export const WORKTREE = '/worktree';

const CHUNK = 65536n;

function fsError(op, path, error) {
  // componentize-js throws a result's err as an Error whose `payload` is the error-code; the shim throws the code.
  const errno = typeof error === 'string' ? error : error !== null && typeof error === 'object' && typeof error.payload === 'string' ? error.payload : String(error && error.message ? error.message : error);
  return { code: 'FS_ERROR', message: `${op} ${path}: ${errno}`, details: JSON.stringify({ op, path, errno }) };
}

function release(resource) {
  const dispose = resource && resource[Symbol.dispose];
  if (typeof dispose === 'function') dispose.call(resource);
}

/** The worktree's root descriptor, or the tool-error NO_WORKTREE when this call was granted none. */
export function worktreeRoot() {
  for (const [descriptor, path] of getDirectories()) {
    if (path === WORKTREE) return descriptor;
  }
  throw { code: 'NO_WORKTREE', message: 'this call has no worktree: the host grants one only to DEFAULT (read-only) and ELEVATED (read-write) calls that bind a directory', details: undefined };
}

/** `/worktree/a/b` and `a/b` name the same file; anything else goes to the host as is (and is refused there). */
function relativePath(path) {
  if (path === WORKTREE || path === `${WORKTREE}/`) return '.';
  if (path.startsWith(`${WORKTREE}/`)) return path.slice(WORKTREE.length + 1);
  return path;
}

function withFile(op, path, openFlags, flags, use) {
  let file;
  try {
    file = worktreeRoot().openAt({ symlinkFollow: true }, relativePath(path), openFlags, flags);
  } catch (error) {
    if (error && error.code === 'NO_WORKTREE') throw error;
    throw fsError(op, path, error);
  }
  try {
    return use(file);
  } catch (error) {
    throw fsError(op, path, error);
  } finally {
    release(file);
  }
}

export function readBytes(path) {
  return withFile('read', path, {}, { read: true }, (file) => {
    const chunks = [];
    let total = 0;
    for (let offset = 0n; ; ) {
      const [bytes, end] = file.read(CHUNK, offset);
      chunks.push(bytes);
      total += bytes.length;
      offset += BigInt(bytes.length);
      if (end || bytes.length === 0) break;
    }
    const out = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  });
}

export function readText(path) {
  return new TextDecoder().decode(readBytes(path));
}

export function writeBytes(path, bytes) {
  withFile('write', path, { create: true, truncate: true }, { write: true }, (file) => {
    let offset = 0;
    while (offset < bytes.length) {
      const written = Number(file.write(bytes.subarray(offset), BigInt(offset)));
      if (written <= 0) throw 'io';
      offset += written;
    }
  });
}

export function writeText(path, text) {
  writeBytes(path, new TextEncoder().encode(text));
}

export function list(path = WORKTREE) {
  return withFile('list', path, { directory: true }, { read: true }, (dir) => {
    const stream = dir.readDirectory();
    const entries = [];
    try {
      for (let entry = stream.readDirectoryEntry(); entry !== undefined; entry = stream.readDirectoryEntry()) {
        entries.push({ name: entry.name, type: entry.type });
      }
    } finally {
      release(stream);
    }
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  });
}

export function stat(path) {
  let info;
  try {
    info = worktreeRoot().statAt({ symlinkFollow: true }, relativePath(path));
  } catch (error) {
    if (error && error.code === 'NO_WORKTREE') throw error;
    throw fsError('stat', path, error);
  }
  const modified = info.dataModificationTimestamp;
  return {
    type: info.type,
    size: Number(info.size),
    modifiedMs: modified === undefined ? undefined : Number(modified.seconds) * 1000 + Math.floor(modified.nanoseconds / 1e6),
  };
}
