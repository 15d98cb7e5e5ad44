/**
 * The targets (P1-P5, M) read the right rows (the paired phase when it ran),
 * the paired phase's order turns every round, and the text and HTML reports
 * render any run.
 */
import { describe, expect, it } from 'vitest';
import { roundOrder } from '../host/bench/paired.js';
import { renderHtmlReport } from '../host/bench/report-html.js';
import type { BenchReport, BenchRow, PairedRow } from '../host/bench/row.js';
import { spread } from '../host/bench/statistics.js';
import { formatReport } from '../host/bench/table.js';
import { benchExitCode, checkTargets } from '../host/bench/targets.js';

function row(id: string, concurrency: number, p50Ms: number, callsPerSec: number, floor?: BenchRow): BenchRow {
  return {
    id,
    label: `${id} <label>`,
    kind: id === 'floor' ? 'floor' : id.startsWith('extism') ? 'peer' : 'toolhost',
    ...(id.startsWith('toolhost') ? { isolation: id.split(':')[2] as 'call' } : {}),
    concurrency,
    calls: 10,
    errors: 0,
    p50Ms,
    p99Ms: p50Ms * 2,
    meanMs: p50Ms,
    minMs: p50Ms / 2,
    maxMs: p50Ms * 3,
    quantiles: Array.from({ length: 101 }, (_, i) => p50Ms * (0.5 + i / 40)),
    callsPerSec,
    p50VsFloor: floor ? p50Ms / floor.p50Ms : 1,
    throughputVsFloor: floor ? callsPerSec / floor.callsPerSec : 1,
  };
}

function report(): BenchReport {
  const floor1 = row('floor', 1, 0.1, 5000);
  const floor8 = row('floor', 8, 0.3, 12000);
  return {
    meta: { date: 'd', node: 'v20', platform: 'linux-x64', cpu: 'cpu', cores: 2, loadAvg: 0.1, threads: 2, concurrency: [1, 8], notes: [] },
    rows: [
      floor1,
      floor8,
      row('toolhost:echo:call', 1, 0.14, 4000, floor1), // 1.4x: P1 met on the floor
      row('toolhost:echo:call', 8, 1, 6000, floor8), // 0.5x throughput: P2 missed
      row('toolhost:echo:worker', 1, 0.11, 4500, floor1),
      row('toolhost:echo:conversation', 1, 0.13, 4400, floor1), // 1.3x: P4 missed
      row('extism:worker', 1, 0.2, 3000, floor1),
    ],
    budgets: [{ kind: 'wall', budgetMs: 50, samples: 5, wrong: 0, p50Ms: 2, p99Ms: 4, maxMs: 4 }],
    coldStarts: [
      { component: 'ctools.wasm', tool: 'echo', cache: 'miss', processMs: 900, importMs: 100, loadMs: 700, firstCallMs: 5, ok: true },
      { component: 'ctools.wasm', tool: 'echo', cache: 'hit', processMs: 300, importMs: 100, loadMs: 100, firstCallMs: 5, ok: true },
    ],
  };
}

/** A paired row whose rounds have these p50 ratios to the floor (floor p50 0.1 ms, 5000 calls/s in every round). */
function pairedRow(id: string, concurrency: number, ratios: number[], throughputRatios = ratios.map((r) => 1 / r)): PairedRow {
  const rounds = ratios.map((ratio, round) => ({
    round, position: 1, floorPosition: 0, p50Ms: 0.1 * ratio, floorP50Ms: 0.1, p50VsFloor: ratio,
    callsPerSec: 5000 * throughputRatios[round]!, floorCallsPerSec: 5000, throughputVsFloor: throughputRatios[round]!,
  }));
  return {
    id, label: `${id} <paired>`, kind: id.startsWith('extism') ? 'peer' : 'toolhost', concurrency, calls: 10 * ratios.length, errors: 0,
    p50Ms: 0.1 * spread(ratios).median, p99Ms: 0.5, callsPerSec: 5000 * spread(throughputRatios).median, floorP50Ms: 0.1, floorCallsPerSec: 5000,
    p50VsFloor: spread(ratios).median, throughputVsFloor: spread(throughputRatios).median,
    p50VsFloorPerRound: spread(ratios), throughputVsFloorPerRound: spread(throughputRatios), rounds,
  };
}

function pairedReport(): BenchReport {
  const r = report();
  r.paired = {
    rounds: 3,
    callsPerBlock: 10,
    settleCalls: 4,
    rows: [
      pairedRow('toolhost:echo:call', 1, [1.3, 1.6, 1.7]), // median 1.6x: P1 missed, though the sequential row meets it
      pairedRow('toolhost:echo:worker', 1, [1.1, 1.15, 3]), // one bad round does not move the median
      pairedRow('toolhost:echo:conversation', 1, [1.0, 1.1, 1.2]),
      pairedRow('extism:worker', 1, [2, 2, 2]),
      pairedRow('toolhost:echo:call', 8, [1, 1, 1], [0.6, 0.8, 0.9]), // median 0.8x: P2 met, though the sequential row misses it
      pairedRow('toolhost:js_echo:call', 1, [4, 6, 5]), // median 5x: D4 met
    ],
  };
  return r;
}

