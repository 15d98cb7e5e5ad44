/**
 * A benchmark run: the floor first, then every subject in turn (one pool at a
 * time, closed before the next starts, so no two compete for the cores), then
 * the peers, the paired phase (the rows the targets read, interleaved with the
 * floor's; paired.ts), the enforcement-precision rows and the cold starts.
 *
 * Two shapes: a user's tool (`tool` set: that tool under each isolation mode)
 * or the standard suite (the example tools: C `echo`, componentize-js
 * `js_echo`, a native echo, Extism as a peer, budgets, cold starts).
 */
import { existsSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { loadHostConfig } from '../compose/host.js';
import { createRegistry } from '../compose/registry.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { packageRoot } from '../config/package-root.js';
import { ToolhostError } from '../base/errors.js';
import { defineNativeTool } from '../core/tool.js';
import { measureEnforcement } from './budgets.js';
import { measureColdStart } from './cold-start.js';
import { measureGrowth, measureKeptInstances } from './growth.js';
import { startFloor } from './floor.js';
import { runPaired, type PairedSource } from './paired.js';
import { startPeers } from './peers.js';
import { ALL_ISOLATIONS, DEFAULT_CONCURRENCY, type BenchMeta, type BenchReport, type BenchRow, type ColdStart, type Isolation } from './row.js';
import { runSubject, type CallOutcome, type FloorRows, type Subject } from './runner.js';
import { benchRegistryOptions, openSandboxed, outcomeOf, type SandboxedTarget, type ToolSource } from './sandboxed.js';

export interface BenchOptions {
  /** The tool to measure; undefined runs the standard suite. */
  tool?: string;
  /** The tool's arguments (default `{}`; the standard suite sends a small JSON object). */
  args?: unknown;
  /** Component files or directories holding `tool` (default: the config's tools, i.e. the example tools). */
  load?: string[];
  /** The config file the host is built from (as `toolhost call --config`). */
  configPath?: string;
  /** Calls per row (default 2000). */
  calls?: number;
  /** Calls per row for componentize-js tools in the standard suite (default 200: an instance costs milliseconds). */
  jsCalls?: number;
  /** Calls in flight, one row each (default 1 and 8). */
  concurrency?: number[];
  /** Isolation modes measured (default call, worker and conversation). */
  isolation?: Isolation[];
  /** Worker threads of the host and the floor (default: the machine's cores). */
  threads?: number;
  /** Standard suite only: the budget rows (default true) and their samples per 50 and 200 ms budget (default 20). */
  budgets?: boolean;
  budgetSamples?: number;
  /** Cold starts (default true). */
  coldStart?: boolean;
  /** Peer rows (default true in the standard suite). */
  peers?: boolean;
  /**
   * Calls of the no-growth check in the default isolation (memory read after a
   * forced GC at every tenth; see growth.ts), with the RSS of kept instances:
   * default 100,000 in the standard suite; with a TOOL, only when given. 0 leaves it out.
   */
  growthCalls?: number;
  /**
   * Rounds of the paired phase (default 5): the floor and the rows the targets read (a TOOL: its rows) open
   * at once and measured in alternating blocks (see paired.ts); the targets then read the paired figures.
   * 0 leaves the phase out.
   */
  pairedRounds?: number;
  /** Told what is about to run (the CLI writes it to stderr). */
  progress?: (message: string) => void;
}

const STANDARD_PAYLOAD = { text: 'hello, toolhost', n: 42, ok: true };

interface Run {
  meta: BenchMeta;
  concurrency: number[];
  threads: number;
  floor: Map<number, BenchRow>;
  rows: BenchRow[];
  progress: (message: string) => void;
}

function meta(threads: number, concurrency: number[]): BenchMeta {
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    loadAvg: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    threads,
    concurrency,
    notes: [],
  };
}

async function measureSubject(run: Run, subject: Subject): Promise<void> {
  run.progress(`${subject.label}: ${subject.calls} calls at concurrency ${run.concurrency.join(', ')}`);
  const rows = await runSubject(subject, run.concurrency, run.floor as FloorRows);
  run.rows.push(...rows);
}

async function measureFloor(run: Run, calls: number, payload: unknown): Promise<void> {
  const floor = startFloor({ threads: run.threads, calls, payload });
  try {
    run.progress(`${floor.subject.label}: ${calls} calls at concurrency ${run.concurrency.join(', ')}`);
    const rows = await runSubject(floor.subject, run.concurrency, new Map());
    for (const row of rows) run.floor.set(row.concurrency, row);
    run.rows.push(...rows);
  } finally {
    await floor.close();
  }
}

