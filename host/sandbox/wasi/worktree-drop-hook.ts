/**
 * Dropped worktree descriptors and directory listings close their fd.
 *
 * The shim's public classes do not forward `[Symbol.dispose]` to their
 * implementation (see shim.ts's hookGuestDrop), and keep it in a private
 * field, so the drop reaches it through a wasi method: the hook raises a flag
 * and calls `isSameObject(this)` on a descriptor, `readDirectoryEntry()` on a
 * listing; the worktree's implementations check {@link takeDropRequest} first
 * and answer by releasing their fd. Other adapters' just answer the call
 * (comparing a descriptor with itself, or reading an entry of a listing
 * being dropped).
 */
import { hookGuestDrop } from './shim.js';

let dropRequested = false;

/** Whether the current call is the drop hook's signal rather than a real one (and clear it). */
export function takeDropRequest(): boolean {
  if (!dropRequested) return false;
  dropRequested = false;
  return true;
}

/** Raise the flag around `signal`, whatever it throws (a dead descriptor has nothing left to release). */
function signalDrop(signal: () => unknown): void {
  dropRequested = true;
  try {
    signal();
  } catch {
    // a dead descriptor: nothing left to release
  } finally {
    dropRequested = false;
  }
}

hookGuestDrop('descriptor', (descriptor) => signalDrop(() => (descriptor as { isSameObject(other: unknown): boolean }).isSameObject(descriptor)));
hookGuestDrop('directory-entry-stream', (stream) => signalDrop(() => (stream as { readDirectoryEntry(): unknown }).readDirectoryEntry()));
