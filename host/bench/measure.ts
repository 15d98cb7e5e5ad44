/**
 * The measuring loop (a fixed number of calls with at most N in flight, each
 * timed from the caller's side) and the warm-up that precedes every
 * measurement: calls until the subject's rate stops rising.
 */
import { performance } from 'node:perf_hooks';
import { ToolhostError, isErrorCode } from '../base/errors.js';
import type { CallAccounting } from '../core/result.js';

/** What one call told the loop. */
export interface CallOutcome {
  ok: boolean;
  /** Why it failed, when it did. */
  error?: string;
  accounting?: CallAccounting;
}

export type CallFn = () => Promise<CallOutcome>;

export interface Measurement {
  latencies: Float64Array;
  elapsedMs: number;
  errors: number;
  firstError?: string;
  accountings: CallAccounting[];
}

/**
 * Run `calls` calls with at most `concurrency` in flight: that many lanes,
 * each starting its next call as soon as its previous one ends.
 */
export async function measure(call: CallFn, calls: number, concurrency: number): Promise<Measurement> {
  const latencies = new Float64Array(calls);
  const accountings: CallAccounting[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const lane = async (): Promise<void> => {
    while (next < calls) {
      const index = next++;
      const t0 = performance.now();
      let outcome: CallOutcome;
      try {
        outcome = await call();
      } catch (error) {
        // A refused call (execute throws it) keeps its code: a warm-up that fails says why in it (warmUpFailure).
        outcome = { ok: false, error: error instanceof ToolhostError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error) };
      }
      latencies[index] = performance.now() - t0;
      if (!outcome.ok) {
        errors += 1;
        firstError ??= outcome.error ?? 'unknown error';
      }
      if (outcome.accounting) accountings.push(outcome.accounting);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, calls)) }, lane));
  const result: Measurement = { latencies, elapsedMs: performance.now() - start, errors, accountings };
  if (firstError !== undefined) result.firstError = firstError;
  return result;
}

/**
 * The least warm-up before a subject's rows: four rows' worth of calls, up to
 * 8,000 (warmUp goes on until the rate settles). C echo's rate at 8 in
 * flight was still rising at 6,000 calls, from 2,500 to 16,000 calls/s, and
 * steady from about 8,000; the floor's, from about 7,000.
 */
export function warmupCalls(calls: number): number {
  return Math.min(8000, Math.max(10, calls * 4));
}

/** What a warm-up did. */
export interface WarmUp {
  /** Calls made. */
  calls: number;
  /** Whether the rate stopped rising before the time cap. */
  settled: boolean;
  errors: number;
  firstError?: string;
}

/** A block no more than this much faster than the best block before it means the rate has stopped rising. */
const STEADY_GAIN = 1.1;
/** Blocks in a row that must find the rate steady (one may be a slow block by chance). */
const STEADY_BLOCKS = 2;
/** A warm-up stops at this, settled or not (ms)... */
const WARM_UP_CAP_MS = 5_000;
/** ...or sooner for short rows: this much per call of the least warm-up (a 2,000-call row's 8,000 get the whole cap). */
const WARM_UP_MS_PER_CALL = 0.625;

/** How long a warm-up of at least `minCalls` calls may go on for its rate to settle (ms). */
export function warmUpCapMs(minCalls: number): number {
  return Math.max(200, Math.min(WARM_UP_CAP_MS, minCalls * WARM_UP_MS_PER_CALL));
}

/**
 * Warm a subject up until its rate stops rising: blocks of calls at
 * `concurrency`, at least `minCalls` in all, until two blocks in a row are no
 * more than STEADY_GAIN faster than the best one before them (or WARM_UP_CAP_MS passed).
 * A fixed count was not enough: on a 2-vCPU VM, V8's compiler threads were
 * still busy for a sandboxed call's code (main thread and workers) well past
 * 2,000 calls, at 25-30 µs of their CPU a call, and C echo's rate at 8 in
 * flight went 7k, 12k, 16k, 16k, 15k, 20k calls/s in blocks of 2,000 after
 * that many. A steady rate is what a long-running host sees.
 */
export async function warmUp(call: CallFn, minCalls: number, concurrency: number, capMs = warmUpCapMs(minCalls)): Promise<WarmUp> {
  const block = Math.max(100, Math.ceil(minCalls / 4));
  const start = performance.now();
  const rates: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  for (;;) {
    const m = await measure(call, block, concurrency);
    errors += m.errors;
    firstError ??= m.firstError;
    rates.push(block / m.elapsedMs);
    const calls = rates.length * block;
    const settled = calls >= minCalls && rateSettled(rates);
    // The least calls are always made; past them, the cap ends a rate that keeps moving.
    if (settled || errors > 0 || (calls >= minCalls && performance.now() - start >= capMs)) {
      return { calls, settled, errors, ...(firstError === undefined ? {} : { firstError }) };
    }
  }
}

/** Whether the last STEADY_BLOCKS blocks' rates were each no more than STEADY_GAIN above the best rate before them. */
export function rateSettled(rates: readonly number[]): boolean {
  if (rates.length <= STEADY_BLOCKS) return false;
  for (let i = rates.length - STEADY_BLOCKS; i < rates.length; i += 1) {
    const best = Math.max(...rates.slice(0, i));
    if (rates[i]! > best * STEADY_GAIN) return false;
  }
  return true;
}

/**
 * The error of a subject whose warm-up failed: the first call's own code
 * (INVALID_INPUT for `--args` the tool's schema refuses, say), or
 * TOOL_CRASHED when it had none; never INTERNAL, it is not the bench's fault.
 */
export function warmUpFailure(label: string, firstError: string | undefined): ToolhostError {
  const error = firstError ?? 'unknown error';
  const code = /^([A-Z_]+): /.exec(error)?.[1];
  const hint = code === 'INVALID_INPUT' ? ' (pass --args with JSON its input schema accepts)' : '';
  return new ToolhostError(code !== undefined && isErrorCode(code) && code !== 'INTERNAL' ? code : 'TOOL_CRASHED', `${label}: the warm-up failed: ${error}${hint}`);
}