describe('the paired phase', () => {
  it('runs the floor first on even rounds and last on odd ones, the subjects turned by one each round', () => {
    expect([0, 1, 2, 3].map((round) => roundOrder('F', ['a', 'b', 'c'], round).join(''))).toEqual(['Fabc', 'acbF', 'Fcab', 'cbaF']);
    expect([0, 1].map((round) => roundOrder('F', ['a'], round).join(''))).toEqual(['Fa', 'aF']);
  });

  it('takes the median of an even count of ratios as the mean of the middle two', () => {
    expect(spread([2, 1])).toEqual({ min: 1, median: 1.5, max: 2 });
    expect(spread([3, 1, 2])).toEqual({ min: 1, median: 2, max: 3 });
  });

  it('is what the ratio targets read when it ran, and they say so', () => {
    const checks = Object.fromEntries(checkTargets(pairedReport()).map((t) => [t.id, t]));
    expect(Object.fromEntries(Object.entries(checks).map(([id, t]) => [id, t.met]))).toEqual({ P1: false, P2: true, P3: undefined, P4: true, P5: true, M: undefined, D4: true });
    for (const id of ['P1', 'P2', 'P4', 'D4']) expect(checks[id]!.basis).toBe('paired, 3 rounds');
    expect(checks.D4!.measured).toContain('5.00x the floor (median of the per-round ratios, per round 4.00x-6.00x');
    expect(checks.P5!.basis).toBeUndefined();
    expect(checks.P1!.measured).toContain('1.60x the floor (median of the per-round ratios, per round 1.30x-1.70x');
    // C echo over Extism, round by round: 1.3/2, 1.6/2, 1.7/2.
    expect(checks.P1!.measured).toContain('C echo / Extism 0.80x');
    const text = formatReport(pairedReport(), checkTargets(pairedReport()));
    expect(text).toMatch(/^P1\s+MISSED\s+target:/m);
    expect(text).toMatch(/measured \(paired, 3 rounds\): p50/);
    expect(text).toMatch(/^paired row\s+conc\s+calls\s+err\s+floor p50 ms/m);
    expect(text).toMatch(/^toolhost:echo:worker <paired>\s+1\s+30\s+0\s+0\.100\s+0\.11\d\s+1\.10 \/ 1\.15 \/ 3\.00/m);
  });

  it('misses P1 when Extism is faster round by round', () => {
    const r = pairedReport();
    r.paired!.rows = r.paired!.rows.map((row) => (row.id === 'extism:worker' ? pairedRow('extism:worker', 1, [1.2, 1.2, 1.2]) : row));
    r.paired!.rows = r.paired!.rows.map((row) => (row.id === 'toolhost:echo:call' && row.concurrency === 1 ? pairedRow('toolhost:echo:call', 1, [1.3, 1.4, 1.45]) : row));
    expect(checkTargets(r).find((t) => t.id === 'P1')!.met).toBe(false);
  });

  it('is drawn in the HTML report', () => {
    const html = renderHtmlReport(pairedReport(), checkTargets(pairedReport()));
    expect(html).toContain('Paired with the floor');
    expect(html).toContain('&lt;paired&gt;');
    expect(html).toContain('<em>paired, 3 rounds:</em>');
  });
});

