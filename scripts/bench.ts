/**
 * Per-call cost of the host, against the cost of a bare piscina round trip.
 *
 *   npx tsx scripts/bench.ts [--calls N] [--js-calls N] [--json] [--cache-dir DIR]
 *   npm run bench -- [same flags]          (after `npm run build:host`)
 *
 * Rows, each at concurrency 1 and at saturation, after a warm-up:
 *   floor        a separate piscina pool whose task returns its input
 *   native echo  a defineNativeTool through the whole host (registry.execute)
 *   C echo       `echo` from guest-tools/dist/ctools.wasm, a fresh instance per call (the default)
 *   C echo, isolation=worker   the same tool with one instance reused per worker
 *   JS echo      `js_echo` from guest-tools/dist/text.wasm
 *
 * Every row has a fixed number of calls, so the run is bounded; the defaults
 * finish well inside two minutes on two cores.
 */
import { existsSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Piscina } from 'piscina';
import { createDefaultLogger, createRegistry, defineNativeTool, type CallAccounting, type RegistryOptions } from '../host/index.js';
import { formatBudgetTable, measureEnforcement, type BudgetRow } from './bench-budgets.js';

type InstanceSource = NonNullable<CallAccounting['instance']>;

/** What one call reported back to the measuring loop. */
interface CallOutcome {
  ok: boolean;
  /** Why it failed, when it did. */
  error?: string;
  accounting?: CallAccounting;
}

type CallFn = () => Promise<CallOutcome>;

/** Something benchmarked at two concurrencies. */
interface Subject {
  label: string;
  calls: number;
  /** Sandboxed rows also report where their instances came from. */
  sandboxed: boolean;
  call: CallFn;
}

interface InstanceShare {
  prewarmed: number;
  fresh: number;
  reused: number;
}

interface RowResult {
  label: string;
  concurrency: number;
  calls: number;
  errors: number;
  firstError?: string;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** Completed calls per second of the whole row (first start to last end). */
  callsPerSec: number;
  /** This row's p50 over the floor's p50 at the same concurrency. */
  p50VsFloor: number;
  /** This row's throughput over the floor's at the same concurrency. */
  throughputVsFloor: number;
  /** Sandboxed rows: calls served per instance source. */
  instances?: InstanceShare;
  /** Sandboxed rows: mean `accounting.instantiateMs` (0 for prewarmed and reused instances). */
  meanInstantiateMs?: number;
  /** Sandboxed rows: mean `accounting.queuedMs` (submission to the worker starting the task). */
  meanQueuedMs?: number;
}

interface BenchMeta {
  date: string;
  node: string;
  platform: string;
  cpu: string;
  cores: number;
  /** 1-minute load average when the run started: other work on the machine skews every row. */
  loadAvg: number;
  threads: number;
  saturation: number;
  calls: number;
  jsCalls: number;
  /** How long registering the components took (transpile cache hit or miss), ms. */
  loadMs?: number;
  cache?: string[];
  skipped: string[];
}

const USAGE = `usage: bench [--calls N] [--js-calls N] [--budget-samples N] [--skip-budgets] [--json] [--cache-dir DIR]
  --calls N           calls per row for the floor, native and C rows (default 2000)
  --js-calls N        calls per row for the JS row (default 200; a JS instance costs tens of ms)
  --budget-samples N  spinning calls per 50 and 200 ms budget (default 20; a quarter of that at 1000 ms)
  --skip-budgets      leave out the enforcement-precision rows
  --json              also print the results as JSON
  --cache-dir DIR     transpile cache (default: toolhost's default cache directory)`;

/** A bad command line: reported with the usage, without a stack. */
class UsageError extends Error {}

