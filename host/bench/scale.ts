/**
 * `toolhost bench --scale N` (issue 28): hundreds of tools on one host. N
 * distinct components (half C `ctools.wasm`, half componentize-js
 * `text.wasm`, each made distinct by a custom section of its own, so each has
 * its own digest) are loaded on one host, and the four goals are measured:
 *
 * - S1, idle cost: JS components loaded and called once each, then left
 *   alone until the workers released their instances (`idle_release_ms`, set
 *   short here): RSS per component over the process before they were loaded;
 * - S2, 500 components: ready (loaded and warmed, as `serve` does before it
 *   listens) with a warm transpile cache, RSS then, `tools/list` built;
 * - S3, cold first calls (never called in this process) of C and JS
 *   components, and the hot calls of one of each for comparison;
 * - S4, a working set larger than the memory budget: calls spread over up to
 *   200 JS components, with the failures, evictions and re-instantiations the
 *   host reported (accounting and `/metrics`).
 *
 * Thread containment, so the process's RSS holds the workers too. The
 * components' files and their transpile cache entries are kept between runs
 * (the same N makes the same digests): the first run transpiles each JS
 * component (~1-2 s each), later ones read the cache.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadHostConfig } from '../compose/host.js';
import { createRegistry } from '../compose/registry.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { packageRoot } from '../config/package-root.js';
import type { ToolRegistry } from '../core/registry.js';
import { forcedGc } from '../core/forced-gc.js';
import { listTools } from '../servers/mcp-server.js';
import { createMetrics } from '../servers/metrics.js';
import { benchRegistryOptions } from './sandboxed.js';
import { percentile } from './statistics.js';
import { checkScaleTargets, type ScaleReport } from './scale-targets.js';

export interface ScaleOptions {
  /** Components in all (half C, half JS; at least 2). */
  components: number;
  threads?: number;
  configPath?: string;
  /** Calls of the S4 working set (default 600). */
  workingSetCalls?: number;
  progress?: (message: string) => void;
}

/** How long an uncalled component keeps its instances in the S1 phase (ms): short, so the run need not wait a minute. */
const S1_IDLE_RELEASE_MS = 1000;
/** Components of each kind whose first call S3 times. */
const COLD_SAMPLES = 20;
/** JS components the S4 working set spreads its calls over (at most). */
const WORKING_SET = 200;
const PAYLOAD = { text: 'hello from a scale run' };

interface Kind {
  kind: 'c' | 'js';
  source: string;
  tool: string;
}

