/**
 * The performance targets of issue 10 (P1-P5, and M: memory) and issue 37's D4 (a
 * componentize-js call against the floor), checked against one run's
 * rows. A target whose rows are missing (a skipped build, a filtered run) is
 * reported as not measured, never as met.
 *
 * The ratio targets (P1, P2, P4) read the paired phase when it ran (paired.ts:
 * the floor measured in blocks alternating with the subject's), and then the
 * median of the per-round ratios, which one unlucky round cannot move; without
 * it, the sequential rows.
 */
import type { BenchReport, BenchRow, GrowthCheck, PairedRow } from './row.js';
import { spread, type RatioSpread } from './statistics.js';

export interface TargetCheck {
  id: string;
  goal: string;
  /** What was measured, in words and numbers. */
  measured: string;
  /** undefined: not measured in this run. */
  met?: boolean;
  /** Where a ratio target's figures came from, when the paired phase ran: `paired, K rounds`. */
  basis?: string;
}

const SATURATION = 8;

function find(report: BenchReport, id: string, concurrency: number): BenchRow | undefined {
  return report.rows.find((row) => row.id === id && row.concurrency === concurrency);
}

const x = (value: number): string => `${value.toFixed(2)}x`;
const msText = (value: number): string => `${value.toFixed(3)} ms`;

function findPaired(report: BenchReport, id: string, concurrency: number): PairedRow | undefined {
  return report.paired?.rows.find((row) => row.id === id && row.concurrency === concurrency);
}

const basis = (report: BenchReport): string => `paired, ${report.paired?.rounds ?? 0} rounds`;
const range = (s: RatioSpread): string => `per round ${x(s.min)}-${x(s.max)}`;

function notMeasured(id: string, goal: string, missing: string): TargetCheck {
  return { id, goal, measured: `not measured (${missing})` };
}

function p1(report: BenchReport): TargetCheck {
  const goal = 'default isolation, C echo, concurrency 1: p50 <= 1.5x the floor, and <= Extism runInWorker';
  const paired = findPaired(report, 'toolhost:echo:call', 1);
  if (paired) return p1Paired(report, goal, paired);
  const row = find(report, 'toolhost:echo:call', 1);
  if (!row) return notMeasured('P1', goal, 'no C echo isolation=call row');
  const extism = find(report, 'extism:worker', 1);
  const againstFloor = row.p50VsFloor <= 1.5;
  const againstExtism = extism === undefined ? undefined : row.p50Ms <= extism.p50Ms;
  const measured = `p50 ${msText(row.p50Ms)} = ${x(row.p50VsFloor)} the floor` + (extism ? `; Extism ${msText(extism.p50Ms)} (${x(row.p50Ms / extism.p50Ms)})` : '; Extism row skipped');
  return { id: 'P1', goal, measured, met: againstFloor && againstExtism !== false };
}

function p1Paired(report: BenchReport, goal: string, row: PairedRow): TargetCheck {
  const ratio = row.p50VsFloorPerRound;
  let measured = `p50 ${msText(row.p50Ms)}, floor ${msText(row.floorP50Ms)}: ${x(ratio.median)} the floor (median of the per-round ratios, ${range(ratio)}; pooled ${x(row.p50VsFloor)})`;
  const extism = findPaired(report, 'extism:worker', 1);
  let againstExtism: boolean | undefined;
  if (extism) {
    // The same round's floor block divides both, so the ratio of their ratios is C echo's p50 over Extism's in that round.
    const perRound = spread(row.rounds.flatMap((r) => {
      const e = extism.rounds.find((other) => other.round === r.round);
      return e ? [r.p50VsFloor / e.p50VsFloor] : [];
    }));
    againstExtism = perRound.median <= 1;
    measured += `; Extism p50 ${msText(extism.p50Ms)}, C echo / Extism ${x(perRound.median)} (median per round, ${range(perRound)})`;
  } else {
    measured += '; Extism not in the paired phase';
  }
  return { id: 'P1', goal, measured, met: ratio.median <= 1.5 && againstExtism !== false, basis: basis(report) };
}

