/**
 * `toolhost bench [TOOL]`: measure a tool (or, without one, the standard
 * suite) against the floor, under each isolation mode, and print the table
 * (or JSON); `--report FILE.html` also writes a page with charts. Progress
 * goes to stderr, results to stdout.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ALL_ISOLATIONS, DEFAULT_CONCURRENCY, type Isolation } from '../bench/row.js';
import type { BenchOptions } from '../bench/suite.js';
import { UsageError } from './usage-error.js';

export interface BenchCommandOptions {
  /** Trace every call to a local OTLP sink (also TOOLHOST_BENCH_TRACE=1). */
  trace?: boolean;
  args?: string;
  load: string[];
  config?: string;
  calls?: string;
  jsCalls?: string;
  concurrency?: string;
  isolation?: string;
  threads?: string;
  budgetSamples?: string;
  growthCalls?: string;
  pairedRounds?: string;
  budgets: boolean;
  coldStart: boolean;
  peers: boolean;
  json?: boolean;
  report?: string;
  quiet?: boolean;
  scale?: string;
  distinct?: boolean;
}

function positiveInt(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`${flag} must be a positive integer, not "${text}"`);
  return value;
}

function nonNegativeInt(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new UsageError(`${flag} must be a non-negative integer, not "${text}"`);
  return value;
}

function list(text: string, flag: string): string[] {
  const items = text.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  if (items.length === 0) throw new UsageError(`${flag} must list at least one value`);
  return items;
}

/** The command line as benchmark options (usage errors for anything malformed). */
export function benchOptions(tool: string | undefined, options: BenchCommandOptions): BenchOptions {
  const result: BenchOptions = { load: options.load, budgets: options.budgets, coldStart: options.coldStart, peers: options.peers };
  if (tool !== undefined) result.tool = tool;
  if (options.args !== undefined) {
    try {
      result.args = JSON.parse(options.args) as unknown;
    } catch (error) {
      throw new UsageError(`--args must be JSON: ${(error as Error).message}`);
    }
  }
  if (tool === undefined && options.load.length > 0) throw new UsageError('--load needs a TOOL to measure (the standard suite runs the example tools)');
  if (options.config !== undefined) result.configPath = options.config;
  if (options.calls !== undefined) result.calls = positiveInt(options.calls, '--calls');
  if (options.jsCalls !== undefined) result.jsCalls = positiveInt(options.jsCalls, '--js-calls');
  if (options.threads !== undefined) result.threads = positiveInt(options.threads, '--threads');
  if (options.budgetSamples !== undefined) result.budgetSamples = positiveInt(options.budgetSamples, '--budget-samples');
  if (options.growthCalls !== undefined) result.growthCalls = nonNegativeInt(options.growthCalls, '--growth-calls');
  if (options.pairedRounds !== undefined) result.pairedRounds = nonNegativeInt(options.pairedRounds, '--paired-rounds');
  result.concurrency = options.concurrency === undefined ? [...DEFAULT_CONCURRENCY] : list(options.concurrency, '--concurrency').map((c) => positiveInt(c, '--concurrency'));
  if (options.isolation !== undefined) {
    result.isolation = list(options.isolation, '--isolation').map((mode) => {
      if (!(ALL_ISOLATIONS as readonly string[]).includes(mode)) throw new UsageError(`--isolation takes ${ALL_ISOLATIONS.join(', ')}, not "${mode}"`);
      return mode as Isolation;
    });
  }
  if (options.report !== undefined && !options.report.toLowerCase().endsWith('.html')) throw new UsageError('--report must name an .html file');
  return result;
}

export async function bench(tool: string | undefined, options: BenchCommandOptions): Promise<number> {
  if (options.scale !== undefined) return benchScale(tool, options);
  if (options.distinct === true) throw new UsageError('--distinct goes with --scale N (N distinct JS tools)');
  const benchOpts = benchOptions(tool, options);
  // The engine (and through it the host) loads once the command line is known to be good.
  const [{ runBench }, { checkTargets, benchExitCode }, { formatReport }] = await Promise.all([import('../bench/suite.js'), import('../bench/targets.js'), import('../bench/table.js')]);
  if (!options.quiet) benchOpts.progress = (message) => process.stderr.write(`bench: ${message}\n`);
  const traced = options.trace === true || process.env.TOOLHOST_BENCH_TRACE === '1' ? await traceBench() : undefined;
  let report: Awaited<ReturnType<typeof runBench>>;
  try {
    report = await runBench(benchOpts);
  } finally {
    await traced?.close();
  }
  const targets = tool === undefined ? checkTargets(report) : undefined;
  if (options.json) process.stdout.write(`${JSON.stringify({ ...report, ...(targets ? { targets } : {}) }, null, 2)}\n`);
  else process.stdout.write(`${formatReport(report, targets)}\n`);
  if (options.report !== undefined) {
    const { renderHtmlReport } = await import('../bench/report-html.js');
    const file = resolve(options.report);
    await writeFile(file, renderHtmlReport(report, targets));
    process.stderr.write(`bench: wrote ${file}\n`);
  }
  const missed = (targets ?? []).filter((target) => target.met === false).map((target) => target.id);
  if (missed.length > 0) process.stderr.write(`toolhost bench: missed target${missed.length === 1 ? '' : 's'} ${missed.join(', ')} (exit 1)\n`);
  return benchExitCode([...report.rows, ...(report.paired?.rows ?? [])].some((row) => row.errors > 0), targets);
}