const CLI_OPTIONS = {
  calls: { type: 'string' },
  'js-calls': { type: 'string' },
  'budget-samples': { type: 'string' },
  'skip-budgets': { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  'cache-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function parseCli() {
  try {
    return parseArgs({ options: CLI_OPTIONS, strict: true }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function positiveInt(text: string | undefined, fallback: number, flag: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`${flag} must be a positive integer, not "${text}"`);
  return value;
}

/** The project root: the nearest ancestor with a package.json (scripts/ from source, dist/scripts/ when compiled). */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the project root (no package.json above this script)');
    dir = parent;
  }
}

/** The floor's worker, resolved the way host/sandbox/pool.ts resolves its own. */
function echoWorkerScript(): string {
  const compiled = new URL('./bench-echo-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return compiled.href;
  return new URL('./bench-echo-worker-dev.mjs', import.meta.url).href;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}

interface Measurement {
  latencies: Float64Array;
  elapsedMs: number;
  errors: number;
  firstError?: string;
  accountings: CallAccounting[];
}

/**
 * Run `calls` calls with at most `concurrency` in flight: that many lanes,
 * each starting its next call as soon as its previous one ends.
 */
async function measure(call: CallFn, calls: number, concurrency: number): Promise<Measurement> {
  const latencies = new Float64Array(calls);
  const accountings: CallAccounting[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const lane = async (): Promise<void> => {
    while (next < calls) {
      const index = next++;
      const t0 = performance.now();
      let outcome: CallOutcome;
      try {
        outcome = await call();
      } catch (error) {
        outcome = { ok: false, error: error instanceof Error ? error.message : String(error) };
      }
      latencies[index] = performance.now() - t0;
      if (!outcome.ok) {
        errors += 1;
        firstError ??= outcome.error ?? 'unknown error';
      }
      if (outcome.accounting) accountings.push(outcome.accounting);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, lane));
  const elapsedMs = performance.now() - start;
  latencies.sort();
  const result: Measurement = { latencies, elapsedMs, errors, accountings };
  if (firstError !== undefined) result.firstError = firstError;
  return result;
}

function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** The floor's rows by concurrency, for the ratio columns. */
type FloorRows = Map<number, RowResult>;

async function runSubject(subject: Subject, concurrencies: number[], floor: FloorRows): Promise<RowResult[]> {
  // Warm up at the highest concurrency so every worker has loaded the component
  // (its first call asks the main thread for the compiled modules and imports the glue).
  const warmup = Math.min(200, Math.max(20, Math.ceil(subject.calls / 10)));
  const warm = await measure(subject.call, warmup, Math.max(...concurrencies));
  if (warm.errors > 0) throw new Error(`${subject.label}: warm-up failed: ${warm.firstError ?? 'unknown error'}`);

  const rows: RowResult[] = [];
  for (const concurrency of concurrencies) {
    const m = await measure(subject.call, subject.calls, concurrency);
    const callsPerSec = (subject.calls / m.elapsedMs) * 1000;
    const p50Ms = percentile(m.latencies, 0.5);
    const base = floor.get(concurrency);
    const row: RowResult = {
      label: subject.label,
      concurrency,
      calls: subject.calls,
      errors: m.errors,
      p50Ms,
      p99Ms: percentile(m.latencies, 0.99),
      meanMs: mean(Array.from(m.latencies)),
      callsPerSec,
      // The floor rows are their own base: both ratios are 1.
      p50VsFloor: base ? p50Ms / base.p50Ms : 1,
      throughputVsFloor: base ? callsPerSec / base.callsPerSec : 1,
    };
    if (m.firstError !== undefined) row.firstError = m.firstError;
    if (subject.sandboxed) {
      const instances: InstanceShare = { prewarmed: 0, fresh: 0, reused: 0 };
      for (const accounting of m.accountings) {
        const source: InstanceSource | undefined = accounting.instance;
        if (source) instances[source] += 1;
      }
      row.instances = instances;
      row.meanInstantiateMs = mean(m.accountings.map((a) => a.instantiateMs ?? 0));
      row.meanQueuedMs = mean(m.accountings.map((a) => a.queuedMs));
    }
    rows.push(row);
  }
  return rows;
}

// --- output ---------------------------------------------------------------

const ms = (value: number): string => value.toFixed(3);
const ratio = (value: number): string => `${value.toFixed(2)}x`;
const pct = (part: number, whole: number): string => (whole === 0 ? '-' : String(Math.round((part / whole) * 100)));

function formatTable(rows: RowResult[]): string {
  const header = ['row', 'conc', 'calls', 'err', 'p50 ms', 'p99 ms', 'calls/s', 'p50/floor', 'tput/floor', 'pre/fresh/reuse %', 'inst ms', 'queued ms'];
  // Right-align numbers, left-align the row label.
  const leftAligned = new Set([0]);
  const cells = rows.map((row) => {
    const counted = row.instances ? row.instances.prewarmed + row.instances.fresh + row.instances.reused : 0;
    return [
      row.label,
      String(row.concurrency),
      String(row.calls),
      String(row.errors),
      ms(row.p50Ms),
      ms(row.p99Ms),
      Math.round(row.callsPerSec).toString(),
      ratio(row.p50VsFloor),
      ratio(row.throughputVsFloor),
      row.instances ? `${pct(row.instances.prewarmed, counted)}/${pct(row.instances.fresh, counted)}/${pct(row.instances.reused, counted)}` : '-',
      row.meanInstantiateMs === undefined ? '-' : ms(row.meanInstantiateMs),
      row.meanQueuedMs === undefined ? '-' : ms(row.meanQueuedMs),
    ];
  });
  const widths = header.map((title, col) => Math.max(title.length, ...cells.map((line) => line[col]!.length)));
  const render = (line: string[]): string =>
    line.map((cell, col) => (leftAligned.has(col) ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('  ').trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  const out = [render(header), rule];
  let previous: string | undefined;
  for (const [index, line] of cells.entries()) {
    // A blank line between subjects keeps the pairs of rows together.
    if (previous !== undefined && rows[index]!.label !== previous) out.push('');
    previous = rows[index]!.label;
    out.push(render(line));
  }
  return out.join('\n');
}

function formatHeader(meta: BenchMeta): string {
  const lines = [
    'toolhost per-call benchmark',
    `date     ${meta.date}`,
    `node     ${meta.node} (${meta.platform})`,
    `cpu      ${meta.cores} cores, ${meta.cpu}; load average ${meta.loadAvg.toFixed(2)} at start`,
    `pool     ${meta.threads} threads (host and floor); saturation = ${meta.saturation} calls in flight`,
    `calls    ${meta.calls} per row (floor, native, C), ${meta.jsCalls} per row (JS), after a warm-up`,
  ];
  if (meta.loadMs !== undefined) lines.push(`load     components registered in ${ms(meta.loadMs)} ms (transpile cache: ${meta.cache?.join(', ') ?? '-'})`);
  return lines.join('\n');
}

const LEGEND = `C echo and JS echo use the default isolation=call (a new instance for every call).
p50/floor, tput/floor: against the floor row at the same concurrency.
pre/fresh/reuse %: share of calls whose instance was prewarmed while the worker was idle,
  created during the call, or kept from an earlier call (accounting.instance).
inst ms: mean accounting.instantiateMs; queued ms: mean accounting.queuedMs (submission to task start).`;

// --- main -----------------------------------------------------------------

async function main(): Promise<void> {
  const values = parseCli();
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const calls = positiveInt(values.calls, 2000, '--calls');
  const jsCalls = positiveInt(values['js-calls'], 200, '--js-calls');
  const budgetSamples = { short: positiveInt(values['budget-samples'], 20, '--budget-samples'), long: 0 };
  budgetSamples.long = Math.max(3, Math.ceil(budgetSamples.short / 4));

  const threads = availableParallelism();
  // The host pool's default queue bound, passed explicitly so saturation can stay under it.
  const maxQueue = threads * 64;
  const saturation = Math.min(4 * threads, threads + maxQueue);
  const concurrencies = [1, saturation];
  const payload = { text: 'hello, toolhost', n: 42, ok: true };

  const meta: BenchMeta = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    loadAvg: loadavg()[0] ?? 0,
    threads,
    saturation,
    calls,
    jsCalls,
    skipped: [],
  };
  const rows: RowResult[] = [];
  const floor: FloorRows = new Map();

  // 1. The floor, in its own pool, configured like the host's and torn down
  //    before the host runs so the two never compete for the cores.
  const echoPool = new Piscina({
    filename: echoWorkerScript(),
    minThreads: threads,
    maxThreads: threads,
    maxQueue,
    concurrentTasksPerWorker: 1,
  });
  try {
    const floorRows = await runSubject(
      { label: 'floor: piscina echo', calls, sandboxed: false, call: async () => ({ ok: (await echoPool.run(payload)) !== undefined }) },
      concurrencies,
      floor,
    );
    for (const row of floorRows) floor.set(row.concurrency, row);
    rows.push(...floorRows);
  } finally {
    await echoPool.destroy();
  }

  // 2-5. Through the whole host. The name collision of the second ctools load is
  //      expected, so only errors are logged.
  const registryOptions: RegistryOptions = { logger: createDefaultLogger('error'), sandbox: { threads, maxQueue } };
  if (values['cache-dir'] !== undefined) registryOptions.sandbox = { ...registryOptions.sandbox, cacheDir: values['cache-dir'] };
  const registry = createRegistry(registryOptions);
  try {
    const host = (name: string): CallFn => async () => {
      const result = await registry.execute(name, payload);
      const outcome: CallOutcome = { ok: !result.isError };
      if (result.accounting) outcome.accounting = result.accounting;
      if (result.error) outcome.error = `${result.error.code}: ${result.error.message}`;
      return outcome;
    };

    // The native rows run before any component is loaded: loading starts the
    // sandbox's worker threads, whose start-up would otherwise compete with them.
    registry.register(
      defineNativeTool({
        name: 'native_echo',
        description: 'Returns its arguments unchanged.',
        inputSchema: { type: 'object' },
        idempotent: true,
        run: (args) => args,
      }),
    );
    rows.push(...(await runSubject({ label: 'native echo', calls, sandboxed: false, call: host('native_echo') }, concurrencies, floor)));

    const dist = join(projectRoot(), 'guest-tools', 'dist');
    const ctools = join(dist, 'ctools.wasm');
    const text = join(dist, 'text.wasm');
    const haveC = existsSync(ctools);
    const haveJs = existsSync(text);
    if (!haveC) meta.skipped.push(`C rows skipped: ${ctools} is missing (building it needs clang; run node scripts/build-guests.mjs)`);
    if (!haveJs) meta.skipped.push(`JS rows skipped: ${text} is missing (run node scripts/build-guests.mjs)`);

    let workerEcho: string | undefined;
    if (haveC || haveJs) {
      const t0 = performance.now();
      const report = await registry.registerWasmTools([...(haveC ? [ctools] : []), ...(haveJs ? [text] : [])]);
      meta.cache = report.components.map((c) => `${c.component} ${c.cache}`);
      if (haveC) {
        // The same component again, reusing one instance per worker. Its tools
        // collide with the first load's, so they come back namespaced.
        const reuse = await registry.registerWasmTools(ctools, { isolation: 'worker' });
        workerEcho = reuse.renamed.find((r) => r.tool === 'echo')?.registeredAs ?? 'echo';
      }
      meta.loadMs = performance.now() - t0;
    }

    const subjects: Subject[] = [];
    if (haveC) {
      subjects.push({ label: 'C echo', calls, sandboxed: true, call: host('echo') });
      if (workerEcho !== undefined) subjects.push({ label: 'C echo, isolation=worker', calls, sandboxed: true, call: host(workerEcho) });
    }
    if (haveJs) subjects.push({ label: 'JS echo', calls: jsCalls, sandboxed: true, call: host('js_echo') });
    for (const subject of subjects) rows.push(...(await runSubject(subject, concurrencies, floor)));
  } finally {
    await registry.close();
  }

  // 6. Enforcement precision, against a test fixture that spins forever.
  let budgetRows: BudgetRow[] = [];
  const spinner = join(projectRoot(), 'test', 'fixtures', 'dist', 'counter.wasm');
  if (values['skip-budgets']) {
    meta.skipped.push('budget rows skipped (--skip-budgets)');
  } else if (!existsSync(spinner)) {
    meta.skipped.push(`budget rows skipped: ${spinner} is missing (run node scripts/build-guests.mjs --fixtures; needs clang)`);
  } else {
    const budgets = createRegistry({ ...registryOptions, sandbox: { ...registryOptions.sandbox, maxQueue } });
    try {
      await budgets.registerWasmTools(spinner);
      await budgets.execute('counter', {});
      budgetRows = await measureEnforcement(budgets, 'loop', (budgetMs) => (budgetMs >= 1000 ? budgetSamples.long : budgetSamples.short));
    } finally {
      await budgets.close();
    }
  }

  console.log(formatHeader(meta));
  for (const note of meta.skipped) console.log(`note     ${note}`);
  console.log('');
  console.log(formatTable(rows));
  console.log('');
  console.log(LEGEND);
  if (budgetRows.length > 0) {
    console.log('');
    console.log('Enforcement precision (a guest spinning forever; wall: call time past budget_wall_ms;');
    console.log('cpu: thread CPU time past budget_cpu_ms when the watchdog stopped it). Goal: p99 <= 10 ms.');
    console.log('');
    console.log(formatBudgetTable(budgetRows));
  }
  for (const row of rows) {
    if (row.errors > 0) console.log(`\n${row.label} (concurrency ${row.concurrency}): ${row.errors} failed calls, first: ${row.firstError ?? '?'}`);
  }
  if (values.json) console.log(`\n${JSON.stringify({ meta, rows, budgets: budgetRows }, null, 2)}`);
  if (rows.some((row) => row.errors > 0)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) console.error(`bench: ${error.message}\n${USAGE}`);
  else console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = error instanceof UsageError ? 2 : 1;
});
