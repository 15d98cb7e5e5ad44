/**
 * The benchmark as text: the machine, the rows (latency, throughput, ratio to
 * the floor, instances, memory), the paired phase, budget precision, cold
 * starts and the targets with their measured values. What `toolhost bench` prints.
 */
import type { BenchReport, BenchRow, BudgetRow, ColdStart, GrowthCheck, KeptInstances, PairedPhase } from './row.js';
import type { TargetCheck } from './targets.js';

const fixed = (value: number | undefined, digits = 3): string => (value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits));
const ratio = (value: number): string => `${value.toFixed(2)}x`;

/** Columns laid out with a left-aligned first column and right-aligned numbers; `groupBy` puts a blank line between groups. */
export function layout(header: string[], cells: string[][], groupBy?: (index: number) => string): string {
  const widths = header.map((title, col) => Math.max(title.length, ...cells.map((line) => line[col]!.length)));
  const render = (line: string[]): string => line.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('  ').trimEnd();
  const out = [render(header), widths.map((width) => '-'.repeat(width)).join('  ')];
  let previous: string | undefined;
  cells.forEach((line, index) => {
    const group = groupBy?.(index);
    if (previous !== undefined && group !== previous) out.push('');
    previous = group;
    out.push(render(line));
  });
  return out.join('\n');
}

function instances(row: BenchRow): string {
  if (!row.instances) return '-';
  const { fresh, prewarmed, restored, reused } = row.instances;
  return `${Math.round(fresh)}/${Math.round(prewarmed)}/${Math.round(restored ?? 0)}/${Math.round(reused)}`;
}

export function formatRows(rows: BenchRow[]): string {
  const header = ['row', 'conc', 'calls', 'err', 'p50 ms', 'p99 ms', 'calls/s', 'p50/floor', 'tput/floor', 'fresh/pre/rest/reuse %', 'inst ms', 'RSS/worker MiB', 'mem/inst MiB', 'RSS growth MiB'];
  const cells = rows.map((row) => [
    row.label,
    String(row.concurrency),
    String(row.calls),
    String(row.errors),
    fixed(row.p50Ms),
    fixed(row.p99Ms),
    String(row.callsPerSec),
    ratio(row.p50VsFloor),
    ratio(row.throughputVsFloor),
    instances(row),
    fixed(row.instantiateMs),
    fixed(row.memory?.rssPerWorkerMb, 1),
    fixed(row.memory?.instanceMemoryMb, 2),
    row.memory?.rssGrowthMb === undefined ? '-' : `${fixed(row.memory.rssGrowthMb, 1)}`,
  ]);
  return layout(header, cells, (index) => rows[index]!.id);
}

/** The paired phase: each row against the floor's blocks of the same rounds; ratios per round as min/median/max. */
export function formatPaired(phase: PairedPhase): string {
  const header = ['paired row', 'conc', 'calls', 'err', 'floor p50 ms', 'p50 ms', 'p50/floor per round min/med/max', 'pooled', 'calls/s', 'tput/floor per round min/med/max', 'pooled'];
  const spreadText = (s: { min: number; median: number; max: number }): string => `${s.min.toFixed(2)} / ${s.median.toFixed(2)} / ${s.max.toFixed(2)}`;
  const cells = phase.rows.map((row) => [
    row.label,
    String(row.concurrency),
    String(row.calls),
    String(row.errors),
    fixed(row.floorP50Ms),
    fixed(row.p50Ms),
    spreadText(row.p50VsFloorPerRound),
    ratio(row.p50VsFloor),
    String(row.callsPerSec),
    spreadText(row.throughputVsFloorPerRound),
    ratio(row.throughputVsFloor),
  ]);
  return layout(header, cells, (index) => String(phase.rows[index]!.concurrency));
}

export function formatBudgets(rows: BudgetRow[]): string {
  const header = ['budget', 'samples', 'wrong', 'overshoot p50 ms', 'overshoot p99 ms', 'max ms'];
  return layout(header, rows.map((row) => [`${row.kind} ${row.budgetMs} ms`, String(row.samples), String(row.wrong), fixed(row.p50Ms), fixed(row.p99Ms), fixed(row.maxMs)]));
}

export function formatColdStarts(starts: ColdStart[]): string {
  const header = ['first call of a new process', 'cache', 'process ms', 'import ms', 'load ms', 'first call ms', 'ok'];
  return layout(header, starts.map((s) => [`${s.tool} (${s.component})`, s.cache, fixed(s.processMs, 1), fixed(s.importMs, 1), fixed(s.loadMs, 1), fixed(s.firstCallMs, 1), s.ok ? 'yes' : `no: ${s.error ?? ''}`]));
}

