/**
 * The benchmark as one self-contained HTML page (inline SVG, CSS and a little
 * JS; nothing fetched): the targets, the latency distribution of every row
 * (p1-p99 whiskers, p25-p75 box, p50 mark, on a log scale), each row's ratio
 * to the floor, throughput, the full table, the paired phase (per-round ratios
 * as ranges), budgets and cold starts, and the run's JSON for whoever wants to
 * redraw it.
 */
import type { BenchReport, BenchRow, PairedPhase } from './row.js';
import type { TargetCheck } from './targets.js';

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const fmt = (value: number | undefined, digits = 3): string => (value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits));

const COLORS: Record<BenchRow['kind'], string> = { floor: '#6b7280', native: '#0e7490', toolhost: '#2563eb', peer: '#c2410c' };

const LABEL_W = 330;
const PLOT_W = 560;
const ROW_H = 22;
const PAD_TOP = 28;

/** A log-scale axis over [min, max] (ms or a ratio), with ticks at 1-2-5 steps. */
function logScale(min: number, max: number): { x: (v: number) => number; ticks: number[] } {
  const lo = Math.pow(10, Math.floor(Math.log10(Math.max(min, 1e-4))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(max, lo * 10))));
  const x = (v: number): number => LABEL_W + ((Math.log10(Math.min(Math.max(v, lo), hi)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * PLOT_W;
  const ticks: number[] = [];
  // 1-2-5 steps over a few decades; over many, powers of ten only (so the labels do not collide).
  const steps = Math.log10(hi / lo) > 3 ? [1] : [1, 2, 5];
  for (let decade = lo; decade <= hi * 1.0001; decade *= 10) for (const step of steps) if (decade * step <= hi * 1.0001) ticks.push(decade * step);
  return { x, ticks };
}

function axis(scale: { x: (v: number) => number; ticks: number[] }, height: number, unit: string): string {
  return scale.ticks
    .map((tick) => {
      const x = scale.x(tick).toFixed(1);
      const label = tick >= 1 ? String(Math.round(tick * 100) / 100) : String(Number(tick.toPrecision(1)));
      return `<line x1="${x}" x2="${x}" y1="${PAD_TOP - 6}" y2="${height}" class="grid"/><text x="${x}" y="${PAD_TOP - 10}" class="tick">${label}${unit}</text>`;
    })
    .join('');
}

function rowLabel(row: BenchRow, y: number): string {
  return `<text x="${LABEL_W - 8}" y="${y + 4}" class="label">${escape(row.label)}</text>`;
}

/** Latency distribution per row: whiskers p1-p99, box p25-p75, a mark at p50. */
function distributionChart(rows: BenchRow[], concurrency: number): string {
  const chosen = rows.filter((row) => row.concurrency === concurrency);
  if (chosen.length === 0) return '';
  const scale = logScale(Math.min(...chosen.map((r) => r.quantiles[1] ?? r.minMs)), Math.max(...chosen.map((r) => r.quantiles[99] ?? r.maxMs)));
  const height = PAD_TOP + chosen.length * ROW_H + 8;
  const body = chosen
    .map((row, i) => {
      const y = PAD_TOP + i * ROW_H + ROW_H / 2;
      const q = (p: number): number => scale.x(row.quantiles[p] ?? Number.NaN);
      const color = COLORS[row.kind];
      const title = `${row.label}, concurrency ${row.concurrency}: p1 ${fmt(row.quantiles[1])} / p25 ${fmt(row.quantiles[25])} / p50 ${fmt(row.p50Ms)} / p75 ${fmt(row.quantiles[75])} / p99 ${fmt(row.p99Ms)} ms`;
      return (
        `<g><title>${escape(title)}</title>${rowLabel(row, y)}` +
        `<line x1="${q(1).toFixed(1)}" x2="${q(99).toFixed(1)}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="1.5"/>` +
        `<rect x="${q(25).toFixed(1)}" y="${y - 6}" width="${Math.max(1, q(75) - q(25)).toFixed(1)}" height="12" fill="${color}" fill-opacity="0.35" stroke="${color}"/>` +
        `<line x1="${q(50).toFixed(1)}" x2="${q(50).toFixed(1)}" y1="${y - 8}" y2="${y + 8}" stroke="${color}" stroke-width="3"/>` +
        `<text x="${LABEL_W + PLOT_W + 8}" y="${y + 4}" class="value">${fmt(row.p50Ms)} ms</text></g>`
      );
    })
    .join('');
  return `<figure><figcaption>Latency distribution at concurrency ${concurrency} (ms, log scale; whiskers p1–p99, box p25–p75, bar p50)</figcaption><svg viewBox="0 0 ${LABEL_W + PLOT_W + 90} ${height}" width="100%" role="img">${axis(scale, height, '')}${body}</svg></figure>`;
}

/** Each row's p50 over the floor's, as bars on a log scale, with the targets' 1.2x and 1.5x marked. */
function ratioChart(rows: BenchRow[], concurrency: number): string {
  const chosen = rows.filter((row) => row.concurrency === concurrency);
  if (chosen.length === 0) return '';
  const scale = logScale(0.5, Math.max(2, ...chosen.map((r) => r.p50VsFloor)));
  const height = PAD_TOP + chosen.length * ROW_H + 8;
  const marks = [1.2, 1.5]
    .map((m) => `<line x1="${scale.x(m).toFixed(1)}" x2="${scale.x(m).toFixed(1)}" y1="${PAD_TOP - 4}" y2="${height}" class="target"/><text x="${scale.x(m).toFixed(1)}" y="${height + 12}" class="tick">${m}x</text>`)
    .join('');
  const body = chosen
    .map((row, i) => {
      const y = PAD_TOP + i * ROW_H + ROW_H / 2;
      const x0 = scale.x(scale.ticks[0]!);
      const x1 = scale.x(row.p50VsFloor);
      return (
        `<g><title>${escape(`${row.label}: p50 ${fmt(row.p50Ms)} ms = ${fmt(row.p50VsFloor, 2)}x the floor; ${row.callsPerSec} calls/s = ${fmt(row.throughputVsFloor, 2)}x the floor's`)}</title>${rowLabel(row, y)}` +
        `<rect x="${x0.toFixed(1)}" y="${y - 7}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="14" fill="${COLORS[row.kind]}" fill-opacity="0.8"/>` +
        `<text x="${LABEL_W + PLOT_W + 8}" y="${y + 4}" class="value">${fmt(row.p50VsFloor, 2)}x</text></g>`
      );
    })
    .join('');
  return `<figure><figcaption>p50 / floor p50 at concurrency ${concurrency} (log scale; dashed: the 1.2x and 1.5x targets)</figcaption><svg viewBox="0 0 ${LABEL_W + PLOT_W + 90} ${height + 16}" width="100%" role="img">${axis(scale, height, 'x')}${marks}${body}</svg></figure>`;
}

/** The paired phase: each row's per-round p50 ratios to the floor as a range (min-max) with the median marked, and its table. */
function pairedSection(phase: PairedPhase | undefined): string {
  if (!phase || phase.rows.length === 0) return '';
  const rows = phase.rows;
  const scale = logScale(0.5, Math.max(2, ...rows.map((r) => r.p50VsFloorPerRound.max)));
  const height = PAD_TOP + rows.length * ROW_H + 8;
  const marks = [1.2, 1.5]
    .map((m) => `<line x1="${scale.x(m).toFixed(1)}" x2="${scale.x(m).toFixed(1)}" y1="${PAD_TOP - 4}" y2="${height}" class="target"/><text x="${scale.x(m).toFixed(1)}" y="${height + 12}" class="tick">${m}x</text>`)
    .join('');
  const body = rows
    .map((row, i) => {
      const y = PAD_TOP + i * ROW_H + ROW_H / 2;
      const s = row.p50VsFloorPerRound;
      const color = COLORS[row.kind];
      const label = `${row.label} @${row.concurrency}`;
      const title = `${label}: p50 / floor p50 per round ${row.rounds.map((r) => fmt(r.p50VsFloor, 2)).join(', ')} (median ${fmt(s.median, 2)}x; pooled ${fmt(row.p50VsFloor, 2)}x)`;
      return (
        `<g><title>${escape(title)}</title><text x="${LABEL_W - 8}" y="${y + 4}" class="label">${escape(label)}</text>` +
        `<line x1="${scale.x(s.min).toFixed(1)}" x2="${scale.x(s.max).toFixed(1)}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="6" stroke-opacity="0.35"/>` +
        row.rounds.map((r) => `<circle cx="${scale.x(r.p50VsFloor).toFixed(1)}" cy="${y}" r="2.5" fill="${color}"/>`).join('') +
        `<line x1="${scale.x(s.median).toFixed(1)}" x2="${scale.x(s.median).toFixed(1)}" y1="${y - 8}" y2="${y + 8}" stroke="${color}" stroke-width="3"/>` +
        `<text x="${LABEL_W + PLOT_W + 8}" y="${y + 4}" class="value">${fmt(s.median, 2)}x</text></g>`
      );
    })
    .join('');
  const chart = `<figure><figcaption>p50 / floor p50, round by round (log scale; dots: rounds, band: their range, bar: the median the targets read; dashed: 1.2x and 1.5x)</figcaption><svg viewBox="0 0 ${LABEL_W + PLOT_W + 90} ${height + 16}" width="100%" role="img">${axis(scale, height, 'x')}${marks}${body}</svg></figure>`;
  const spreadText = (s: { min: number; median: number; max: number }): string => `${fmt(s.min, 2)} / ${fmt(s.median, 2)} / ${fmt(s.max, 2)}`;
  const cells = rows.map((row) => [
    row.label,
    String(row.concurrency),
    String(row.calls),
    String(row.errors),
    fmt(row.floorP50Ms),
    fmt(row.p50Ms),
    spreadText(row.p50VsFloorPerRound),
    fmt(row.p50VsFloor, 2),
    String(row.callsPerSec),
    spreadText(row.throughputVsFloorPerRound),
    fmt(row.throughputVsFloor, 2),
  ]);
  const intro = `<p>The floor and these rows open at once, measured in ${phase.rounds} rounds of alternating blocks of ${phase.callsPerBlock} calls times the concurrency (after ${phase.settleCalls} unmeasured ones each), the order rotated every round; each ratio is against the floor's block of the same round, and the targets read the median of the per-round ratios.</p>`;
  return `<h2>Paired with the floor</h2>${intro}${chart}${table(['row', 'conc', 'calls', 'err', 'floor p50 ms', 'p50 ms', 'p50/floor per round min/med/max', 'pooled', 'calls/s', 'tput/floor per round min/med/max', 'pooled'], cells)}`;
}

function table(header: string[], cells: string[][], sortable = false): string {
  const head = header.map((h) => `<th>${escape(h)}</th>`).join('');
  const body = cells.map((line) => `<tr>${line.map((cell, i) => (i === 0 ? `<td>${escape(cell)}</td>` : `<td class="num">${escape(cell)}</td>`)).join('')}</tr>`).join('\n');
  return `<table${sortable ? ' class="sortable"' : ''}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function targetsSection(targets: TargetCheck[] | undefined): string {
  if (!targets) return '';
  const rows = targets
    .map((t) => {
      const status = t.met === undefined ? ['na', 'not measured'] : t.met ? ['met', 'met'] : ['missed', 'missed'];
      return `<tr><td>${t.id}</td><td class="${status[0]}">${status[1]}</td><td>${escape(t.goal)}</td><td>${t.basis === undefined ? '' : `<em>${escape(t.basis)}:</em> `}${escape(t.measured)}</td></tr>`;
    })
    .join('\n');
  return `<h2>Targets</h2><table><thead><tr><th></th><th>status</th><th>target</th><th>measured</th></tr></thead><tbody>${rows}</tbody></table>`;
}

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#111}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f3f4f6;position:sticky;top:0}table.sortable th{cursor:pointer}.met{color:#15803d;font-weight:600}.missed{color:#b91c1c;font-weight:600}.na{color:#6b7280}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}svg text{font:12px system-ui,sans-serif}.label{text-anchor:end}
.tick{text-anchor:middle;fill:#6b7280;font-size:11px}.value{fill:#374151}.grid{stroke:#e5e7eb}.target{stroke:#b91c1c;stroke-dasharray:4 3}
.meta td:first-child{color:#6b7280}.legend span{display:inline-block;margin-right:1.2em}.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-1px}`;

/** Click a header of a sortable table to sort by that column (numbers as numbers). */
const JS = `for(const t of document.querySelectorAll('table.sortable'))t.querySelectorAll('th').forEach((th,i)=>th.addEventListener('click',()=>{
const b=t.tBodies[0],rs=[...b.rows],d=th.dataset.d==='1'?-1:1;th.dataset.d=d===1?'1':'0';
const v=r=>{const s=r.cells[i].textContent,n=parseFloat(s);return Number.isNaN(n)?s:n};
rs.sort((a,c)=>{const x=v(a),y=v(c);return (typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y)))*d});rs.forEach(r=>b.appendChild(r))}));`;

export function renderHtmlReport(report: BenchReport, targets?: TargetCheck[]): string {
  const { meta, rows } = report;
  const concurrencies = [...new Set(rows.map((row) => row.concurrency))].sort((a, b) => a - b);
  const metaRows = [
    ['date', meta.date],
    ['node', `${meta.node} (${meta.platform})`],
    ['cpu', `${meta.cores} cores, ${meta.cpu}; load average ${meta.loadAvg.toFixed(2)} at start`],
    ['pool', `${meta.threads} threads (host and floor); concurrency ${meta.concurrency.join(', ')}`],
    ...meta.notes.map((note) => ['note', note]),
  ];
  const legend = (Object.keys(COLORS) as Array<BenchRow['kind']>).map((kind) => `<span><i style="background:${COLORS[kind]}"></i>${kind}</span>`).join('');
  const fullTable = table(
    ['row', 'conc', 'calls', 'err', 'p50 ms', 'p99 ms', 'mean ms', 'calls/s', 'p50/floor', 'tput/floor', 'fresh/pre/rest/reuse %', 'inst ms', 'RSS/worker MiB', 'mem/inst MiB', 'RSS growth MiB'],
    rows.map((row) => [
      row.label,
      String(row.concurrency),
      String(row.calls),
      String(row.errors),
      fmt(row.p50Ms),
      fmt(row.p99Ms),
      fmt(row.meanMs),
      String(row.callsPerSec),
      fmt(row.p50VsFloor, 2),
      fmt(row.throughputVsFloor, 2),
      row.instances ? `${row.instances.fresh}/${row.instances.prewarmed}/${row.instances.restored ?? 0}/${row.instances.reused}` : '-',
      fmt(row.instantiateMs),
      fmt(row.memory?.rssPerWorkerMb, 1),
      fmt(row.memory?.instanceMemoryMb, 2),
      fmt(row.memory?.rssGrowthMb, 1),
    ]),
    true,
  );
  const budgets = report.budgets.length === 0 ? '' : `<h2>Budget enforcement precision</h2><p>A guest that spins forever; the overshoot is the wall time (or thread CPU time) past the budget when the call was stopped.</p>${table(['budget', 'samples', 'wrong', 'overshoot p50 ms', 'overshoot p99 ms', 'max ms'], report.budgets.map((b) => [`${b.kind} ${b.budgetMs} ms`, String(b.samples), String(b.wrong), fmt(b.p50Ms), fmt(b.p99Ms), fmt(b.maxMs)]))}`;
  const cold = report.coldStarts.length === 0 ? '' : `<h2>Cold start</h2><p>The first call of a new process: an empty transpile cache, then the cache the first process left.</p>${table(['tool', 'cache', 'process ms', 'import ms', 'load ms', 'first call ms', 'ok'], report.coldStarts.map((s) => [`${s.tool} (${s.component})`, s.cache, fmt(s.processMs, 1), fmt(s.importMs, 1), fmt(s.loadMs, 1), fmt(s.firstCallMs, 1), s.ok ? 'yes' : `no: ${s.error ?? ''}`]))}`;
  const data = JSON.stringify({ ...report, ...(targets ? { targets } : {}) }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>toolhost bench ${escape(meta.date)}</title><style>${CSS}</style></head>
<body>
<h1>toolhost bench</h1>
<table class="meta"><tbody>${metaRows.map(([k, v]) => `<tr><td>${escape(k!)}</td><td>${escape(v!)}</td></tr>`).join('')}</tbody></table>
${targetsSection(targets)}
<h2>Latency</h2><p class="legend">${legend}</p>
${concurrencies.map((c) => distributionChart(rows, c)).join('\n')}
<h2>Ratio to the floor</h2>
${concurrencies.map((c) => ratioChart(rows, c)).join('\n')}
${pairedSection(report.paired)}
<h2>All rows</h2><p>Click a column to sort.</p>${fullTable}
${budgets}
${cold}
<script type="application/json" id="bench-data">${data}</script>
<script>${JS}</script>
</body></html>
`;
}