function p2(report: BenchReport): TargetCheck {
  const goal = `default isolation at saturation (${SATURATION} in flight): throughput >= 0.7x the floor's`;
  const paired = findPaired(report, 'toolhost:echo:call', SATURATION);
  if (paired) {
    const ratio = paired.throughputVsFloorPerRound;
    const measured = `${paired.callsPerSec} calls/s, floor ${paired.floorCallsPerSec}: ${x(ratio.median)} the floor's (median of the per-round ratios, ${range(ratio)}; pooled ${x(paired.throughputVsFloor)})`;
    return { id: 'P2', goal, measured, met: ratio.median >= 0.7, basis: basis(report) };
  }
  const row = find(report, 'toolhost:echo:call', SATURATION);
  if (!row) return notMeasured('P2', goal, `no C echo isolation=call row at concurrency ${SATURATION}`);
  return { id: 'P2', goal, measured: `${row.callsPerSec} calls/s = ${x(row.throughputVsFloor)} the floor's`, met: row.throughputVsFloor >= 0.7 };
}

function p3(report: BenchReport): TargetCheck {
  const goal = `componentize-js js_echo, default isolation: p50 <= 2 ms at concurrency 1, >= 400 calls/s at ${SATURATION}`;
  const one = find(report, 'toolhost:js_echo:call', 1);
  const sat = find(report, 'toolhost:js_echo:call', SATURATION);
  if (!one || !sat) return notMeasured('P3', goal, `no js_echo isolation=call rows at concurrency 1 and ${SATURATION}`);
  return { id: 'P3', goal, measured: `p50 ${msText(one.p50Ms)}; ${sat.callsPerSec} calls/s`, met: one.p50Ms <= 2 && sat.callsPerSec >= 400 };
}

function p4(report: BenchReport): TargetCheck {
  const goal = 'reused-instance modes (worker, conversation), C echo, concurrency 1: p50 <= 1.2x the floor';
  const paired = ['worker', 'conversation'].map((mode) => findPaired(report, `toolhost:echo:${mode}`, 1)).filter((row): row is PairedRow => row !== undefined);
  if (paired.length > 0) {
    const measured = paired.map((row) => `${row.isolation}: p50 ${msText(row.p50Ms)}, floor ${msText(row.floorP50Ms)}: ${x(row.p50VsFloorPerRound.median)} (${range(row.p50VsFloorPerRound)}; pooled ${x(row.p50VsFloor)})`).join('; ');
    return { id: 'P4', goal, measured: `${measured} (medians of the per-round ratios)`, met: paired.every((row) => row.p50VsFloorPerRound.median <= 1.2), basis: basis(report) };
  }
  const rows = ['worker', 'conversation'].map((mode) => find(report, `toolhost:echo:${mode}`, 1)).filter((row): row is BenchRow => row !== undefined);
  if (rows.length === 0) return notMeasured('P4', goal, 'no C echo worker or conversation rows');
  const measured = rows.map((row) => `${row.isolation}: p50 ${msText(row.p50Ms)} = ${x(row.p50VsFloor)}`).join('; ');
  return { id: 'P4', goal, measured, met: rows.every((row) => row.p50VsFloor <= 1.2) };
}

function p5(report: BenchReport): TargetCheck {
  const goal = 'budgets stopped within budget + 10 ms at p99; a second process start is served from the transpile cache';
  const parts: string[] = [];
  let met: boolean | undefined;
  if (report.budgets.length > 0) {
    const worst = report.budgets.reduce((a, b) => (b.p99Ms > a.p99Ms ? b : a));
    const wrong = report.budgets.reduce((sum, row) => sum + row.wrong, 0);
    parts.push(`worst overshoot p99 ${msText(worst.p99Ms)} (${worst.kind} ${worst.budgetMs} ms)${wrong > 0 ? `, ${wrong} calls ended otherwise` : ''}`);
    met = report.budgets.every((row) => row.p99Ms <= 10) && wrong === 0;
  }
  const second = report.coldStarts.filter((start, index, all) => all.findIndex((s) => s.tool === start.tool) !== index);
  if (second.length > 0) {
    const hits = second.filter((start) => start.cache === 'hit').length;
    parts.push(`second starts from the cache: ${hits}/${second.length}`);
    met = (met ?? true) && hits === second.length;
  }
  if (parts.length === 0) return notMeasured('P5', goal, 'budget rows and cold starts skipped');
  return { id: 'P5', goal, measured: parts.join('; '), ...(met === undefined ? {} : { met }) };
}