export function formatGrowth(checks: GrowthCheck[], kept: KeptInstances[]): string {
  const parts: string[] = [];
  if (checks.length > 0) {
    const header = ['no-growth check', 'calls', 'conc', 'err', 'RSS before MiB', 'at half MiB', 'at end MiB', '2nd half: growth MiB', 'MiB/100k', 'heap growth MiB', 'heap MiB/100k', 'worker heaps growth MiB', 'worker heaps MiB/100k', 'GC forced (main/workers)'];
    parts.push(
      layout(
        header,
        checks.map((c) => [
          c.label,
          String(c.calls),
          String(c.concurrency),
          String(c.errors),
          fixed(c.rssBeforeMb, 1),
          fixed(c.rssHalfMb, 1),
          fixed(c.rssEndMb, 1),
          fixed(c.rssGrowthMb, 1),
          fixed(c.rssSlopeMbPer100k, 2),
          fixed(c.heapGrowthMb, 2),
          fixed(c.heapSlopeMbPer100k, 2),
          c.workerHeapGrowthMb === undefined ? '-' : fixed(c.workerHeapGrowthMb, 2),
          c.workerHeapSlopeMbPer100k === undefined ? '-' : fixed(c.workerHeapSlopeMbPer100k, 2),
          `${c.gcForced ? 'yes' : 'no'}/${c.workerGcForced ? 'yes' : 'no'}`,
        ]),
      ),
    );
  }
  if (kept.length > 0) {
    const header = ['kept instances', 'conversations', 'instances', 'RSS added MiB', 'RSS/instance MiB'];
    parts.push(layout(header, kept.map((k) => [k.label, String(k.conversations), String(k.instances), fixed(k.rssAddedMb, 1), fixed(k.rssPerInstanceMb, 2)])));
  }
  return parts.join('\n\n');
}

export function formatTargets(targets: TargetCheck[]): string {
  return targets
    .map((t) => `${t.id}  ${t.met === undefined ? '   -   ' : t.met ? ' met   ' : ' MISSED'}  target: ${t.goal}\n${' '.repeat(13)}measured${t.basis === undefined ? '' : ` (${t.basis})`}: ${t.measured}`)
    .join('\n');
}

const LEGEND = `p50/floor, tput/floor: against the floor row at the same concurrency.
fresh/pre/rest/reuse %: calls whose instance was created during the call, prepared while the worker was
  idle, reset to its snapshot while the worker was idle, or kept from an earlier call (accounting.instance);
  inst ms: mean accounting.instantiateMs.
RSS/worker: process RSS added by starting and warming the subject's pool, per thread; mem/inst: one
  instance's linear memory (accounting.peakMemoryBytes, median), what a kept instance holds beyond its JS;
  RSS growth: process RSS after the subject's rows minus after its warm-up.`;

export function formatReport(report: BenchReport, targets?: TargetCheck[]): string {
  const { meta } = report;
  const out = [
    'toolhost bench',
    `date     ${meta.date}`,
    `node     ${meta.node} (${meta.platform})`,
    `cpu      ${meta.cores} cores, ${meta.cpu}; load average ${meta.loadAvg.toFixed(2)} at start`,
    `pool     ${meta.threads} threads (host and floor); concurrency ${meta.concurrency.join(', ')}`,
    ...meta.notes.map((note) => `note     ${note}`),
    '',
    formatRows(report.rows),
    '',
    LEGEND,
  ];
  for (const row of report.rows) {
    if (row.errors > 0) out.push('', `${row.label} (concurrency ${row.concurrency}): ${row.errors} failed calls, first: ${row.firstError ?? '?'}`);
  }
  if (report.paired !== undefined) {
    const { rounds, callsPerBlock, settleCalls } = report.paired;
    out.push(
      '',
      `Paired (${rounds} rounds): the floor and these rows open at once, measured in alternating blocks of ${callsPerBlock} calls times the concurrency`,
      `(after ${settleCalls} unmeasured ones each), the order rotated every round; each ratio is against the floor's block of the same round.`,
      'The targets read the median of the per-round ratios.',
      '',
      formatPaired(report.paired),
    );
    for (const row of report.paired.rows) {
      if (row.errors > 0) out.push('', `paired: ${row.label} (concurrency ${row.concurrency}): ${row.errors} failed calls, first: ${row.firstError ?? '?'}`);
    }
  }
  if (report.budgets.length > 0) {
    out.push('', 'Enforcement precision (a guest spinning forever; wall: call time past budget_wall_ms; cpu: thread CPU time', 'past budget_cpu_ms when the watchdog stopped it).', '', formatBudgets(report.budgets));
  }
  if (report.coldStarts.length > 0) out.push('', formatColdStarts(report.coldStarts));
  if ((report.growth?.length ?? 0) + (report.kept?.length ?? 0) > 0) {
    out.push('', 'Memory over many calls: RSS, the main heap and the worker heaps after forced GCs (main thread and every worker)', 'at every tenth of the run; growth and slope over the second half (V8 pages and malloc arenas settle in the first);', 'RSS a kept instance adds (conversation isolation, one per conversation and worker).', '', formatGrowth(report.growth ?? [], report.kept ?? []));
  }
  if (targets !== undefined) out.push('', 'Targets', '', formatTargets(targets));
  return out.join('\n');
}
