/**
 * `toolhost bench --scale N --distinct` (issue 37): N distinct third-party JS
 * tools (and N/4 C tools) on one host, each its own build of its own source
 * (distinct-tools.ts), against the goals D1-D5:
 *
 * - D5, disk: every component put in a component store (what a pull keeps)
 *   beside the transpile cache, as a host lays them out; the bytes they take
 *   on disk against the components' distinct bytes (disk-usage.ts);
 * - D2, per tool: up to 100 JS tools called once each (RSS per tool after the
 *   calls), then idle until released (`idle_release_ms` short here);
 * - D1, every tool on one host: ready (loaded and warmed, as `serve` does),
 *   RSS then, `tools/list` built;
 * - D3, on that host: the first call of up to 20 JS tools never called in it,
 *   then their second call (and C tools' first calls, for comparison);
 * - D4, a distinct JS tool's hot call against the floor (a bare piscina round
 *   trip), in npm run bench's paired phase: warmed up until its rate settles,
 *   alternating blocks, the median of the per-round ratios.
 *
 * Thread containment, so the process's RSS holds the workers. The bench's own
 * directory (`$TOOLHOST_BENCH_DIR`, else the temp dir) keeps the built
 * components and, per N, the transpile cache and the store: the first run
 * builds (seconds to a minute a JS tool) and transpiles, later ones read.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { loadHostConfig } from '../compose/host.js';
import { createRegistry } from '../compose/registry.js';
import type { ResolvedConfig } from '../config/resolve.js';
import type { ToolRegistry } from '../core/registry.js';
import { ChunkStore } from '../base/chunk-store.js';
import { ComponentStore } from '../distribution/store.js';
import { isCacheFormatDir } from '../sandbox/load/cache-location.js';
import { CHUNKS_DIR } from '../sandbox/load/cache-location.js';
import { listTools } from '../servers/mcp-server.js';
import { benchDir, distinctTools, type DistinctTool } from './distinct-tools.js';
import { checkDistinctTargets, type DistinctReport } from './distinct-targets.js';
import { diskBytes, distinctBytes } from './disk-usage.js';
import { runPaired, type PairedSource } from './paired.js';
import { prime, round, rssMb, settledRss, summary } from './scale.js';
import { benchRegistryOptions, outcomeOf } from './sandboxed.js';

export interface DistinctOptions {
  /** Distinct JS tools (C tools: a quarter as many, at least 1). */
  tools: number;
  threads?: number;
  configPath?: string;
  progress?: (message: string) => void;
}

const IDLE_RELEASE_MS = 1000;
const COLD_SAMPLES = 20;
const PER_TOOL_SAMPLES = 100;
const PAIRED_ROUNDS = 7;
/** Calls per block of the paired phase, as npm run bench has them (2,000 calls over 5 rounds). */
const PAIRED_CALLS = 400;
const PAYLOAD = { text: 'hello from a distinct run' };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes: number): number => round(bytes / 1048576, 1);

async function register(registry: ToolRegistry, tools: readonly DistinctTool[]): Promise<Map<string, string>> {
  const report = await registry.registerWasmTools(tools.map((t) => t.path));
  const names = new Map<string, string>();
  for (const component of report.components) {
    const tool = tools.find((t) => t.path === component.path);
    const name = component.tools.find((n) => n === tool?.tool || n.endsWith(`.${tool?.tool}`));
    if (component.path !== undefined && name !== undefined) names.set(component.path, name);
  }
  return names;
}

/** Worker CPU of the calls timed (accounting.cpuMs): what a loaded machine's queueing does not inflate. */
let cpuLog: number[] = [];

async function timed(registry: ToolRegistry, name: string): Promise<number> {
  const t0 = performance.now();
  const result = await registry.execute(name, PAYLOAD);
  const ms = performance.now() - t0;
  if (result.isError) throw new Error(`${name} failed: ${result.error?.code}: ${result.error?.message}`);
  cpuLog.push(result.accounting?.cpuMs ?? Number.NaN);
  return ms;
}

/** The CPU p50 of the calls timed since the last take. */
function takeCpu(): number {
  const taken = cpuLog;
  cpuLog = [];
  return summary(taken).p50;
}

