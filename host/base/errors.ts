/**
 * The one list of toolhost error codes, and the error type that carries them.
 *
 * Codes are stable: a retired code is never reused. Each code is documented in
 * docs/errors.md (a test checks that), and errors cross worker and process
 * boundaries as plain data ({@link ToolErrorData}) that is rebuilt on the other
 * side with {@link ToolhostError.fromData}.
 */

/** What each code means; the table in docs/errors.md is checked against this list. */
export const ERROR_CODES = {
  INVALID_INPUT: 'The arguments, the policy or the request are malformed or fail the tool\'s input schema.',
  TOOL_NOT_FOUND: 'No tool is registered under that name.',
  PERMISSION_DENIED: 'The call asks for more than the tool\'s grant allows, or an approval was refused.',
  TOOL_PRIVILEGE_ESCALATION: 'The call asks for a higher privilege level than the tool\'s grant.',
  WORKTREE_NOT_BOUND: 'The call requires a worktree but none is bound to its context.',
  NETWORK_DENIED: 'The tool failed because the network policy denied its traffic.',
  TOOL_TIMEOUT: 'The call ran past its `timeout`.',
  WALL_TIMEOUT: 'The call ran past its wall-clock budget (`budget_wall_ms`).',
  CPU_BUDGET_EXCEEDED: 'The guest used more CPU time than `budget_cpu_ms`.',
  MEMORY_LIMIT_EXCEEDED: 'The guest tried to grow its memory past `memory_mb`.',
  OUTPUT_LIMIT_EXCEEDED: 'The result or the event stream exceeded the configured output limits.',
  CANCELLED: 'The call was cancelled by its caller.',
  TOOL_CRASHED: 'The guest trapped, exited, or its worker died.',
  TOOL_ERROR: 'The tool ran and reported an error of its own; its code is in `details.code`.',
  OVERLOADED: 'The pool\'s queue is full, the workers that may wait for clients are all waiting, or a fleet-wide concurrency cap (per tool or per tenant) is reached; try again later.',
  COMPONENT_INVALID: 'A component could not be loaded: not a component, or it does not export toolhost:tool/tool.',
  INTERNAL: 'A bug or an unexpected failure inside toolhost.',
  FLEET_UNAVAILABLE: 'The fleet\'s shared store (Redis) is unreachable: shared state cannot be written and fleet-wide cancel cannot answer; local calls still run.',
  SOURCE_UNTRUSTED: 'A remote component (oci:// or https://) was refused before anything ran: no trust is configured for it, it has no signature, its signature is by an untrusted key or identity, does not verify against the pinned trusted root, or is for another digest, or distribution.registries does not allow its source (`details.reason`).',
  SOURCE_INTEGRITY: 'A remote component\'s bytes are not what was pinned or published: a digest mismatch, a manifest of the wrong shape, or a blob over its size cap (`details.reason`); nothing was stored.',
  CLIENT_UNSUPPORTED: 'A tool asked its caller for something it cannot answer (sampling, elicitation): the call did not come over MCP, the MCP client did not declare the capability, or the embedder passed no hook.',
  SOURCE_UNAVAILABLE: 'A remote component could not be fetched (registry or server unreachable, not found, authentication refused) and the store does not hold it.',
} as const;

/** A stable toolhost error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The answers of a cancel request. */
export type CancelOutcome = 'CANCELLED' | 'NOT_FOUND' | 'ALREADY_COMPLETED';

/** Codes whose failures may succeed on a retry (for idempotent tools only). */
export const TRANSIENT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['TOOL_CRASHED', 'OVERLOADED']);

/** An error as plain data: what crosses worker, process and wire boundaries. */
export interface ToolErrorData {
  code: ErrorCode;
  message: string;
  /** Structured extra data (e.g. ajv errors, the tool's own error code). */
  details?: unknown;
  callId?: string;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

const kToolhostError = Symbol.for('toolhost.error');

/**
 * An error with a stable {@link ErrorCode}.
 *
 * `instanceof` holds across two loaded copies of toolhost (the check uses a
 * `Symbol.for` mark, as undici does), so errors stay recognisable when a
 * library and a CLI each bring their own copy.
 */
export class ToolhostError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly callId: string | undefined;
  readonly [kToolhostError] = true;

  constructor(code: ErrorCode, message: string, options: { details?: unknown; callId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolhostError';
    this.code = code;
    this.details = options.details;
    this.callId = options.callId;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kToolhostError] === true;
  }

  /** Rebuild an error from data that crossed a boundary. */
  static fromData(data: ToolErrorData): ToolhostError {
    return new ToolhostError(data.code, data.message, { details: data.details, callId: data.callId });
  }

  /** This error as plain data. */
  toData(): ToolErrorData {
    const data: ToolErrorData = { code: this.code, message: this.message };
    if (this.details !== undefined) data.details = this.details;
    if (this.callId !== undefined) data.callId = this.callId;
    return data;
  }

  toJSON(): ToolErrorData {
    return this.toData();
  }

  /** The same error, attributed to a call. */
  withCallId(callId: string): ToolhostError {
    if (this.callId === callId) return this;
    return new ToolhostError(this.code, this.message, { details: this.details, callId, cause: this.cause });
  }
}

/**
 * Turn anything thrown into error data. Unknown errors become INTERNAL with
 * their message; a stack trace never becomes part of the message.
 */
export function toErrorData(error: unknown, callId?: string): ToolErrorData {
  let data: ToolErrorData;
  if (error instanceof ToolhostError) {
    data = error.toData();
  } else if (isErrorDataLike(error)) {
    data = { code: error.code, message: error.message };
    if (error.details !== undefined) data.details = error.details;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    data = { code: 'INTERNAL', message: `internal error: ${message}` };
  }
  if (callId !== undefined) data.callId = callId;
  return data;
}

function isErrorDataLike(value: unknown): value is ToolErrorData {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return isErrorCode(candidate.code) && typeof candidate.message === 'string';
}

/**
 * The error a tool throws to report a failure of its own. It becomes a
 * TOOL_ERROR whose details keep the tool's code: `{ code, details }`.
 */
export function toolError(code: string, message: string, details?: unknown): ToolhostError {
  return new ToolhostError('TOOL_ERROR', message, { details: details === undefined ? { code } : { code, details } });
}