/**
 * `--trace` (or TOOLHOST_BENCH_TRACE=1): every benchmark registry traces 100 % of its calls (always_on) over
 * OTLP/HTTP protobuf to a sink on loopback (bench/trace-sink.ts), to measure what tracing costs the call path.
 */
async function traceBench(): Promise<{ close(): Promise<void> }> {
  const [{ startTraceSink }, { telemetrySettings }, { createTracer }, { traceBenchCalls }] = await Promise.all([
    import('../bench/trace-sink.js'), import('../telemetry/settings.js'), import('../telemetry/sdk.js'), import('../bench/sandboxed.js'),
  ]);
  const sink = await startTraceSink();
  const settings = telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'toolhost-bench' })!;
  const tracer = await createTracer(settings, 'bench');
  traceBenchCalls(tracer);
  process.stderr.write(`bench: tracing every call to ${sink.url} (OTLP/HTTP protobuf, always_on)\n`);
  return {
    async close() {
      traceBenchCalls(undefined);
      await tracer.shutdown().catch(() => undefined);
      process.stderr.write(`bench: the trace sink received ${sink.received.requests} exports, ${sink.received.bytes} bytes\n`);
      await sink.close();
    },
  };
}

/** `toolhost bench --scale N`: N distinct components on one host, against the goals S1-S4 (see bench/scale.ts). */
async function benchScale(tool: string | undefined, options: BenchCommandOptions): Promise<number> {
  if (tool !== undefined) throw new UsageError('--scale runs its own components: it takes no TOOL');
  const components = positiveInt(options.scale ?? '', '--scale');
  if (components < 2 && options.distinct !== true) throw new UsageError('--scale needs at least 2 components (one C, one JS)');
  if (options.report !== undefined && !options.report.toLowerCase().endsWith('.html')) throw new UsageError('--report must name an .html file');
  const threads = options.threads === undefined ? undefined : positiveInt(options.threads, '--threads');
  // Measured as a host should run: with the allocator setting the sandbox process gets (sandbox/malloc-env.ts),
  // which a process reads at its start: without it, run again in a process that has it.
  if (process.env.MALLOC_MMAP_THRESHOLD_ === undefined && process.argv[1] !== undefined) {
    const [{ spawn }, { guestProcessEnv }] = await Promise.all([import('node:child_process'), import('../sandbox/malloc-env.js')]);
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...process.argv.slice(2)], { env: guestProcessEnv(), stdio: 'inherit' });
    return new Promise((done, fail) => {
      child.on('error', fail);
      child.on('exit', (code) => done(code ?? 1));
    });
  }
  if (options.distinct === true) return benchDistinct(components, threads, options);
  const { runScale } = await import('../bench/scale.js');
  const { formatScaleReport, renderScaleHtml } = await import('../bench/scale-targets.js');
  const report = await runScale({
    components,
    ...(threads === undefined ? {} : { threads }),
    ...(options.config === undefined ? {} : { configPath: options.config }),
    ...(options.calls === undefined ? {} : { workingSetCalls: positiveInt(options.calls, '--calls') }),
    ...(options.quiet ? {} : { progress: (message: string) => process.stderr.write(`bench: ${message}\n`) }),
  });
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatScaleReport(report)}\n`);
  if (options.report !== undefined) {
    const file = resolve(options.report);
    await writeFile(file, renderScaleHtml(report));
    process.stderr.write(`bench: wrote ${file}\n`);
  }
  return report.s4.failed > 0 ? 1 : 0;
}

/** `toolhost bench --scale N --distinct`: N distinct JS tools (and N/4 C) on one host, against D1-D5 (bench/distinct.ts). */
async function benchDistinct(tools: number, threads: number | undefined, options: BenchCommandOptions): Promise<number> {
  const [{ runDistinct }, { formatDistinctReport, renderDistinctHtml }] = await Promise.all([import('../bench/distinct.js'), import('../bench/distinct-targets.js')]);
  const report = await runDistinct({
    tools,
    ...(threads === undefined ? {} : { threads }),
    ...(options.config === undefined ? {} : { configPath: options.config }),
    ...(options.quiet ? {} : { progress: (message: string) => process.stderr.write(`bench: ${message}\n`) }),
  });
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatDistinctReport(report)}\n`);
  if (options.report !== undefined) {
    const file = resolve(options.report);
    await writeFile(file, renderDistinctHtml(report));
    process.stderr.write(`bench: wrote ${file}\n`);
  }
  // A missed goal is a failed run: the goals are what this command checks.
  return report.targets.some((target) => target.met === false) ? 1 : 0;
}