/**
 * The no-growth check of a tool in the default isolation, then what a kept
 * instance costs (`conversation` isolation), each in a registry of its own.
 */
async function measureMemory(run: Run, config: ResolvedConfig, target: SandboxedTarget, calls: number, conversations: number, report: BenchReport): Promise<void> {
  const growth = (report.growth ??= []);
  const kept = (report.kept ??= []);
  const concurrency = Math.max(...run.concurrency);
  const modes = [...(calls > 0 ? (['call'] as const) : []), 'conversation'] as const;
  for (const isolation of modes) {
    const registry = createRegistry(benchRegistryOptions(config, run));
    try {
      for (const source of target.sources) await registry.registerWasmTools(source.path, { ...source.options, isolation });
      const call = async (conversationId?: string): Promise<CallOutcome> =>
        outcomeOf(await registry.execute(target.tool, target.args, conversationId === undefined ? {} : { conversationId }));
      // Warm every worker first: the check is about what calls add, not what starting adds.
      for (let i = 0; i < 4 * run.threads; i += 1) await Promise.all(Array.from({ length: concurrency }, () => call()));
      if (isolation === 'call') {
        run.progress(`${target.label}: no-growth check, ${calls} calls in the default isolation (memory after a forced GC at every tenth)`);
        growth.push(await measureGrowth(`${target.label}, isolation=call`, () => call(), calls, concurrency, () => registry.collectWorkerGarbage()));
      } else {
        run.progress(`${target.label}: RSS of kept instances (isolation=conversation, ${conversations} conversations)`);
        kept.push(await measureKeptInstances(`${target.label}, isolation=conversation`, call, conversations));
      }
    } finally {
      await registry.close();
    }
  }
}

/** One registry per isolation mode, each closed before the next one starts. Returns the component that holds the tool. */
async function measureSandboxed(run: Run, config: ResolvedConfig, target: SandboxedTarget, isolations: readonly Isolation[]): Promise<string | undefined> {
  let holder: string | undefined;
  for (const isolation of isolations) {
    const opened = await openSandboxed(config, run, target, isolation);
    holder ??= opened.holder;
    try {
      await measureSubject(run, opened.subject);
    } finally {
      await opened.close();
    }
  }
  return holder;
}

async function measureNative(run: Run, config: ResolvedConfig, calls: number, payload: unknown): Promise<void> {
  const registry = createRegistry(benchRegistryOptions(config, run));
  try {
    registry.register(defineNativeTool({ name: 'native_echo', description: 'Returns its arguments.', inputSchema: { type: 'object' }, idempotent: true, run: (args) => args }));
    await measureSubject(run, {
      id: 'native:echo',
      label: 'native echo (a TypeScript tool, whole call path)',
      kind: 'native',
      tool: 'native_echo',
      calls,
      threads: 0,
      call: async () => outcomeOf(await registry.execute('native_echo', payload)),
    });
  } finally {
    await registry.close();
  }
}

