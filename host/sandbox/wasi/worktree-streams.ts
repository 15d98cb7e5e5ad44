/**
 * wasi:io streams over a worktree file's fd. A stream holds its own
 * reference to the fd (a descriptor dropped while its streams are open does
 * not close it under them), fails like its descriptor once the call ends, and
 * an output stream re-checks the worktree is writable on every operation.
 */
import fs from 'node:fs';
import { nodeCodeFor, toErrorCode } from './errno.js';
import { shimIo, type ShimInputStream, type ShimOutputStream } from './shim.js';
import { liveFd, type FdHandle, type Session } from './worktree-session.js';

/** Largest single read (the guest loops for more). */
export const MAX_READ = 4 * 1024 * 1024;
/** What an output stream lets the guest write at once. */
const WRITE_PERMIT = 1024n * 1024n;

/** A wasi:io stream-error for a failed stream operation. */
function streamFailure(error: unknown): { tag: 'last-operation-failed'; val: Error } {
  const code = toErrorCode(error);
  const failure = shimIo.ioErrorCreate(code);
  // The shim's filesystem-error-code reads `payload.code` as a Node code.
  Object.assign(failure, { payload: { code: nodeCodeFor(code) } });
  return { tag: 'last-operation-failed', val: failure };
}

/** Write all of `bytes` at `position`. */
export function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    done += fs.writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
  }
}

/** An input stream reading the file from `position` on. */
export function fileInputStream(session: Session, handle: FdHandle, position: number): ShimInputStream {
  handle.retain();
  let dropped = false;
  return shimIo.inputStreamCreate({
    blockingRead(len: bigint): Uint8Array {
      let bytes: Uint8Array;
      let read: number;
      try {
        const fd = liveFd(session, handle);
        bytes = new Uint8Array(Math.min(Number(len), MAX_READ));
        if (bytes.byteLength === 0) return bytes;
        read = fs.readSync(fd, bytes, 0, bytes.byteLength, position);
      } catch (error) {
        throw streamFailure(error);
      }
      if (read === 0) throw { tag: 'closed' };
      position += read;
      return bytes.subarray(0, read);
    },
    subscribe: () => shimIo.pollableCreate(),
    drop() {
      if (dropped) return;
      dropped = true;
      handle.release();
    },
  });
}

/** An output stream handing each write to `write` (which tracks its own position). */
export function fileOutputStream(session: Session, handle: FdHandle, write: (fd: number, bytes: Uint8Array) => void): ShimOutputStream {
  handle.retain();
  let dropped = false;
  const live = (): number => {
    try {
      session.permissions.requireMutation();
      return liveFd(session, handle);
    } catch (error) {
      throw streamFailure(error);
    }
  };
  return shimIo.outputStreamCreate({
    checkWrite(): bigint {
      live();
      return WRITE_PERMIT;
    },
    write(bytes: Uint8Array): void {
      const fd = live();
      try {
        write(fd, bytes);
      } catch (error) {
        throw streamFailure(error);
      }
    },
    flush(): void {
      live();
    },
    blockingFlush(): void {
      live();
    },
    subscribe: () => shimIo.pollableCreate(),
    drop(): void {
      if (dropped) return;
      dropped = true;
      handle.release();
    },
  });
}