interface Made {
  kind: Kind;
  path: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
export const rssMb = (): number => process.memoryUsage.rss() / 1048576;
export const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/** `bytes` with a custom section named `toolhost-scale` holding `tag` appended: the same component, a digest of its own. */
export function withCustomSection(bytes: Uint8Array, tag: string): Buffer {
  const name = Buffer.from('toolhost-scale');
  const body = Buffer.concat([uleb(name.length), name, Buffer.from(tag)]);
  return Buffer.concat([bytes, Buffer.from([0]), uleb(body.length), body]);
}

function uleb(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return Buffer.from(out);
}

/** Write the N components (kept when already there: the same N makes the same files). */
async function makeComponents(count: number, kinds: Kind[]): Promise<Made[]> {
  const dir = join(tmpdir(), 'toolhost-scale-components');
  await mkdir(dir, { recursive: true });
  const sources = new Map<string, Buffer>();
  for (const kind of kinds) sources.set(kind.kind, await readFile(kind.source));
  const made: Made[] = [];
  for (let i = 0; i < count; i += 1) {
    const kind = kinds[i % kinds.length]!;
    const bytes = withCustomSection(sources.get(kind.kind)!, `${kind.kind}-${i}`);
    const path = join(dir, `scale-${kind.kind}-${String(i).padStart(4, '0')}.wasm`);
    const existing = await stat(path).catch(() => undefined);
    if (existing?.size !== bytes.length) await writeFile(path, bytes);
    made.push({ kind, path });
  }
  return made;
}

/** The registered name of each component's measured tool, by path. */
async function register(registry: ToolRegistry, made: readonly Made[]): Promise<Map<string, string>> {
  const report = await registry.registerWasmTools(made.map((m) => m.path));
  const names = new Map<string, string>();
  for (const component of report.components) {
    const kind = made.find((m) => m.path === component.path)?.kind;
    const name = component.tools.find((tool) => tool === kind?.tool || tool.endsWith(`.${kind?.tool}`));
    if (component.path !== undefined && name !== undefined) names.set(component.path, name);
  }
  return names;
}

async function timedCall(registry: ToolRegistry, name: string): Promise<{ ms: number; ok: boolean; evictions: number; reinstantiated: boolean }> {
  const t0 = performance.now();
  const result = await registry.execute(name, PAYLOAD);
  const ms = performance.now() - t0;
  return { ms, ok: !result.isError, evictions: result.accounting?.evictions ?? 0, reinstantiated: result.accounting?.reinstantiated === true };
}

/** p50 and p99 of `values` (ms, two decimals), and how many. */
export function summary(values: number[]): { p50: number; p99: number; n: number } {
  const sorted = Float64Array.from(values).sort();
  return { p50: round(percentile(sorted, 0.5), 2), p99: round(percentile(sorted, 0.99), 2), n: values.length };
}

/**
 * RSS once the workers' heaps and the main thread's were collected and the process settled (compiled modules
 * the host released are freed only when their last holder's heap is collected).
 */
export async function settledRss(registry?: ToolRegistry): Promise<number> {
  await registry?.collectWorkerGarbage();
  const gc = forcedGc();
  gc?.();
  gc?.();
  await sleep(300);
  return rssMb();
}

export async function runScale(options: ScaleOptions): Promise<ScaleReport> {
  const progress = options.progress ?? (() => {});
  const count = Math.max(2, options.components);
  const threads = options.threads ?? availableParallelism();
  const dist = join(packageRoot(), 'guest-tools', 'dist');
  const kinds: Kind[] = [
    { kind: 'c', source: join(dist, 'ctools.wasm'), tool: 'echo' },
    { kind: 'js', source: join(dist, 'text.wasm'), tool: 'js_echo' },
  ];
  for (const kind of kinds) if (!existsSync(kind.source)) throw new Error(`${kind.source} is missing (node scripts/build-guests.mjs builds it)`);
  const { config } = await loadHostConfig({ load: [], ...(options.configPath === undefined ? {} : { configPath: options.configPath }) });
  const shape = { threads, concurrency: [4] };
  const open = (extra: { idleReleaseMs?: number } = {}): ToolRegistry => {
    const base = benchRegistryOptions(config as ResolvedConfig, shape);
    return createRegistry({ ...base, sandbox: { ...base.sandbox, containment: 'thread', maxQueue: 4096, ...extra } });
  };
  const cpu = cpus()[0]?.model ?? 'unknown';
  const report: Partial<ScaleReport> & Pick<ScaleReport, 'meta'> = {
    meta: { date: new Date().toISOString(), node: process.version, cores: availableParallelism(), cpu, loadAvg: round(loadavg()[0] ?? 0, 2), threads, components: count, notes: [] },
  };
  report.meta.notes.push(`S1 with host.pool.idle_release_ms ${S1_IDLE_RELEASE_MS} (default 60 000); the rest with the config's pool settings`);
  report.meta.notes.push(`MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_ ?? '(unset: glibc adapts it)'} (see docs/sizing.md)`);

  progress(`making ${count} components`);
  const made = await makeComponents(count, kinds);
  const js = made.filter((m) => m.kind.kind === 'js');
  const c = made.filter((m) => m.kind.kind === 'c');

  // Prime the transpile cache in a process of its own (a no-op but for reading when it is warm).
  progress('priming the transpile cache (the first run transpiles every JS component: minutes)');
  let t0 = performance.now();
  report.transpiled = await prime(config.sandbox.cacheDir, made.map((m) => m.path));
  report.primeMs = Math.round(performance.now() - t0);

  // S1: JS components loaded, each called once, then idle until released.
  const s1Count = Math.min(js.length, 100);
  progress(`S1: ${s1Count} JS components, each called once, then idle ${S1_IDLE_RELEASE_MS} ms`);
  {
    const registry = open({ idleReleaseMs: S1_IDLE_RELEASE_MS });
    // The base: the pool started, its workers running one C component.
    const first = await register(registry, c.slice(0, 1));
    await registry.execute(first.get(c[0]!.path)!, PAYLOAD);
    const before = await settledRss(registry);
    const names = await register(registry, js.slice(0, s1Count));
    await registry.warm();
    for (const m of js.slice(0, s1Count)) await registry.execute(names.get(m.path)!, PAYLOAD);
    const called = await settledRss(registry);
    await sleep(S1_IDLE_RELEASE_MS * 3);
    const idle = await settledRss(registry);
    report.s1 = { components: s1Count, baseMb: round(before), calledMb: round(called), idleMb: round(idle), idlePerComponentMb: round((idle - before) / s1Count, 2), calledPerComponentMb: round((called - before) / s1Count, 2) };
    await registry.close();
  }

  // S2: every component on one host.
  progress(`S2: ${count} components (${c.length} C, ${js.length} JS) on one host`);
  const before = await settledRss();
  const registry = open();
  const metrics = createMetrics(registry);
  try {
    t0 = performance.now();
    const names = await register(registry, made);
    await registry.warm();
    const readyMs = performance.now() - t0;
    const readyRss = await settledRss(registry);
    const listMs: number[] = [];
    let tools = 0;
    for (let i = 0; i < 5; i += 1) {
      const l0 = performance.now();
      tools = listTools(registry).length;
      listMs.push(performance.now() - l0);
    }
    report.s2 = { readyMs: Math.round(readyMs), baseMb: round(before), rssMb: round(readyRss), tools, listMs: summary(listMs).p50 };

    // S3: first calls of components never called here, then a hot one of each kind.
    progress('S3: cold and hot calls');
    const cold = async (set: Made[]): Promise<number[]> => {
      const times: number[] = [];
      for (const m of set.slice(-COLD_SAMPLES)) times.push((await timedCall(registry, names.get(m.path)!)).ms);
      return times;
    };
    const coldC = await cold(c);
    const coldJs = await cold(js);
    const hot = async (m: Made, calls: number): Promise<number[]> => {
      const name = names.get(m.path)!;
      for (let i = 0; i < 20; i += 1) await registry.execute(name, PAYLOAD);
      const times: number[] = [];
      for (let i = 0; i < calls; i += 1) times.push((await timedCall(registry, name)).ms);
      return times;
    };
    report.s3 = { coldC: summary(coldC), coldJs: summary(coldJs), hotC: summary(await hot(c[0]!, 500)), hotJs: summary(await hot(js[0]!, 200)) };

    // S4: calls spread over a working set of JS components larger than the budget.
    const set = js.slice(0, WORKING_SET);
    const calls = options.workingSetCalls ?? 600;
    progress(`S4: ${calls} calls over ${set.length} JS components, 4 in flight`);
    let peak = rssMb();
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb());
    }, 100);
    let failed = 0;
    let evictions = 0;
    let reinstantiated = 0;
    const firstErrors: string[] = [];
    let next = 0;
    const seeded = mulberry32(28);
    const worker = async (): Promise<void> => {
      while (next < calls) {
        next += 1;
        const m = set[Math.floor(seeded() * set.length)]!;
        const result = await registry.execute(names.get(m.path)!, PAYLOAD);
        if (result.isError) {
          failed += 1;
          if (firstErrors.length < 3) firstErrors.push(`${result.error?.code}: ${result.error?.message}`);
        }
        evictions += result.accounting?.evictions ?? 0;
        if (result.accounting?.reinstantiated === true) reinstantiated += 1;
      }
    };
    // Counted over this phase: the earlier phases' calls may have evicted too.
    const before4 = await metrics.metrics();
    t0 = performance.now();
    await Promise.all([worker(), worker(), worker(), worker()]);
    clearInterval(sampler);
    const text = await metrics.metrics();
    report.s4 = {
      components: set.length,
      calls,
      failed,
      errors: firstErrors,
      seconds: round((performance.now() - t0) / 1000, 1),
      evictions,
      reinstantiated,
      metricsEvictions: metricSum(text, 'toolhost_instance_evictions_total') - metricSum(before4, 'toolhost_instance_evictions_total'),
      metricsReinstantiations: metricSum(text, 'toolhost_instance_reinstantiations_total') - metricSum(before4, 'toolhost_instance_reinstantiations_total'),
      peakRssMb: round(Math.max(peak, rssMb())),
      budgetMb: config.sandbox.memoryBudgetMb ?? 512,
    };
  } finally {
    metrics.close();
    await registry.close();
  }
  const { primeMs, transpiled, s1, s2, s3, s4 } = report;
  if (primeMs === undefined || transpiled === undefined || s1 === undefined || s2 === undefined || s3 === undefined || s4 === undefined) throw new Error('a phase of the scale scenario did not run');
  const done = { meta: report.meta, primeMs, transpiled, s1, s2, s3, s4 };
  return { ...done, targets: checkScaleTargets(done) };
}

/** Load every component once in a process of its own (scale-prime-child.ts); how many were transpiled. */
export function prime(cacheDir: string | undefined, files: string[]): Promise<number> {
  const script = fileURLToPath(new URL('./scale-prime-child.js', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, cacheDir ?? '-', ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`priming the transpile cache failed (exit ${code})`));
      resolve((JSON.parse(stdout) as { transpiled: number }).transpiled);
    });
  });
}

/** The sum of a counter's samples in Prometheus text. */
function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** A small seeded generator: the same working set every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
