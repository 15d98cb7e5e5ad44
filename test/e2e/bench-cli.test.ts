/**
 * `toolhost bench` runs on a user's component and prints well-formed rows
 * (never how fast: no timed assertions), pairs them with the floor in
 * alternating rounds, writes a self-contained HTML report, and refuses
 * malformed command lines. The standard suite's targets read the paired phase.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport, PairedPhase } from '../../host/bench/row.js';
import type { TargetCheck } from '../../host/bench/targets.js';
import { runCli } from '../cli-runner.js';
import { example, hasCGuests } from '../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The paired phase's shape: every row has one figure per round, positive ratios, and met the floor in each round. */
function expectWellFormedPaired(phase: PairedPhase, rounds: number, calls: number): void {
  expect(phase.rounds).toBe(rounds);
  expect(phase.callsPerBlock).toBe(Math.round(calls / rounds));
  for (const row of phase.rows) {
    expect(row.errors).toBe(0);
    // A block at C in flight runs C times the base count.
    expect(row.calls).toBe(phase.callsPerBlock * Math.max(1, row.concurrency) * rounds);
    expect(row.rounds.map((r) => r.round)).toEqual(Array.from({ length: rounds }, (_, i) => i));
    for (const r of row.rounds) {
      expect(r.position).not.toBe(r.floorPosition);
      for (const value of [r.p50Ms, r.floorP50Ms, r.p50VsFloor, r.callsPerSec, r.floorCallsPerSec, r.throughputVsFloor]) expect(value).toBeGreaterThan(0);
    }
    for (const spread of [row.p50VsFloorPerRound, row.throughputVsFloorPerRound]) {
      expect(spread.min).toBeGreaterThan(0);
      expect(spread.median).toBeGreaterThanOrEqual(spread.min);
      expect(spread.max).toBeGreaterThanOrEqual(spread.median);
    }
    for (const value of [row.p50Ms, row.floorP50Ms, row.p50VsFloor, row.callsPerSec, row.floorCallsPerSec, row.throughputVsFloor]) expect(value).toBeGreaterThan(0);
  }
}