async function measurePeers(run: Run, calls: number, payload: unknown): Promise<void> {
  const peers = await startPeers({ threads: run.threads, calls, payload });
  run.meta.notes.push(...peers.notes);
  try {
    for (const subject of peers.subjects) {
      // A peer that fails is a note, not the end of the run.
      try {
        await measureSubject(run, subject);
      } catch (error) {
        run.meta.notes.push(`${subject.label} skipped: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  } finally {
    await peers.close();
  }
}

/** The rows the targets read (P1, P2, P4), for the paired phase of the standard suite. */
const TARGET_ROWS: ReadonlyArray<{ isolation: Isolation; concurrency: readonly number[] }> = [
  { isolation: 'call', concurrency: [1, 8] },
  { isolation: 'worker', concurrency: [1] },
  { isolation: 'conversation', concurrency: [1] },
];

/** The componentize-js row D4 (issue 37) reads, for the paired phase of the standard suite. */
const JS_TARGET_ROWS: ReadonlyArray<{ isolation: Isolation; concurrency: readonly number[] }> = [{ isolation: 'call', concurrency: [1] }];

/** The Extism runInWorker peer at concurrency 1 (P1 compares against it), as a paired source. */
function extismSource(run: Run, calls: number, payload: unknown): PairedSource {
  return {
    label: 'Extism runInWorker',
    concurrency: [1],
    optional: true,
    open: async () => {
      const peers = await startPeers({ threads: run.threads, calls, payload });
      const subject = peers.subjects.find((s) => s.id === 'extism:worker');
      if (!subject) {
        await peers.close();
        throw new Error(peers.notes.join('; ') || 'no runInWorker subject');
      }
      return { subject, close: () => peers.close() };
    },
  };
}

/** A paired phase over `sources` (the floor is added); its notes join the run's, its rows the report's. */
async function measurePaired(run: Run, rounds: number, calls: number, payload: unknown, sources: PairedSource[], report: BenchReport): Promise<void> {
  if (rounds === 0) {
    run.meta.notes.push('paired phase skipped (--paired-rounds 0): the targets read the sequential rows');
    return;
  }
  if (sources.length === 0) {
    run.meta.notes.push('paired phase skipped: none of the rows it pairs with the floor was measured');
    return;
  }
  const result = await runPaired({ rounds, calls, threads: run.threads, payload, sources, progress: run.progress });
  run.meta.notes.push(...result.notes);
  // A later phase's rows join the first's (each row's ratios are against the floor blocks of its own phase).
  if (report.paired) report.paired.rows.push(...result.phase.rows);
  else report.paired = result.phase;
}

function sandboxedSources(run: Run, config: ResolvedConfig, target: SandboxedTarget, rows: ReadonlyArray<{ isolation: Isolation; concurrency: readonly number[] }>): PairedSource[] {
  return rows
    .map((row) => ({ isolation: row.isolation, concurrency: row.concurrency.filter((c) => run.concurrency.includes(c)) }))
    .filter((row) => row.concurrency.length > 0)
    .map((row) => ({ label: `${target.label}, isolation=${row.isolation}`, concurrency: row.concurrency, open: () => openSandboxed(config, run, target, row.isolation) }));
}

async function measureBudgets(run: Run, config: ResolvedConfig, samples: number): Promise<BenchReport['budgets']> {
  const spinner = join(packageRoot(), 'test', 'fixtures', 'dist', 'counter.wasm');
  if (!existsSync(spinner)) {
    run.meta.notes.push(`budget rows skipped: ${spinner} is missing (node scripts/build-guests.mjs --fixtures; needs clang)`);
    return [];
  }
  run.progress(`budget precision: wall and CPU budgets of 50, 200 and 1000 ms against a guest that spins`);
  const registry = createRegistry(benchRegistryOptions(config, run));
  try {
    await registry.registerWasmTools(spinner);
    await registry.execute('counter', {});
    return await measureEnforcement(registry, 'loop', (budgetMs) => (budgetMs >= 1000 ? Math.max(3, Math.ceil(samples / 4)) : samples));
  } finally {
    await registry.close();
  }
}

async function measureColdStarts(run: Run, targets: Array<{ component: string; tool: string; args: unknown }>): Promise<ColdStart[]> {
  const starts: ColdStart[] = [];
  for (const target of targets) {
    run.progress(`cold start: ${target.tool}, a new process with an empty transpile cache, then with the cache`);
    try {
      starts.push(...(await measureColdStart(target.component, target.tool, target.args)));
    } catch (error) {
      run.meta.notes.push(`cold start of ${target.tool} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return starts;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  const resolved = value ?? fallback;
  if (!Number.isInteger(resolved) || resolved < 0) throw new ToolhostError('INVALID_INPUT', `${name} must be a non-negative integer, not ${String(value)}`);
  return resolved;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  const resolved = value ?? fallback;
  if (!Number.isInteger(resolved) || resolved < 1) throw new ToolhostError('INVALID_INPUT', `${name} must be a positive integer, not ${String(value)}`);
  return resolved;
}

/** Run the benchmark: a user's tool, or the standard suite. */
export async function runBench(options: BenchOptions = {}): Promise<BenchReport> {
  const threads = positive(options.threads, availableParallelism(), 'threads');
  const concurrency = [...new Set(options.concurrency ?? DEFAULT_CONCURRENCY)];
  for (const value of concurrency) positive(value, 1, 'concurrency');
  const isolations = [...new Set(options.isolation ?? ALL_ISOLATIONS)];
  const calls = positive(options.calls, 2000, 'calls');
  const pairedRounds = nonNegative(options.pairedRounds, 5, 'pairedRounds');
  const run: Run = { meta: meta(threads, concurrency), concurrency, threads, floor: new Map(), rows: [], progress: options.progress ?? (() => {}) };
  const load = options.load ?? [];
  const { config, warnings } = await loadHostConfig({ load, ...(options.configPath === undefined ? {} : { configPath: options.configPath }) });
  run.meta.notes.push(...warnings);
  const report: BenchReport = { meta: run.meta, rows: run.rows, budgets: [], coldStarts: [] };

  if (options.tool !== undefined) {
    const args = options.args ?? {};
    const sources: ToolSource[] = load.length > 0 ? load.map((path) => ({ path, options: {} })) : config.tools.map((t) => ({ path: t.path, options: t.options }));
    if (sources.length === 0) throw new ToolhostError('INVALID_INPUT', 'no components to load: pass --load PATH (or a config that names some)');
    await measureFloor(run, calls, args);
    const target: SandboxedTarget = { tool: options.tool, label: options.tool, args, calls, sources };
    const holder = await measureSandboxed(run, config, target, isolations);
    const rows = isolations.map((isolation) => ({ isolation, concurrency }));
    await measurePaired(run, pairedRounds, calls, args, sandboxedSources(run, config, target, rows), report);
    if (options.growthCalls !== undefined && options.growthCalls > 0) await measureMemory(run, config, target, options.growthCalls, 16, report);
    if (options.coldStart !== false && holder !== undefined) report.coldStarts = await measureColdStarts(run, [{ component: holder, tool: options.tool, args }]);
    return report;
  }

  // The standard suite, on the example tools.
  const jsCalls = positive(options.jsCalls, Math.min(200, calls), 'jsCalls');
  const dist = join(packageRoot(), 'guest-tools', 'dist');
  const ctools = join(dist, 'ctools.wasm');
  const text = join(dist, 'text.wasm');
  await measureFloor(run, calls, STANDARD_PAYLOAD);
  await measureNative(run, config, calls, STANDARD_PAYLOAD);
  const coldTargets: Array<{ component: string; tool: string; args: unknown }> = [];
  const cEcho: SandboxedTarget = { tool: 'echo', label: 'C echo', args: STANDARD_PAYLOAD, calls, sources: [{ path: ctools, options: {} }] };
  if (existsSync(ctools)) {
    await measureSandboxed(run, config, cEcho, isolations);
    const growthCalls = options.growthCalls ?? 100_000;
    if (growthCalls === 0) run.meta.notes.push('no-growth check skipped (--growth-calls 0)');
    await measureMemory(run, config, cEcho, growthCalls, 32, report);
    coldTargets.push({ component: ctools, tool: 'echo', args: STANDARD_PAYLOAD });
  } else {
    run.meta.notes.push(`C rows skipped: ${ctools} is missing (building it needs clang: node scripts/build-guests.mjs)`);
  }
  const jsEcho: SandboxedTarget = { tool: 'js_echo', label: 'JS js_echo (componentize-js)', args: STANDARD_PAYLOAD, calls: jsCalls, sources: [{ path: text, options: {} }] };
  if (existsSync(text)) {
    const target = jsEcho;
    await measureSandboxed(run, config, target, isolations);
    // Kept instances only: a componentize-js instance holds ~9 MiB, and 100,000 of its calls take minutes.
    await measureMemory(run, config, target, 0, 8, report);
    coldTargets.push({ component: text, tool: 'js_echo', args: STANDARD_PAYLOAD });
  } else {
    run.meta.notes.push(`JS rows skipped: ${text} is missing (node scripts/build-guests.mjs)`);
  }
  if (options.peers !== false) await measurePeers(run, calls, STANDARD_PAYLOAD);
  if (existsSync(ctools)) {
    const sources = sandboxedSources(run, config, cEcho, TARGET_ROWS.filter((row) => isolations.includes(row.isolation)));
    if (sources.length > 0 && options.peers !== false && run.concurrency.includes(1)) sources.push(extismSource(run, calls, STANDARD_PAYLOAD));
    await measurePaired(run, pairedRounds, calls, STANDARD_PAYLOAD, sources, report);
    // Issue 37's D4 reads js_echo at concurrency 1 paired with the floor, as P1 reads C echo: in a phase of its
    // own (its ~1 ms calls in the same rounds moved C echo's ratios: P1 1.63x and P4 1.36x in one run).
    const jsSources = existsSync(text) ? sandboxedSources(run, config, jsEcho, JS_TARGET_ROWS.filter((row) => isolations.includes(row.isolation))) : [];
    if (jsSources.length > 0) await measurePaired(run, pairedRounds, calls, STANDARD_PAYLOAD, jsSources, report);
  }
  if (options.budgets !== false) report.budgets = await measureBudgets(run, config, positive(options.budgetSamples, 20, 'budgetSamples'));
  else run.meta.notes.push('budget rows skipped (--no-budgets)');
  if (options.coldStart !== false) report.coldStarts = await measureColdStarts(run, coldTargets);
  else run.meta.notes.push('cold starts skipped (--no-cold-start)');
  return report;
}
