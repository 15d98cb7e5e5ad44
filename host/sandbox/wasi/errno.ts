/**
 * The wasi:filesystem `error-code` a worktree operation fails with, from what
 * it threw: a Node fs error or a {@link ConfinementError} (both carry a
 * Node-style `code`), or an error-code string the WASI binding threw itself.
 */
import type { ErrorCode } from './shim.js';
import { nodeCode } from './worktree-confinement.js';

/** Node error codes and the wasi error-code each becomes. */
const ERROR_CODES: Record<string, ErrorCode> = {
  EACCES: 'access',
  EAGAIN: 'would-block',
  EWOULDBLOCK: 'would-block',
  EALREADY: 'already',
  EBADF: 'bad-descriptor',
  EBUSY: 'busy',
  EDEADLK: 'deadlock',
  EDQUOT: 'quota',
  EEXIST: 'exist',
  EFBIG: 'file-too-large',
  EILSEQ: 'illegal-byte-sequence',
  EINPROGRESS: 'in-progress',
  EINTR: 'interrupted',
  EINVAL: 'invalid',
  EIO: 'io',
  EISDIR: 'is-directory',
  ELOOP: 'loop',
  EMLINK: 'too-many-links',
  EMSGSIZE: 'message-size',
  ENAMETOOLONG: 'name-too-long',
  ENODEV: 'no-device',
  ENOENT: 'no-entry',
  ENOLCK: 'no-lock',
  ENOMEM: 'insufficient-memory',
  EMFILE: 'insufficient-memory',
  ENFILE: 'insufficient-memory',
  ENOSPC: 'insufficient-space',
  ENOTDIR: 'not-directory',
  ENOTEMPTY: 'not-empty',
  ENOTRECOVERABLE: 'not-recoverable',
  ENOTSUP: 'unsupported',
  EOPNOTSUPP: 'unsupported',
  ENOTTY: 'no-tty',
  ENXIO: 'no-such-device',
  EOVERFLOW: 'overflow',
  EPERM: 'not-permitted',
  EPIPE: 'pipe',
  EROFS: 'read-only',
  ESPIPE: 'invalid-seek',
  ETXTBSY: 'text-file-busy',
  EXDEV: 'cross-device',
};

/** The Node code for a wasi error-code (the first listed wins). */
const NODE_CODES = new Map<ErrorCode, string>(Object.entries(ERROR_CODES).map(([node, wasi]) => [wasi, node]).reverse() as Array<[ErrorCode, string]>);

/** What the guest gets for `error`: our own error-code strings pass through, coded errors are mapped; anything else is a bug and is rethrown. */
export function toErrorCode(error: unknown): ErrorCode {
  if (typeof error === 'string') return error as ErrorCode;
  const code = nodeCode(error);
  if (code === undefined) throw error;
  if (code.startsWith('ERR_')) return 'invalid';
  return ERROR_CODES[code] ?? 'io';
}

/** The Node code for a wasi error-code (for io errors, whose `payload.code` the shim's `filesystem-error-code` reads), `EIO` if none. */
export function nodeCodeFor(code: ErrorCode): string {
  return NODE_CODES.get(code) ?? 'EIO';
}