export async function runDistinct(options: DistinctOptions): Promise<DistinctReport> {
  const progress = options.progress ?? (() => {});
  const jsCount = Math.max(1, options.tools);
  const cCount = Math.max(1, Math.ceil(jsCount / 4));
  const threads = options.threads ?? availableParallelism();
  const t0 = performance.now();
  progress(`building ${jsCount} distinct JS tools and ${cCount} C tools (kept in ${join(benchDir(), 'components')}; a JS build takes seconds to a minute)`);
  const tools = await distinctTools(jsCount, cCount, progress);
  const built = tools.filter((t) => t.built).length;
  const buildSeconds = round((performance.now() - t0) / 1000, 1);
  const js = tools.filter((t) => t.kind === 'js');
  const c = tools.filter((t) => t.kind === 'c');

  const hostDir = join(benchDir(), `host-${jsCount}`);
  const cacheDir = join(hostDir, 'cache');
  const { config: loaded } = await loadHostConfig({ load: [], ...(options.configPath === undefined ? {} : { configPath: options.configPath }) });
  const config = { ...loaded, sandbox: { ...loaded.sandbox, cacheDir }, distribution: { ...loaded.distribution, storeDir: undefined } } as ResolvedConfig;
  const open = (extra: { idleReleaseMs?: number } = {}): ToolRegistry => {
    const base = benchRegistryOptions(config, { threads, concurrency: [1] });
    return createRegistry({ ...base, sandbox: { ...base.sandbox, cacheDir, containment: 'thread', maxQueue: 4096, ...extra } });
  };
  const meta: DistinctReport['meta'] = {
    date: new Date().toISOString(), node: process.version, cores: availableParallelism(), cpu: cpus()[0]?.model ?? 'unknown',
    loadAvg: round(loadavg()[0] ?? 0, 2), threads, js: js.length, c: c.length, built, buildSeconds, notes: [],
  };
  meta.notes.push(`the bench's transpile cache and store: ${cacheDir} (the config's cache_dir and store_dir are not used)`);
  meta.notes.push(`D2 with host.pool.idle_release_ms ${IDLE_RELEASE_MS} (default 60 000); the rest with the config's pool settings`);
  meta.notes.push(`MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_ ?? '(unset: glibc adapts it)'} (see docs/sizing.md)`);
  meta.notes.push('figures on a shared machine are indicative: the load average is above; D3 and D4 are goals for an idle machine');

  progress('priming the transpile cache (the first run transpiles every tool)');
  let t1 = performance.now();
  const transpiled = await prime(cacheDir, tools.map((t) => t.path));
  const primeMs = Math.round(performance.now() - t1);

  // D5: each component kept as a pull keeps it, beside the transpile cache.
  progress(`D5: ${tools.length} components into the store, beside the transpile cache`);
  const store = new ComponentStore(join(cacheDir, 'store-v1'), new ChunkStore(join(cacheDir, CHUNKS_DIR)));
  let wholeBytes = 0;
  for (const tool of tools) {
    const bytes = new Uint8Array(await readFile(tool.path));
    await store.put(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, bytes);
    wholeBytes += bytes.length;
  }
  wholeBytes += await transpiledBytes(cacheDir);
  const parts = await distinctBytes(tools.map((t) => t.path));
  const disk = await diskBytes(cacheDir);
  const d5 = {
    components: tools.length, totalMb: mb(parts.totalBytes), distinctMb: mb(parts.distinctBytes), engineMb: mb(parts.engine.bytes),
    engineCarriers: parts.engine.carriers, meanDataMb: mb(parts.meanDataBytes), diskMb: mb(disk), wholeMb: mb(wholeBytes),
  };

  // D2: JS tools called once each, then idle until released.
  const d2Count = Math.min(js.length, PER_TOOL_SAMPLES);
  progress(`D2: ${d2Count} JS tools, each called once, then idle ${IDLE_RELEASE_MS} ms`);
  let d2: DistinctReport['d2'];
  {
    const registry = open({ idleReleaseMs: IDLE_RELEASE_MS });
    try {
      const first = await register(registry, c.slice(0, 1));
      await timed(registry, first.get(c[0]!.path)!);
      const before = await settledRss(registry);
      const names = await register(registry, js.slice(0, d2Count));
      await registry.warm();
      for (const tool of js.slice(0, d2Count)) await timed(registry, names.get(tool.path)!);
      const called = await settledRss(registry);
      await sleep(IDLE_RELEASE_MS * 3);
      const idle = await settledRss(registry);
      const held = (await registry.collectWorkerGarbage())?.reduce((sum, heap) => sum + (heap.components ?? 0), 0);
      meta.notes.push(`D2: once idle-released, the workers hold the modules of ${held ?? '?'} components (of ${d2Count + 1} called)`);
      d2 = { components: d2Count, baseMb: round(before), calledMb: round(called), idleMb: round(idle), calledPerToolMb: round((called - before) / d2Count, 2), idlePerToolMb: round((idle - before) / d2Count, 2) };
    } finally {
      await registry.close();
    }
  }

  // D1, D3, D4: every tool on one host.
  progress(`D1: ${tools.length} tools on one host`);
  const before = await settledRss();
  const registry = open();
  try {
    t1 = performance.now();
    const names = await register(registry, tools);
    await registry.warm();
    const readyMs = Math.round(performance.now() - t1);
    const readyRss = await settledRss(registry);
    const listMs: number[] = [];
    let listed = 0;
    for (let i = 0; i < 5; i += 1) {
      const l0 = performance.now();
      listed = listTools(registry).length;
      listMs.push(performance.now() - l0);
    }
    const d1 = { tools: listed, readyMs, baseMb: round(before), rssMb: round(readyRss), listMs: summary(listMs).p50 };

    progress('D3: first and second calls');
    const sample = js.slice(-COLD_SAMPLES);
    takeCpu();
    const coldJs: number[] = [];
    for (const tool of sample) coldJs.push(await timed(registry, names.get(tool.path)!));
    const coldJsCpu = takeCpu();
    const secondJs: number[] = [];
    for (const tool of sample) secondJs.push(await timed(registry, names.get(tool.path)!));
    const secondJsCpu = takeCpu();
    const coldC: number[] = [];
    for (const tool of c.slice(-COLD_SAMPLES)) coldC.push(await timed(registry, names.get(tool.path)!));
    const d3 = { coldJs: summary(coldJs), secondJs: summary(secondJs), coldC: summary(coldC), coldJsCpu, secondJsCpu };

    const d4 = await hotCallAgainstFloor(registry, names.get(js[0]!.path)!, tools.length, threads, progress);
    const done = { meta, primeMs, transpiled, d1, d2, d3, d4, d5 };
    return { ...done, targets: checkDistinctTargets(done) };
  } finally {
    await registry.close();
  }
}

