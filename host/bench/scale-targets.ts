/**
 * The scale scenario's report (scale.ts): its shape, the issue's goals S1-S4
 * checked against it, and the report as text and as an HTML page.
 */
import type { TargetCheck } from './targets.js';

interface Latency {
  p50: number;
  p99: number;
  n: number;
}

export interface ScaleReport {
  meta: { date: string; node: string; cores: number; cpu: string; loadAvg: number; threads: number; components: number; notes: string[] };
  /** Loading every component once to fill the transpile cache (a warm cache only reads). */
  primeMs: number;
  /** Components the priming transpiled (0 with a warm cache). */
  transpiled: number;
  s1: { components: number; baseMb: number; calledMb: number; idleMb: number; calledPerComponentMb: number; idlePerComponentMb: number };
  s2: { readyMs: number; baseMb: number; rssMb: number; tools: number; listMs: number };
  s3: { coldC: Latency; coldJs: Latency; hotC: Latency; hotJs: Latency };
  s4: {
    components: number;
    calls: number;
    failed: number;
    errors: string[];
    seconds: number;
    evictions: number;
    reinstantiated: number;
    metricsEvictions: number;
    metricsReinstantiations: number;
    peakRssMb: number;
    budgetMb: number;
  };
  targets: TargetCheck[];
}

/** The issue's goals (issue 28). */
export const SCALE_LIMITS = { idleMbPerComponent: 3, readyMs: 5000, rssMb: 2048, listMs: 50, coldCMs: 50, coldJsMs: 150 };

export function checkScaleTargets(report: Omit<ScaleReport, 'targets'>): TargetCheck[] {
  const { s1, s2, s3, s4 } = report;
  const L = SCALE_LIMITS;
  return [
    {
      id: 'S1',
      goal: `an idle JS component costs <= ${L.idleMbPerComponent} MiB of RSS`,
      measured: `${s1.idlePerComponentMb} MiB a component once released (${s1.components} JS components called once each; ${(s1.idleMb - s1.baseMb).toFixed(0)} MiB over the ${s1.baseMb} MiB of a started pool; right after the last call ${s1.calledPerComponentMb} MiB a component, the first ones released already)`,
      met: s1.idlePerComponentMb <= L.idleMbPerComponent,
    },
    {
      id: 'S2',
      goal: `${report.meta.components} components: ready <= ${L.readyMs / 1000} s (warm cache), RSS <= ${L.rssMb / 1024} GiB, tools/list <= ${L.listMs} ms`,
      measured: `ready in ${(s2.readyMs / 1000).toFixed(2)} s, RSS ${s2.rssMb} MiB, tools/list of ${s2.tools} tools ${s2.listMs} ms`,
      met: s2.readyMs <= L.readyMs && s2.rssMb <= L.rssMb && s2.listMs <= L.listMs,
    },
    {
      id: 'S3',
      goal: `a cold first call p50 <= ${L.coldCMs} ms (C), <= ${L.coldJsMs} ms (JS)`,
      measured: `cold C p50 ${s3.coldC.p50} ms (p99 ${s3.coldC.p99}), cold JS p50 ${s3.coldJs.p50} ms (p99 ${s3.coldJs.p99}); hot C p50 ${s3.hotC.p50} ms, hot JS p50 ${s3.hotJs.p50} ms`,
      met: s3.coldC.p50 <= L.coldCMs && s3.coldJs.p50 <= L.coldJsMs,
    },
    {
      id: 'S4',
      goal: 'a working set over the budget: no call fails, evictions and re-instantiations reported (accounting, /metrics)',
      measured: `${s4.calls} calls over ${s4.components} JS components (budget ${s4.budgetMb} MiB): ${s4.failed} failed; ${s4.evictions} evictions, ${s4.reinstantiated} re-instantiations in accounting, ${s4.metricsEvictions} / ${s4.metricsReinstantiations} in /metrics; peak RSS ${s4.peakRssMb} MiB`,
      met: s4.failed === 0 && s4.evictions > 0 && s4.reinstantiated > 0 && s4.metricsEvictions === s4.evictions && s4.metricsReinstantiations === s4.reinstantiated,
    },
  ];
}

const mark = (met: boolean | undefined): string => (met === undefined ? 'not measured' : met ? 'met' : 'MISSED');

export function formatScaleReport(report: ScaleReport): string {
  const { meta } = report;
  const lines = [
    `toolhost bench --scale ${meta.components}: ${meta.date}, node ${meta.node}, ${meta.cores} cores (${meta.cpu}), load ${meta.loadAvg}, ${meta.threads} threads, thread containment`,
    `transpile cache primed in ${(report.primeMs / 1000).toFixed(1)} s (${report.transpiled} transpiled), in a process of its own`,
    ...meta.notes.map((note) => `note: ${note}`),
    '',
    ...report.targets.map((t) => `${t.id}  ${mark(t.met).padEnd(7)} goal: ${t.goal}\n    measured: ${t.measured}`),
  ];
  if (report.s4.errors.length > 0) lines.push(`S4 errors: ${report.s4.errors.join(' | ')}`);
  return lines.join('\n');
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function renderScaleHtml(report: ScaleReport): string {
  const rows = report.targets.map((t) => `<tr><td>${t.id}</td><td class="${t.met ? 'met' : 'missed'}">${mark(t.met)}</td><td>${escape(t.goal)}</td><td>${escape(t.measured)}</td></tr>`).join('');
  const { s3 } = report;
  const lat = (label: string, l: Latency): string => `<tr><td>${label}</td><td>${l.n}</td><td>${l.p50}</td><td>${l.p99}</td></tr>`;
  const data = JSON.stringify(report).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolhost bench --scale ${report.meta.components}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}th{background:#f3f4f6}.met{color:#15803d;font-weight:600}.missed{color:#b91c1c;font-weight:600}</style></head>
<body><h1>toolhost bench --scale ${report.meta.components}</h1>
<p>${escape(`${report.meta.date}, node ${report.meta.node}, ${report.meta.cores} cores (${report.meta.cpu}), load average ${report.meta.loadAvg} at start, ${report.meta.threads} threads, thread containment; transpile cache primed in ${(report.primeMs / 1000).toFixed(1)} s`)}</p>
<h2>Targets</h2><table><thead><tr><th>id</th><th>status</th><th>goal</th><th>measured</th></tr></thead><tbody>${rows}</tbody></table>
<h2>Calls</h2><table><thead><tr><th>calls</th><th>n</th><th>p50 ms</th><th>p99 ms</th></tr></thead><tbody>${lat('cold C (first call)', s3.coldC)}${lat('cold JS (first call)', s3.coldJs)}${lat('hot C', s3.hotC)}${lat('hot JS', s3.hotJs)}</tbody></table>
<script type="application/json" id="bench-data">${data}</script>
</body></html>
`;
}
