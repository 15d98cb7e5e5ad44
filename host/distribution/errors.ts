/**
 * The errors of the distribution room, each a ToolhostError with one of the
 * three source codes and a `details.reason` that says what failed. Nothing
 * here decides anything: the callers choose the reason.
 */
import { ToolhostError } from '../base/errors.js';

/** Why a source was not trusted. */
export type UntrustedReason = 'no-trust' | 'unsigned' | 'untrusted-key' | 'untrusted-identity' | 'invalid-signature' | 'wrong-digest' | 'wrong-reference' | 'not-a-signature' | 'missing-attestation' | 'insecure' | 'not-allowed';
/** Why bytes were refused. */
export type IntegrityReason = 'digest-mismatch' | 'layout' | 'too-large';

/** SOURCE_UNTRUSTED: the source may not run (before any of its bytes were transpiled). */
export function untrusted(reason: UntrustedReason, source: string, message: string, extra: Record<string, unknown> = {}): ToolhostError {
  return new ToolhostError('SOURCE_UNTRUSTED', `${source}: ${message}`, { details: { reason, source, ...extra } });
}

/** SOURCE_INTEGRITY: the bytes are not what was pinned or published; nothing was stored. */
export function integrity(reason: IntegrityReason, source: string, message: string, extra: Record<string, unknown> = {}): ToolhostError {
  return new ToolhostError('SOURCE_INTEGRITY', `${source}: ${message}`, { details: { reason, source, ...extra } });
}

/** SOURCE_UNAVAILABLE: the source could not be fetched and the store does not hold it. */
export function unavailable(source: string, message: string, extra: Record<string, unknown> = {}, cause?: unknown): ToolhostError {
  return new ToolhostError('SOURCE_UNAVAILABLE', `${source}: ${message}`, { details: { source, ...extra }, ...(cause === undefined ? {} : { cause }) });
}
