/**
 * The report of `toolhost bench --scale N --distinct` (distinct.ts): its shape,
 * the goals D1-D5 of issue 37 checked against it, and the report as text and
 * as an HTML page, each target beside its measured value.
 */
import type { TargetCheck } from './targets.js';

interface Latency {
  p50: number;
  p99: number;
  n: number;
}

export interface DistinctReport {
  meta: { date: string; node: string; cores: number; cpu: string; loadAvg: number; threads: number; js: number; c: number; built: number; buildSeconds: number; notes: string[] };
  primeMs: number;
  transpiled: number;
  d1: { tools: number; readyMs: number; baseMb: number; rssMb: number; listMs: number };
  d2: { components: number; baseMb: number; calledMb: number; idleMb: number; calledPerToolMb: number; idlePerToolMb: number };
  /** `*Cpu`: the worker CPU p50 of the same calls (accounting.cpuMs), which queueing on a loaded machine does not inflate. */
  d3: { coldJs: Latency; secondJs: Latency; coldC: Latency; coldJsCpu: number; secondJsCpu: number };
  d4: { rounds: number; warmUpCalls: number; jsP50: number; jsCpuP50: number; floorP50: number; ratio: number; ratioMin: number; ratioMax: number };
  d5: {
    components: number;
    totalMb: number;
    distinctMb: number;
    engineMb: number;
    engineCarriers: number;
    meanDataMb: number;
    /** What the store and the cache hold on disk (blocks). */
    diskMb: number;
    /** What they would hold with each blob and each cache file whole (the layout before issue 37). */
    wholeMb: number;
  };
  targets: TargetCheck[];
}

/** The goals (issue 37). */
export const DISTINCT_LIMITS = { readyMs: 5000, rssMb: 1024, listMs: 50, calledMb: 6, idleMb: 3, coldMs: 50, secondMs: 2, floorRatio: 5, diskRatio: 2 };

export function checkDistinctTargets(report: Omit<DistinctReport, 'targets'>): TargetCheck[] {
  const { d1, d2, d3, d4, d5, meta } = report;
  const L = DISTINCT_LIMITS;
  return [
    {
      id: 'D1',
      goal: `${meta.js} distinct JS tools (+${meta.c} C) on one host: ready <= ${L.readyMs / 1000} s, RSS <= ${L.rssMb / 1024} GiB, tools/list <= ${L.listMs} ms (the issue's scale: 200)`,
      measured: `ready in ${(d1.readyMs / 1000).toFixed(2)} s, RSS ${d1.rssMb} MiB (${d1.baseMb} MiB before), tools/list of ${d1.tools} tools ${d1.listMs} ms`,
      met: d1.readyMs <= L.readyMs && d1.rssMb <= L.rssMb && d1.listMs <= L.listMs,
    },
    {
      id: 'D2',
      goal: `per distinct JS tool: <= ${L.calledMb} MiB after its first call, <= ${L.idleMb} MiB once idle-released`,
      measured: `${d2.calledPerToolMb} MiB after its first call, ${d2.idlePerToolMb} MiB once released (${d2.components} tools called once each, over the ${d2.baseMb} MiB of a started pool)`,
      met: d2.calledPerToolMb <= L.calledMb && d2.idlePerToolMb <= L.idleMb,
    },
    {
      id: 'D3',
      goal: `cold first call of a distinct JS tool p50 <= ${L.coldMs} ms (idle machine); second call p50 <= ${L.secondMs} ms`,
      measured: `cold p50 ${d3.coldJs.p50} ms (p99 ${d3.coldJs.p99}, n ${d3.coldJs.n}), second call p50 ${d3.secondJs.p50} ms (p99 ${d3.secondJs.p99}); worker CPU p50 ${d3.coldJsCpu} ms cold, ${d3.secondJsCpu} ms second; cold C p50 ${d3.coldC.p50} ms (n ${d3.coldC.n})`,
      met: d3.coldJs.p50 <= L.coldMs && d3.secondJs.p50 <= L.secondMs,
    },
    {
      id: 'D4',
      goal: `a distinct JS tool's hot call p50 within ${L.floorRatio}x the floor (bare pool round trip), paired (npm run bench's js_echo is the issue's figure)`,
      measured: `${d4.ratio.toFixed(2)}x (per round ${d4.ratioMin.toFixed(2)}-${d4.ratioMax.toFixed(2)}x over ${d4.rounds} rounds, after ${d4.warmUpCalls} warm-up calls): JS p50 ${d4.jsP50} ms (worker CPU p50 ${d4.jsCpuP50} ms), floor p50 ${d4.floorP50} ms`,
      met: d4.ratio <= L.floorRatio,
    },
    {
      id: 'D5',
      goal: `the store and the transpile cache hold the engine once: ${d5.components} distinct tools take <= ${L.diskRatio}x their distinct bytes on disk`,
      measured: `${d5.diskMb} MiB on disk for ${d5.distinctMb} MiB of distinct bytes (${(d5.diskMb / d5.distinctMb).toFixed(2)}x; components ${d5.totalMb} MiB in all, each whole blob + whole cache files would be ${d5.wholeMb} MiB); the engine's code section ${d5.engineMb} MiB carried by ${d5.engineCarriers}, a tool's heap image (data section) ${d5.meanDataMb} MiB`,
      met: d5.diskMb <= L.diskRatio * d5.distinctMb,
    },
  ];
}

const mark = (met: boolean | undefined): string => (met === undefined ? 'not measured' : met ? 'met' : 'MISSED');

function header(report: DistinctReport): string {
  const { meta } = report;
  return `toolhost bench --scale ${meta.js} --distinct: ${meta.date}, node ${meta.node}, ${meta.cores} cores (${meta.cpu}), load ${meta.loadAvg}, ${meta.threads} threads, thread containment; ${meta.js} JS + ${meta.c} C tools (${meta.built} built now in ${meta.buildSeconds} s, the rest from the bench's cache); transpile cache primed in ${(report.primeMs / 1000).toFixed(1)} s (${report.transpiled} transpiled)`;
}

export function formatDistinctReport(report: DistinctReport): string {
  return [
    header(report),
    ...report.meta.notes.map((note) => `note: ${note}`),
    '',
    ...report.targets.map((t) => `${t.id}  ${mark(t.met).padEnd(7)} target: ${t.goal}\n    measured: ${t.measured}`),
  ].join('\n');
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function renderDistinctHtml(report: DistinctReport): string {
  const rows = report.targets.map((t) => `<tr><td>${t.id}</td><td class="${t.met ? 'met' : 'missed'}">${mark(t.met)}</td><td>${escape(t.goal)}</td><td>${escape(t.measured)}</td></tr>`).join('');
  const notes = report.meta.notes.map((note) => `<li>${escape(note)}</li>`).join('');
  const data = JSON.stringify(report).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolhost bench --scale ${report.meta.js} --distinct</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}th{background:#f3f4f6}.met{color:#15803d;font-weight:600}.missed{color:#b91c1c;font-weight:600}</style></head>
<body><h1>toolhost bench --scale ${report.meta.js} --distinct</h1>
<p>${escape(header(report))}</p><ul>${notes}</ul>
<h2>Targets</h2><table><thead><tr><th>id</th><th>status</th><th>target</th><th>measured</th></tr></thead><tbody>${rows}</tbody></table>
<script type="application/json" id="bench-data">${data}</script>
</body></html>
`;
}
