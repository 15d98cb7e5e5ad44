/**
 * Call ids: what a caller may name a call, and how many finished ids the host
 * remembers (for Cancel's ALREADY_COMPLETED).
 *
 * A call id is 1 to `maxLength` (default 128) visible ASCII characters
 * (0x21-0x7E): a UUID fits, and an id is safe in a header, a log line and a
 * metric. Every entry point (library, CLI, MCP, gRPC) goes through admission's
 * `ids` stage, which refuses anything else with INVALID_INPUT; the gRPC adapter
 * checks first so that a refused id is never echoed back.
 */
import { ToolhostError } from '../../base/errors.js';

export const DEFAULT_MAX_CALL_ID_LENGTH = 128;
/** Bytes of finished call ids remembered (default 1 MiB: ~7,700 UUIDs, counted as 2 bytes a character plus 64 an entry). */
export const DEFAULT_REMEMBERED_CALL_ID_BYTES = 1024 * 1024;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

export interface CallIdLimits {
  /** Longest accepted call id, in characters (default 128). */
  maxLength: number;
  /** Bytes of finished call ids remembered for ALREADY_COMPLETED (default 1 MiB). */
  rememberedBytes: number;
}

export const DEFAULT_CALL_ID_LIMITS: Readonly<CallIdLimits> = Object.freeze({
  maxLength: DEFAULT_MAX_CALL_ID_LENGTH,
  rememberedBytes: DEFAULT_REMEMBERED_CALL_ID_BYTES,
});

/** Why `callId` is not usable, or undefined when it is. */
export function callIdProblem(callId: unknown, maxLength: number = DEFAULT_MAX_CALL_ID_LENGTH): string | undefined {
  if (typeof callId !== 'string') return 'callId must be a string';
  if (callId.length === 0) return 'callId must not be empty';
  if (callId.length > maxLength) return `callId is ${callId.length} characters long; at most ${maxLength} are accepted`;
  if (!VISIBLE_ASCII.test(callId)) return 'callId must be visible ASCII characters (0x21-0x7E): letters, digits and punctuation, no spaces';
  return undefined;
}

/** Throw INVALID_INPUT unless `callId` is usable. */
export function checkCallId(callId: unknown, maxLength?: number): asserts callId is string {
  const problem = callIdProblem(callId, maxLength);
  if (problem !== undefined) throw new ToolhostError('INVALID_INPUT', problem, { details: { reason: 'call_id' } });
}