/**
 * D4: one distinct JS tool's hot call on the D1 host (every tool loaded),
 * against the floor in npm run bench's paired phase (paired.ts): both warmed
 * up until their rates settle, then alternating blocks, ABBA, the median of
 * the per-round ratios. A warm-up of a few dozen calls measured a call whose
 * JIT was still cold (0.89 ms, against 0.30 ms once warm).
 */
async function hotCallAgainstFloor(registry: ToolRegistry, tool: string, loaded: number, threads: number, progress: (message: string) => void): Promise<DistinctReport['d4']> {
  progress(`D4: ${tool}'s hot call against the floor, ${PAIRED_ROUNDS} paired rounds`);
  takeCpu();
  const calls = PAIRED_ROUNDS * PAIRED_CALLS;
  const source: PairedSource = {
    label: tool,
    concurrency: [1],
    open: async () => ({
      subject: {
        id: `toolhost:${tool}:call`,
        label: `${tool}, a distinct JS tool among ${loaded}`,
        kind: 'toolhost',
        tool,
        isolation: 'call',
        calls,
        threads,
        call: async () => {
          const result = await registry.execute(tool, PAYLOAD);
          cpuLog.push(result.accounting?.cpuMs ?? Number.NaN);
          return outcomeOf(result);
        },
      },
      // The host is D1's: closed by the caller.
      close: async () => {},
    }),
  };
  const { phase } = await runPaired({ rounds: PAIRED_ROUNDS, calls, threads, payload: PAYLOAD, sources: [source], progress });
  const row = phase.rows[0];
  if (row === undefined || row.errors > 0) throw new Error(`D4: ${tool} failed in the paired phase: ${row?.firstError ?? 'no row'}`);
  // The worker CPU of the measured blocks only: the log's tail (each block is preceded by its settling calls).
  const measured = PAIRED_ROUNDS * (phase.callsPerBlock + phase.settleCalls);
  cpuLog = cpuLog.slice(-measured);
  const ratio = row.p50VsFloorPerRound;
  return {
    rounds: PAIRED_ROUNDS, warmUpCalls: row.warmUpCalls ?? 0, jsP50: row.p50Ms, jsCpuP50: takeCpu(), floorP50: row.floorP50Ms,
    ratio: ratio.median, ratioMin: ratio.min, ratioMax: ratio.max,
  };
}

/** The bytes of the transpile cache's entries as whole files: a chunked file counts its assembled size. */
async function transpiledBytes(cacheDir: string): Promise<number> {
  const { readdir } = await import('node:fs/promises');
  let sum = 0;
  for (const format of await readdir(cacheDir).catch(() => [] as string[])) {
    if (!isCacheFormatDir(format)) continue;
    for (const id of await readdir(join(cacheDir, format)).catch(() => [] as string[])) {
      try {
        const meta = JSON.parse(await readFile(join(cacheDir, format, id, 'meta.json'), 'utf8')) as { chunked?: Record<string, string> };
        for (const name of await readdir(join(cacheDir, format, id))) {
          const path = join(cacheDir, format, id, name);
          if (name.endsWith('.chunks') && meta.chunked?.[name.slice(0, -'.chunks'.length)] !== undefined) sum += (JSON.parse(await readFile(path, 'utf8')) as { size: number }).size;
          else sum += (await readFile(path)).length;
        }
      } catch {
        // an incomplete entry: not counted
      }
    }
  }
  return sum;
}