/** Growth allowed per 100,000 calls (least-squares slope over the second half of the check): RSS, and the main thread's and the workers' heaps after forced GCs. */
export const GROWTH_LIMITS = { rssMbPer100k: 4, heapMbPer100k: 1 };

function memory(report: BenchReport): TargetCheck {
  const goal = `memory: RSS per worker and per kept instance reported; no growth over 100,000 calls (RSS slope <= ${GROWTH_LIMITS.rssMbPer100k} MiB, main heap and worker heaps <= ${GROWTH_LIMITS.heapMbPer100k} MiB each per 100,000, after forced GCs)`;
  const checks = (report.growth ?? []).filter((check) => check.calls >= 100_000);
  if (checks.length === 0) return notMeasured('M', goal, 'no no-growth check of 100,000 calls');
  const kept = (report.kept ?? []).map((k) => `${k.rssPerInstanceMb.toFixed(2)} MiB per kept instance (${k.label.split(',')[0]})`);
  const measured = checks
    .map((c) => `${c.label}: over the second half of ${c.calls} calls RSS ${c.rssGrowthMb.toFixed(1)} MiB (slope ${c.rssSlopeMbPer100k.toFixed(1)} MiB/100k), main heap ${c.heapGrowthMb.toFixed(2)} MiB (slope ${c.heapSlopeMbPer100k.toFixed(2)}), ${workerHeaps(c)}${c.errors > 0 ? `, ${c.errors} failed calls` : ''}`)
    .concat(kept)
    .join('; ');
  const met = checks.every(
    (c) =>
      c.errors === 0 &&
      c.gcForced &&
      c.workerGcForced &&
      c.rssSlopeMbPer100k <= GROWTH_LIMITS.rssMbPer100k &&
      c.heapSlopeMbPer100k <= GROWTH_LIMITS.heapMbPer100k &&
      (c.workerHeapSlopeMbPer100k ?? Infinity) <= GROWTH_LIMITS.heapMbPer100k,
  );
  return { id: 'M', goal, measured, met };
}

function workerHeaps(check: GrowthCheck): string {
  if (!check.workerGcForced || check.workerHeapGrowthMb === undefined || check.workerHeapSlopeMbPer100k === undefined) return 'worker heaps not collected';
  return `worker heaps ${check.workerHeapGrowthMb.toFixed(2)} MiB (slope ${check.workerHeapSlopeMbPer100k.toFixed(2)})`;
}

/** Issue 37's D4: a componentize-js call against the floor, paired as P1 is. */
function d4(report: BenchReport): TargetCheck {
  const goal = 'componentize-js js_echo, default isolation, concurrency 1: p50 <= 5x the floor (issue 37, D4)';
  const paired = findPaired(report, 'toolhost:js_echo:call', 1);
  if (paired) {
    const ratio = paired.p50VsFloorPerRound;
    const measured = `p50 ${msText(paired.p50Ms)}, floor ${msText(paired.floorP50Ms)}: ${x(ratio.median)} the floor (median of the per-round ratios, ${range(ratio)}; pooled ${x(paired.p50VsFloor)})`;
    return { id: 'D4', goal, measured, met: ratio.median <= 5, basis: basis(report) };
  }
  const row = find(report, 'toolhost:js_echo:call', 1);
  if (!row) return notMeasured('D4', goal, 'no js_echo isolation=call row at concurrency 1');
  return { id: 'D4', goal, measured: `p50 ${msText(row.p50Ms)} = ${x(row.p50VsFloor)} the floor`, met: row.p50VsFloor <= 5 };
}

export function checkTargets(report: BenchReport): TargetCheck[] {
  return [p1(report), p2(report), p3(report), p4(report), p5(report), memory(report), d4(report)];
}

/**
 * The exit code of a benchmark run: 1 when a call failed or a target was measured and missed (`met: false`; a target
 * not measured is not a miss), else 0. What `npm run bench` (`toolhost bench`) exits with.
 */
export function benchExitCode(failedCalls: boolean, targets: readonly TargetCheck[] = []): number {
  return failedCalls || targets.some((target) => target.met === false) ? 1 : 0;
}