describe.runIf(hasCGuests)('toolhost bench on a component given with --load', () => {
  it('prints one row per subject and concurrency, with the floor, and writes the HTML report', async () => {
    const report = join(dir, 'report.html');
    const run = await runCli([
      'bench', 'echo', '--load', example('ctools'), '--args', '{"text":"hi"}',
      '--calls', '50', '--concurrency', '1,4', '--isolation', 'call,worker', '--threads', '1', '--paired-rounds', '2', '--json', '--quiet', '--report', report,
    ]);
    expect(run.stderr).not.toMatch(/"error"/);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as BenchReport & { targets?: TargetCheck[] };
    expect(result.targets).toBeUndefined();
    expect(result.rows.map((row) => `${row.id}@${row.concurrency}`)).toEqual([
      'floor@1', 'floor@4', 'toolhost:echo:call@1', 'toolhost:echo:call@4', 'toolhost:echo:worker@1', 'toolhost:echo:worker@4',
    ]);
    for (const row of result.rows) {
      expect(row.calls).toBe(50);
      expect(row.errors).toBe(0);
      expect(row.p50Ms).toBeGreaterThan(0);
      expect(row.p99Ms).toBeGreaterThanOrEqual(row.p50Ms);
      expect(row.quantiles).toHaveLength(101);
      expect(row.callsPerSec).toBeGreaterThan(0);
      expect(Number.isFinite(row.p50VsFloor)).toBe(true);
    }
    const call = result.rows.find((row) => row.id === 'toolhost:echo:call')!;
    expect(call.isolation).toBe('call');
    expect(call.instances!.reused).toBe(0);
    const worker = result.rows.find((row) => row.id === 'toolhost:echo:worker')!;
    expect(worker.instances!.reused).toBe(100);
    expect(worker.memory?.instanceMemoryMb).toBeGreaterThan(0);

    // The paired phase: the tool's rows (no Extism) against the floor, by concurrency, 2 rounds of 25 calls.
    expect(result.paired!.rows.map((row) => `${row.id}@${row.concurrency}`)).toEqual([
      'toolhost:echo:call@1', 'toolhost:echo:worker@1', 'toolhost:echo:call@4', 'toolhost:echo:worker@4',
    ]);
    expectWellFormedPaired(result.paired!, 2, 50);
    // The order turns: no row runs right after the floor in every round.
    for (const row of result.paired!.rows) expect(row.rounds.every((r) => r.position === r.floorPosition + 1)).toBe(false);

    // Cold start: a second process is served from the transpile cache the first one filled.
    expect(result.coldStarts.map((start) => [start.tool, start.cache, start.ok])).toEqual([
      ['echo', 'miss', true],
      ['echo', 'hit', true],
    ]);

    const html = readFileSync(report, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('<svg');
    expect(html).toContain('echo, isolation=worker');
    expect(html).toContain('Paired with the floor');
    // Self-contained: nothing is loaded from anywhere.
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('prints the table by default', async () => {
    const run = await runCli(['bench', 'echo', '--load', example('ctools'), '--args', '{}', '--calls', '20', '--concurrency', '1', '--isolation', 'worker', '--threads', '1', '--paired-rounds', '0', '--no-cold-start', '--quiet']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^row\s+conc\s+calls\s+err\s+p50 ms/m);
    expect(run.stdout).not.toMatch(/^paired row/m);
    expect(run.stdout).toContain('paired phase skipped (--paired-rounds 0)');
    expect(run.stdout).toMatch(/^floor: bare piscina round trip\s+1\s+20\s+0/m);
    expect(run.stdout).toMatch(/^echo, isolation=worker\s+1\s+20\s+0/m);
  });

  it('says which tools a component has when TOOL is not among them', async () => {
    const run = await runCli(['bench', 'nope', '--load', example('ctools'), '--calls', '5', '--concurrency', '1', '--isolation', 'call', '--threads', '1', '--quiet']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('TOOL_NOT_FOUND');
    expect(run.stderr).toContain('echo');
  });

  it("says the tool refused its --args with the tool's own code, not as an internal error", async () => {
    const run = await runCli(['bench', 'sha256', '--load', example('ctools'), '--calls', '5', '--concurrency', '1', '--isolation', 'call', '--threads', '1', '--paired-rounds', '0', '--no-cold-start', '--quiet']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"code":"INVALID_INPUT"');
    expect(run.stderr).toContain("required property 'text'");
    expect(run.stderr).toContain('--args');
  });
});

describe.runIf(hasCGuests)('toolhost bench, the standard suite with small numbers', () => {
  it('pairs the rows the targets read with the floor, and the ratio targets say they read the paired phase', async () => {
    const run = await runCli([
      'bench', '--calls', '40', '--js-calls', '5', '--paired-rounds', '2', '--threads', '1',
      '--growth-calls', '0', '--no-budgets', '--no-cold-start', '--json', '--quiet',
    ]);
    const result = JSON.parse(run.stdout) as BenchReport & { targets: TargetCheck[] };
    // Numbers this small measure nothing: a target may be missed, and the run then exits 1, naming it.
    const missed = result.targets.filter((target) => target.met === false);
    expect(run.code).toBe(missed.length > 0 ? 1 : 0);
    const ids = result.paired!.rows.map((row) => `${row.id}@${row.concurrency}`);
    // Extism joins when its package and plugin are there (the sequential rows say so either way).
    const extism = result.rows.some((row) => row.id === 'extism:worker');
    // js_echo (issue 37's D4) in a paired phase of its own, after C echo's.
    const js = existsSync(example('text'));
    expect(ids).toEqual([
      'toolhost:echo:call@1', 'toolhost:echo:worker@1', 'toolhost:echo:conversation@1', ...(extism ? ['extism:worker@1'] : []), 'toolhost:echo:call@8',
      ...(js ? ['toolhost:js_echo:call@1'] : []),
    ]);
    expectWellFormedPaired(result.paired!, 2, 40);
    // The sequential rows stay as they were.
    expect(result.rows.filter((row) => row.id === 'toolhost:echo:call').map((row) => row.calls)).toEqual([40, 40]);
    const byId = Object.fromEntries(result.targets.map((t) => [t.id, t]));
    for (const id of ['P1', 'P2', 'P4', ...(js ? ['D4'] : [])]) {
      expect(byId[id]!.basis).toBe('paired, 2 rounds');
      expect(typeof byId[id]!.met).toBe('boolean');
      expect(byId[id]!.measured).toMatch(/medians? of the per-round ratios/);
    }
    expect(byId.P3!.basis).toBeUndefined();
  });
});

describe.concurrent('toolhost bench usage errors', () => {
  it.each([
    [['bench', 'echo', '--isolation', 'fresh']],
    [['bench', 'echo', '--calls', '0']],
    [['bench', 'echo', '--concurrency', '1,x']],
    [['bench', 'echo', '--args', '{not json']],
    [['bench', 'echo', '--report', 'out.txt']],
    [['bench', 'echo', '--paired-rounds', '-1']],
    [['bench', 'echo', '--paired-rounds', '1.5']],
    [['bench', '--load', 'x.wasm']],
  ])('%j exits 2', async (args) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('INVALID_INPUT');
  });
});
