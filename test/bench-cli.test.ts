/**
 * `toolhost bench` runs on a user's component and prints well-formed rows
 * (never how fast: no timed assertions), writes a self-contained HTML report,
 * and refuses malformed command lines.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../host/bench/row.js';
import type { TargetCheck } from '../host/bench/targets.js';
import { runCli } from './cli-runner.js';
import { example, hasCGuests } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.runIf(hasCGuests)('toolhost bench on a component given with --load', () => {
  it('prints one row per subject and concurrency, with the floor, and writes the HTML report', async () => {
    const report = join(dir, 'report.html');
    const run = await runCli([
      'bench', 'echo', '--load', example('ctools'), '--args', '{"text":"hi"}',
      '--calls', '50', '--concurrency', '1,4', '--isolation', 'call,worker', '--threads', '1', '--json', '--quiet', '--report', report,
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

    // Cold start: a second process is served from the transpile cache the first one filled.
    expect(result.coldStarts.map((start) => [start.tool, start.cache, start.ok])).toEqual([
      ['echo', 'miss', true],
      ['echo', 'hit', true],
    ]);

    const html = readFileSync(report, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('<svg');
    expect(html).toContain('echo, isolation=worker');
    // Self-contained: nothing is loaded from anywhere.
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('prints the table by default', async () => {
    const run = await runCli(['bench', 'echo', '--load', example('ctools'), '--args', '{}', '--calls', '20', '--concurrency', '1', '--isolation', 'worker', '--threads', '1', '--no-cold-start', '--quiet']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^row\s+conc\s+calls\s+err\s+p50 ms/m);
    expect(run.stdout).toMatch(/^floor: bare piscina round trip\s+1\s+20\s+0/m);
    expect(run.stdout).toMatch(/^echo, isolation=worker\s+1\s+20\s+0/m);
  });

  it('says which tools a component has when TOOL is not among them', async () => {
    const run = await runCli(['bench', 'nope', '--load', example('ctools'), '--calls', '5', '--concurrency', '1', '--isolation', 'call', '--threads', '1', '--quiet']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('TOOL_NOT_FOUND');
    expect(run.stderr).toContain('echo');
  });
});

describe.concurrent('toolhost bench usage errors', () => {
  it.each([
    [['bench', 'echo', '--isolation', 'fresh']],
    [['bench', 'echo', '--calls', '0']],
    [['bench', 'echo', '--concurrency', '1,x']],
    [['bench', 'echo', '--args', '{not json']],
    [['bench', 'echo', '--report', 'out.txt']],
    [['bench', '--load', 'x.wasm']],
  ])('%j exits 2', async (args) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('INVALID_INPUT');
  });
});
