/**
 * A subject's rows: a warm-up, then a fixed number of calls per concurrency
 * (see measure.ts); one row per concurrency, with its ratio to the floor and
 * what the calls' accounting says about instances and memory.
 */
import type { CallAccounting } from '../core/result.js';
import { measure, warmUp, warmUpFailure, warmupCalls, type CallFn, type WarmUp } from './measure.js';
import type { BenchRow, InstanceShare, Isolation, MemoryFigures, RowKind } from './row.js';
import { mean, median, round3, summarize } from './statistics.js';

export type { CallFn, CallOutcome } from './measure.js';

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
  /**
   * For a subject whose speed depends on how many calls it has served (a peer
   * that slows down as it ages): start afresh. The paired phase then measures
   * each block on a new one, warmed with `renewWarmUpCalls` calls first.
   */
  renew?(): Promise<void>;
  renewWarmUpCalls?: number;
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

/** What a row says of its subject's warm-up. */
export function warmUpFields(warm: WarmUp): Pick<BenchRow, 'warmUpCalls' | 'warmUpUnsettled'> {
  return warm.settled ? { warmUpCalls: warm.calls } : { warmUpCalls: warm.calls, warmUpUnsettled: true };
}

/**
 * Warm the subject up (at the highest concurrency, so every worker has loaded
 * what it runs, and until its rate settles: see warmUp), then one row per concurrency. A warm-up that fails throws:
 * a subject that cannot run one call has nothing to measure.
 */
export async function runSubject(subject: Subject, concurrencies: readonly number[], floor: FloorRows): Promise<BenchRow[]> {
  const warm = await warmUp(subject.call, warmupCalls(subject.calls), Math.max(...concurrencies));
  if (warm.errors > 0) throw warmUpFailure(subject.label, warm.firstError);
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
      ...warmUpFields(warm),
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
