/**
 * The measuring loop: a fixed number of calls with at most N in flight, each
 * timed from the caller's side, after a warm-up; one row per concurrency,
 * with its ratio to the floor and what the calls' accounting says about
 * instances and memory.
 */
import { performance } from 'node:perf_hooks';
import type { CallAccounting } from '../core/result.js';
import type { BenchRow, InstanceShare, Isolation, MemoryFigures, RowKind } from './row.js';
import { mean, median, round3, summarize } from './statistics.js';

/** What one call told the loop. */
export interface CallOutcome {
  ok: boolean;
  /** Why it failed, when it did. */
  error?: string;
  accounting?: CallAccounting;
}

export type CallFn = () => Promise<CallOutcome>;

/** Something measured: a floor, a tool through the host, a peer runtime. */
export interface Subject {
  id: string;
  label: string;
  kind: RowKind;
  tool?: string;
  isolation?: Isolation;
  /** Calls per row (after the warm-up). */
  calls: number;
  call: CallFn;
  /** Worker threads behind it, for the RSS-per-worker figure (0: runs on this thread). */
  threads: number;
  /** Process RSS (bytes) before the subject's workers were started, when the caller took it. */
  rssBefore?: number;
}

interface Measurement {
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
        outcome = { ok: false, error: error instanceof Error ? error.message : String(error) };
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

const MIB = 1024 * 1024;

function instanceShare(accountings: CallAccounting[]): InstanceShare | undefined {
  const counts: InstanceShare = { fresh: 0, prewarmed: 0, restored: 0, reused: 0 };
  let counted = 0;
  for (const accounting of accountings) {
    if (accounting.instance === undefined) continue;
    counts[accounting.instance] += 1;
    counted += 1;
  }
  if (counted === 0) return undefined;
  const pct = (n: number): number => Math.round((n / counted) * 1000) / 10;
  return { fresh: pct(counts.fresh), prewarmed: pct(counts.prewarmed), restored: pct(counts.restored), reused: pct(counts.reused) };
}

/** What every row says of its subject. */
export function subjectFields(subject: Subject): Pick<BenchRow, 'id' | 'label' | 'kind' | 'tool' | 'isolation'> {
  return {
    id: subject.id,
    label: subject.label,
    kind: subject.kind,
    ...(subject.tool === undefined ? {} : { tool: subject.tool }),
    ...(subject.isolation === undefined ? {} : { isolation: subject.isolation }),
  };
}

/** The floor's rows by concurrency, for the ratio columns (empty while the floor itself runs). */
export type FloorRows = ReadonlyMap<number, BenchRow>;

/**
 * The warm-up before a subject's rows: as many calls as a row, up to 2000. V8 takes about
 * that many to settle the code of a sandboxed call (main thread and workers). Measured on
 * C echo, p50 after 200 warm-up calls vs 2000: 0.173 vs 0.111 ms (call isolation), 0.133
 * vs 0.086 ms (worker).
 */
export function warmupCalls(calls: number): number {
  return Math.min(2000, Math.max(10, calls));
}

/**
 * Warm the subject up (at the highest concurrency, so every worker has loaded
 * what it runs, and long enough for the JIT to settle), then one row per concurrency. A warm-up that fails throws:
 * a subject that cannot run one call has nothing to measure.
 */
export async function runSubject(subject: Subject, concurrencies: readonly number[], floor: FloorRows): Promise<BenchRow[]> {
  const warm = await measure(subject.call, warmupCalls(subject.calls), Math.max(...concurrencies));
  if (warm.errors > 0) throw new Error(`${subject.label}: the warm-up failed: ${warm.firstError ?? 'unknown error'}`);
  const rssWarm = process.memoryUsage.rss();

  const rows: BenchRow[] = [];
  const accountings: CallAccounting[] = [];
  for (const concurrency of concurrencies) {
    const m = await measure(subject.call, subject.calls, concurrency);
    accountings.push(...m.accountings);
    const summary = summarize(m.latencies);
    const callsPerSec = (subject.calls / m.elapsedMs) * 1000;
    const base = floor.get(concurrency);
    const row: BenchRow = {
      ...subjectFields(subject),
      concurrency,
      calls: subject.calls,
      errors: m.errors,
      ...summary,
      p50Ms: round3(summary.p50Ms),
      p99Ms: round3(summary.p99Ms),
      meanMs: round3(summary.meanMs),
      callsPerSec: Math.round(callsPerSec),
      p50VsFloor: base ? round3(summary.p50Ms / base.p50Ms) : 1,
      throughputVsFloor: base ? round3(callsPerSec / base.callsPerSec) : 1,
    };
    if (m.firstError !== undefined) row.firstError = m.firstError;
    const instances = instanceShare(m.accountings);
    if (instances) {
      row.instances = instances;
      row.instantiateMs = round3(mean(m.accountings.map((a) => a.instantiateMs ?? 0)));
    }
    rows.push(row);
  }

  const memory: MemoryFigures = {};
  if (subject.rssBefore !== undefined && subject.threads > 0) {
    memory.rssPerWorkerMb = round3((rssWarm - subject.rssBefore) / subject.threads / MIB);
  }
  const linear = accountings.map((a) => a.peakMemoryBytes).filter((bytes): bytes is number => bytes !== undefined);
  if (linear.length > 0) memory.instanceMemoryMb = round3(median(linear) / MIB);
  memory.rssGrowthMb = round3((process.memoryUsage.rss() - rssWarm) / MIB);
  memory.growthCalls = subject.calls * concurrencies.length;
  for (const row of rows) row.memory = memory;
  return rows;
}
