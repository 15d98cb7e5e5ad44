/**
 * Retries of transient failures. Only TOOL_CRASHED and OVERLOADED are retried,
 * only for tools marked idempotent, at most `max_retries` times, with
 * exponential backoff and jitter: attempt n (n ≥ 1) waits a random time in
 * [d/2, d], where d = min(capMs, baseMs × 2^(n−1)). Every attempt gets a fresh
 * instance (a crashed instance is discarded; an OVERLOADED call never ran).
 */
import { ToolhostError, TRANSIENT_CODES } from '../base/errors.js';

export interface RetryOptions {
  /** The first retry's nominal delay (ms). */
  baseMs: number;
  /** The longest delay between attempts (ms). */
  capMs: number;
}

export const DEFAULT_RETRY_OPTIONS: RetryOptions = { baseMs: 100, capMs: 2_000 };

/** The delay before retry number `retry` (1 for the first retry). */
export function backoffDelay(retry: number, options: RetryOptions, random: () => number = Math.random): number {
  const nominal = Math.min(options.capMs, options.baseMs * 2 ** (retry - 1));
  return nominal / 2 + random() * (nominal / 2);
}

export function isTransient(error: unknown): boolean {
  return error instanceof ToolhostError && TRANSIENT_CODES.has(error.code);
}

/** Wait `ms`, or reject with the signal's reason as soon as it aborts. */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
