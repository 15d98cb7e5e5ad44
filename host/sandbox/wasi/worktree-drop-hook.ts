/**
 * Dropped worktree descriptors and directory listings close their fd.
 *
 * The shim's public `Descriptor` and `DirectoryEntryStream` classes do not
 * forward `[Symbol.dispose]` (which jco calls when a guest drops an owned
 * handle) to their implementation: they keep it in a private field and
 * forward only wasi methods. So this module gives them one that goes through
 * a wasi method: it raises a flag and calls `isSameObject(this)` on a
 * descriptor, `readDirectoryEntry()` on a listing; the worktree's
 * implementations check {@link takeDropRequest} first and answer by releasing
 * their fd. Other adapters' just answer the call (comparing a descriptor with
 * itself, or reading an entry of a listing being dropped).
 */
import { shimFilesystem } from './shim.js';

let dropRequested = false;
const HOOKED = Symbol.for('toolhost.worktree-fs.drop-hook');

/** Whether the current call is the drop hook's signal rather than a real one (and clear it). */
export function takeDropRequest(): boolean {
  if (!dropRequested) return false;
  dropRequested = false;
  return true;
}

/** Give one of the shim's public classes a `[Symbol.dispose]` that reaches the implementation through `signal`. */
function installDropHook(prototype: object, signal: (resource: never) => unknown): void {
  if (Reflect.get(prototype, HOOKED) === true) return;
  const previous: unknown = Reflect.get(prototype, Symbol.dispose);
  Object.defineProperty(prototype, Symbol.dispose, {
    configurable: true,
    writable: true,
    value(this: never): void {
      dropRequested = true;
      try {
        signal(this);
      } catch {
        // a dead descriptor: nothing left to release
      } finally {
        dropRequested = false;
      }
      if (typeof previous === 'function') (previous as (this: unknown) => void).call(this);
    },
  });
  Object.defineProperty(prototype, HOOKED, { value: true });
}

installDropHook(shimFilesystem.types.Descriptor.prototype, (descriptor: { isSameObject(other: unknown): boolean }) => descriptor.isSameObject(descriptor));
installDropHook(shimFilesystem.types.DirectoryEntryStream.prototype, (stream: { readDirectoryEntry(): unknown }) => stream.readDirectoryEntry());
