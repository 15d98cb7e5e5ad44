/**
 * What a benchmark run produces: rows (one subject at one concurrency), the
 * enforcement-precision rows, cold starts, and the run's machine. These are
 * the `--json` output and what the table, the targets and the HTML report read.
 */
import type { LatencySummary, RatioSpread } from './statistics.js';

export type Isolation = 'call' | 'conversation' | 'worker';

/** Every isolation mode: what a run measures unless told otherwise. */
export const ALL_ISOLATIONS: readonly Isolation[] = ['call', 'worker', 'conversation'];

/** Calls in flight, one row each, unless told otherwise: one, and saturation on two threads. */
export const DEFAULT_CONCURRENCY: readonly number[] = [1, 8];

/** Which kind of subject a row measures. */
export type RowKind = 'floor' | 'native' | 'toolhost' | 'peer';

/** Calls served per instance source (`accounting.instance`), in percent of the calls that reported one. */
export interface InstanceShare {
  fresh: number;
  prewarmed: number;
  restored: number;
  reused: number;
}

/** Memory seen around a subject: the process's RSS, and the guest's linear memory. */
export interface MemoryFigures {
  /** Process RSS added by starting the subject's workers and warming them, per worker thread (MiB). */
  rssPerWorkerMb?: number;
  /** Linear memory of one guest instance (`accounting.peakMemoryBytes`, median; MiB): what a kept instance holds beyond its JS. */
  instanceMemoryMb?: number;
  /** Process RSS at the end of the subject's rows minus after its warm-up (MiB), over `growthCalls` calls. */
  rssGrowthMb?: number;
  growthCalls?: number;
}

export interface BenchRow extends LatencySummary {
  /** A stable id for the subject, e.g. `floor`, `toolhost:echo:call`, `extism:worker`. */
  id: string;
  label: string;
  kind: RowKind;
  tool?: string;
  isolation?: Isolation;
  concurrency: number;
  calls: number;
  errors: number;
  firstError?: string;
  /** Completed calls per second (first start to last end). */
  callsPerSec: number;
  /** p50 over the floor's p50 at the same concurrency (1 for the floor). */
  p50VsFloor: number;
  /** Throughput over the floor's at the same concurrency. */
  throughputVsFloor: number;
  /** Sandboxed rows: where instances came from. */
  instances?: InstanceShare;
  /** Sandboxed rows: mean `accounting.instantiateMs`. */
  instantiateMs?: number;
  memory?: MemoryFigures;
  /** Calls of the subject's warm-up (until its rate stopped rising, see measure.ts warmUp). */
  warmUpCalls?: number;
  /** Set when the warm-up reached its time cap before the rate settled. */
  warmUpUnsettled?: true;
}

export interface BudgetRow {
  kind: 'wall' | 'cpu';
  budgetMs: number;
  samples: number;
  /** Calls that did not end with the expected code. */
  wrong: number;
  /** Time (wall) or CPU time past the budget when the call was stopped. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface ColdStart {
  /** What started: the component file and the tool called. */
  component: string;
  tool: string;
  /** `miss`: an empty transpile cache; `hit`: the same cache, second process. */
  cache: 'hit' | 'miss';
  /** Spawn to exit of the whole process. */
  processMs: number;
  /** Inside the process: importing the host, loading the component, the first call. */
  importMs: number;
  loadMs: number;
  firstCallMs: number;
  /** False when the first call failed (the message is in `error`). */
  ok: boolean;
  error?: string;
}

/** The no-growth check: memory read after a forced GC at every tenth of a long run (see growth.ts). */
export interface GrowthCheck {
  label: string;
  calls: number;
  concurrency: number;
  errors: number;
  firstError?: string;
  /** Whether the main thread's heap could be collected before each reading (V8's --expose-gc, set at run time). */
  gcForced: boolean;
  /** Process RSS before the check's calls, at half of them, at the end, and its highest reading over the second half (MiB). */
  rssBeforeMb: number;
  rssHalfMb: number;
  rssEndMb: number;
  rssMaxMb: number;
  /** End minus half (MiB), and the least-squares slope over the second half's checkpoints (MiB per 100,000 calls). */
  rssGrowthMb: number;
  rssSlopeMbPer100k: number;
  /** The same for the main thread's used heap. */
  heapGrowthMb: number;
  heapSlopeMbPer100k: number;
  /** Whether every worker thread was collected before each reading (through the pool; see growth.ts). */
  workerGcForced: boolean;
  /** The same for the worker threads' used heaps, summed (absent when the pool could not read them). */
  workerHeapGrowthMb?: number;
  workerHeapSlopeMbPer100k?: number;
  /** Every reading (the first before any call of the check). */
  checkpoints: Array<{ calls: number; rssMb: number; heapMb: number; workerHeapMb?: number }>;
}

/** RSS that instances kept between calls cost (`conversation` isolation, one instance per conversation and worker). */
export interface KeptInstances {
  label: string;
  conversations: number;
  instances: number;
  rssAddedMb: number;
  rssPerInstanceMb: number;
}

export interface BenchMeta {
  date: string;
  node: string;
  platform: string;
  cpu: string;
  cores: number;
  /** 1-minute load average when the run started: other work on the machine skews every row. */
  loadAvg: number;
  threads: number;
  concurrency: number[];
  /** What the run left out, and why (a missing build, a missing optional package). */
  notes: string[];
}

/** One round of a paired row: its block, and the floor's block at the same concurrency in the same round. */
export interface PairedRound {
  round: number;
  /** Where the subject's and the floor's blocks ran in the round's sequence at this concurrency (0: first). */
  position: number;
  floorPosition: number;
  p50Ms: number;
  floorP50Ms: number;
  p50VsFloor: number;
  callsPerSec: number;
  floorCallsPerSec: number;
  throughputVsFloor: number;
}

/** A subject measured in blocks interleaved with the floor's (see paired.ts). */
export interface PairedRow extends Pick<BenchRow, 'id' | 'label' | 'kind' | 'tool' | 'isolation' | 'concurrency' | 'errors' | 'firstError' | 'warmUpCalls' | 'warmUpUnsettled'> {
  /** Measured calls over all rounds (the blocks' settling calls excluded). */
  calls: number;
  /** Over all of the subject's blocks; the floor's over its blocks of the same rounds. */
  p50Ms: number;
  p99Ms: number;
  callsPerSec: number;
  floorP50Ms: number;
  floorCallsPerSec: number;
  /** Pooled ratios: the subject's figure over all its blocks against the floor's over the same rounds. */
  p50VsFloor: number;
  throughputVsFloor: number;
  /** The ratios round by round; the targets read their medians (robust to one round the scheduler was unkind to). */
  p50VsFloorPerRound: RatioSpread;
  throughputVsFloorPerRound: RatioSpread;
  rounds: PairedRound[];
}

/** The paired phase: the floor and the subjects the targets read, open at once, measured in alternating blocks. */
export interface PairedPhase {
  rounds: number;
  /**
   * Measured calls per block at concurrency 1 (a block at C in flight runs C
   * times as many), and unmeasured calls before each block (they wake the
   * subject's sleeping workers).
   */
  callsPerBlock: number;
  settleCalls: number;
  rows: PairedRow[];
}

export interface BenchReport {
  meta: BenchMeta;
  rows: BenchRow[];
  budgets: BudgetRow[];
  coldStarts: ColdStart[];
  /** The no-growth checks (standard suite, or `--growth-calls`). */
  growth?: GrowthCheck[];
  kept?: KeptInstances[];
  /** The paired phase (absent with --paired-rounds 0). */
  paired?: PairedPhase;
}