describe('benchmark targets', () => {
  it('checks P1-P5 against the rows, and says which were not measured', () => {
    const byId = Object.fromEntries(checkTargets(report()).map((t) => [t.id, t.met]));
    expect(byId).toEqual({ P1: true, P2: false, P3: undefined, P4: false, P5: true, M: undefined, D4: undefined });
  });

  it('misses D4 when a componentize-js call is over 5x the floor', () => {
    const r = report();
    r.rows.push(row('toolhost:js_echo:call', 1, 0.6, 1500, r.rows[0]));
    expect(checkTargets(r).find((t) => t.id === 'D4')).toMatchObject({ met: false, measured: 'p50 0.600 ms = 6.00x the floor' });
  });

  it('misses P1 when Extism is faster in the same run', () => {
    const r = report();
    r.rows.find((x) => x.id === 'extism:worker')!.p50Ms = 0.12;
    expect(checkTargets(r).find((t) => t.id === 'P1')!.met).toBe(false);
  });

  it('meets M when memory settles over the second half of 100,000 calls, and misses it when it keeps growing', () => {
    const r = report();
    const growth = (rssSlope: number, heapSlope: number, workerSlope = 0.01): NonNullable<BenchReport['growth']>[number] => ({
      label: 'C echo, isolation=call', calls: 100_000, concurrency: 8, errors: 0, gcForced: true,
      rssBeforeMb: 100, rssHalfMb: 140, rssEndMb: 140 + rssSlope / 2, rssMaxMb: 141, rssGrowthMb: rssSlope / 2, rssSlopeMbPer100k: rssSlope,
      heapGrowthMb: heapSlope / 2, heapSlopeMbPer100k: heapSlope,
      workerGcForced: true, workerHeapGrowthMb: workerSlope / 2, workerHeapSlopeMbPer100k: workerSlope, checkpoints: [],
    });
    r.growth = [growth(0.5, 0.02)];
    r.kept = [{ label: 'C echo, isolation=conversation', conversations: 32, instances: 60, rssAddedMb: 6, rssPerInstanceMb: 0.1 }];
    const met = checkTargets(r).find((t) => t.id === 'M')!;
    expect(met.met).toBe(true);
    expect(met.measured).toContain('0.10 MiB per kept instance');
    expect(formatReport(r, checkTargets(r))).toMatch(/^no-growth check\s+calls/m);
    r.growth = [growth(12, 0.02)];
    expect(checkTargets(r).find((t) => t.id === 'M')!.met).toBe(false);
    r.growth = [growth(0.5, 3)];
    expect(checkTargets(r).find((t) => t.id === 'M')!.met).toBe(false);
    // A worker heap that keeps growing is a leak too, and a check whose workers were not collected decides nothing.
    r.growth = [growth(0.5, 0.02, 3)];
    expect(checkTargets(r).find((t) => t.id === 'M')!.met).toBe(false);
    r.growth = [{ ...growth(0.5, 0.02), workerGcForced: false }];
    expect(checkTargets(r).find((t) => t.id === 'M')!.met).toBe(false);
  });

  it('misses P5 when the second start was not served from the cache', () => {
    const r = report();
    r.coldStarts[1]!.cache = 'miss';
    expect(checkTargets(r).find((t) => t.id === 'P5')!.met).toBe(false);
  });
});

describe('benchmark reports', () => {
  it('prints the targets beside the measured values', () => {
    const text = formatReport(report(), checkTargets(report()));
    expect(text).toMatch(/^P1\s+met\s+target: .*1\.5x the floor/m);
    expect(text).toMatch(/^P2\s+MISSED/m);
    expect(text).toMatch(/measured: p50 0\.140 ms = 1\.40x the floor/);
  });

  it('writes one self-contained page with escaped labels and the run as JSON', () => {
    const html = renderHtmlReport(report(), checkTargets(report()));
    expect(html).toContain('&lt;label&gt;');
    expect(html).not.toContain('<label>');
    const data = /<script type="application\/json" id="bench-data">(.*?)<\/script>/s.exec(html)![1]!;
    expect((JSON.parse(data) as BenchReport).rows).toHaveLength(7);
    expect(html).not.toMatch(/https?:\/\//);
  });
});

describe('the paired phase with a subject that renews itself', () => {
  it('renews it before each of its blocks, warms the new one, measures it, and says so in a note', async () => {
    const { runPaired } = await import('../host/bench/paired.js');
    let renewals = 0;
    let callsSinceRenewal = 0;
    const callsSeen: number[] = [];
    const result = await runPaired({
      rounds: 2,
      calls: 20,
      threads: 1,
      payload: { text: 'x' },
      sources: [{
        label: 'ageing peer',
        concurrency: [1],
        open: async () => ({
          subject: {
            id: 'peer:ageing',
            label: 'an ageing peer',
            kind: 'peer',
            calls: 20,
            threads: 0,
            call: async () => {
              callsSinceRenewal += 1;
              callsSeen.push(callsSinceRenewal);
              return { ok: true };
            },
            renew: async () => {
              renewals += 1;
              callsSinceRenewal = 0;
            },
            renewWarmUpCalls: 5,
          },
          close: async () => {},
        }),
      }],
    });
    expect(renewals).toBe(2);
    const row = result.phase.rows.find((r) => r.id === 'peer:ageing');
    expect(row?.calls).toBe(20);
    expect(result.notes.some((note) => note.includes('an ageing peer is measured new in every block, after 5 calls'))).toBe(true);
    // Each block's calls come after the 5 warm-up calls and the settle calls of a new subject, never more than a block's worth past them.
    expect(Math.max(...callsSeen.slice(-10))).toBeLessThanOrEqual(5 + 4 + 10);
  }, 60_000);
});

describe('the benchmark\'s verdict (issue 41)', () => {
  it('exits 1 on a measured target missed, and its heading names no issue', () => {
    const missed = checkTargets(report()).map((target, index) => (index === 0 ? { ...target, met: false } : target));
    expect(benchExitCode(false, missed)).toBe(1);
    expect(formatReport(report(), missed)).toMatch(/^Targets$/m);
    expect(formatReport(report(), missed)).not.toMatch(/issue 10/);
  });

  it('exits 0 when every measured target is met or not measured, and 1 on a failed call (control)', () => {
    const met = checkTargets(report()).map((target) => ({ ...target, met: true }));
    expect(benchExitCode(false, met)).toBe(0);
    expect(benchExitCode(false, met.map((target, index) => (index === 0 ? { id: target.id, goal: target.goal, measured: target.measured } : target)))).toBe(0);
    expect(benchExitCode(true, met)).toBe(1);
  });
});
