/**
 * A benchmark run: the floor first, then every subject in turn (one pool at a
 * time, closed before the next starts, so no two compete for the cores), then
 * the peers, the enforcement-precision rows and the cold starts.
 *
 * Two shapes: a user's tool (`tool` set: that tool under each isolation mode)
 * or the standard suite (the example tools: C `echo`, componentize-js
 * `js_echo`, a native echo, Extism as a peer, budgets, cold starts).
 */
import { existsSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { loadHostConfig } from '../compose/host.js';
import { createRegistry, registryOptions, type RegistryOptions } from '../compose/registry.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { packageRoot } from '../config/package-root.js';
import { ToolhostError } from '../core/errors.js';
import { createDefaultLogger } from '../core/logger.js';
import type { WasmLoadOptions } from '../core/registry.js';
import { defineNativeTool } from '../core/tool.js';
import { measureEnforcement } from './budgets.js';
import { measureColdStart } from './cold-start.js';
import { measureGrowth, measureKeptInstances } from './growth.js';
import { startFloor } from './floor.js';
import { startPeers } from './peers.js';
import { ALL_ISOLATIONS, DEFAULT_CONCURRENCY, type BenchMeta, type BenchReport, type BenchRow, type ColdStart, type Isolation } from './row.js';
import { runSubject, type CallOutcome, type FloorRows, type Subject } from './runner.js';

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
  /** Told what is about to run (the CLI writes it to stderr). */
  progress?: (message: string) => void;
}

const STANDARD_PAYLOAD = { text: 'hello, toolhost', n: 42, ok: true };

interface ToolSource {
  path: string;
  options: WasmLoadOptions;
}

/** A tool measured under each isolation mode, from these components. */
interface SandboxedTarget {
  tool: string;
  label: string;
  args: unknown;
  calls: number;
  sources: ToolSource[];
}

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

/** The host's registry options for a benchmark: the config's, quiet (errors only), with the run's threads. */
function benchRegistryOptions(config: ResolvedConfig, run: Run): RegistryOptions {
  const options = registryOptions(config, { logger: createDefaultLogger('error') });
  const maxQueue = Math.max(run.threads * 64, ...run.concurrency);
  return { ...options, sandbox: { ...options.sandbox, threads: run.threads, maxQueue } };
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

function outcomeOf(result: { isError: boolean; error?: { code: string; message: string }; accounting?: CallOutcome['accounting'] }): CallOutcome {
  const outcome: CallOutcome = { ok: !result.isError };
  if (result.accounting) outcome.accounting = result.accounting;
  if (result.error) outcome.error = `${result.error.code}: ${result.error.message}`;
  return outcome;
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
    const rssBefore = process.memoryUsage.rss();
    const registry = createRegistry(benchRegistryOptions(config, run));
    try {
      for (const source of target.sources) {
        const report = await registry.registerWasmTools(source.path, { ...source.options, isolation });
        for (const component of report.components) {
          if (component.tools.includes(target.tool) && component.path !== undefined) holder ??= component.path;
        }
      }
      if (!registry.has(target.tool)) {
        throw new ToolhostError('TOOL_NOT_FOUND', `no tool named "${target.tool}" in ${target.sources.map((s) => s.path).join(', ')} (tools: ${registry.names().join(', ') || 'none'})`);
      }
      const callOptions = isolation === 'conversation' ? { conversationId: 'bench' } : {};
      await measureSubject(run, {
        id: `toolhost:${target.tool}:${isolation}`,
        label: `${target.label}, isolation=${isolation}`,
        kind: 'toolhost',
        tool: target.tool,
        isolation,
        calls: target.calls,
        threads: run.threads,
        rssBefore,
        call: async () => outcomeOf(await registry.execute(target.tool, target.args, callOptions)),
      });
    } finally {
      await registry.close();
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
  if (existsSync(ctools)) {
    const target: SandboxedTarget = { tool: 'echo', label: 'C echo', args: STANDARD_PAYLOAD, calls, sources: [{ path: ctools, options: {} }] };
    await measureSandboxed(run, config, target, isolations);
    const growthCalls = options.growthCalls ?? 100_000;
    if (growthCalls === 0) run.meta.notes.push('no-growth check skipped (--growth-calls 0)');
    await measureMemory(run, config, target, growthCalls, 32, report);
    coldTargets.push({ component: ctools, tool: 'echo', args: STANDARD_PAYLOAD });
  } else {
    run.meta.notes.push(`C rows skipped: ${ctools} is missing (building it needs clang: node scripts/build-guests.mjs)`);
  }
  if (existsSync(text)) {
    const target: SandboxedTarget = { tool: 'js_echo', label: 'JS js_echo (componentize-js)', args: STANDARD_PAYLOAD, calls: jsCalls, sources: [{ path: text, options: {} }] };
    await measureSandboxed(run, config, target, isolations);
    // Kept instances only: a componentize-js instance holds ~9 MiB, and 100,000 of its calls take minutes.
    await measureMemory(run, config, target, 0, 8, report);
    coldTargets.push({ component: text, tool: 'js_echo', args: STANDARD_PAYLOAD });
  } else {
    run.meta.notes.push(`JS rows skipped: ${text} is missing (node scripts/build-guests.mjs)`);
  }
  if (options.peers !== false) await measurePeers(run, calls, STANDARD_PAYLOAD);
  if (options.budgets !== false) report.budgets = await measureBudgets(run, config, positive(options.budgetSamples, 20, 'budgetSamples'));
  else run.meta.notes.push('budget rows skipped (--skip-budgets)');
  if (options.coldStart !== false) report.coldStarts = await measureColdStarts(run, coldTargets);
  else run.meta.notes.push('cold starts skipped (--skip-cold-start)');
  return report;
}
