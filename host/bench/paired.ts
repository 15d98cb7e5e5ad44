/**
 * The paired phase: the floor and the subjects the targets read, all open at
 * once, measured in alternating blocks (A/B interleaving) so a ratio compares
 * figures taken seconds apart rather than minutes.
 *
 * Why: on a small VM whose idle vCPUs halt, waking a sleeping thread costs tens
 * of microseconds, and how much depends on where the scheduler puts threads at
 * that moment; the floor's p50 at concurrency 1 moved 5x between idle runs
 * while the subjects moved far less, so a ratio to a floor measured once, minutes
 * earlier, swings with the floor's luck.
 *
 * A round, at each concurrency: the floor's block, then each subject's, the
 * subjects rotated by one each round (so no subject always follows the floor),
 * and the whole sequence reversed on odd rounds (floor last: ABBA, which cancels
 * a linear drift). Each block runs `calls / rounds` measured calls after a few
 * settling ones; every subject had the usual warm-up before the first round.
 */
import type { PairedPhase, PairedRound, PairedRow } from './row.js';
import { measure, warmUp, warmUpFailure, warmupCalls, type WarmUp } from './measure.js';
import { subjectFields, warmUpFields, type Subject } from './runner.js';
import { round3, spread, summarize } from './statistics.js';
import { startFloor } from './floor.js';
import type { OpenedSubject } from './sandboxed.js';

/** Something the phase opens, and the concurrencies it is measured at. */
export interface PairedSource {
  /** Names the source in notes when it cannot be opened. */
  label: string;
  concurrency: readonly number[];
  /** Starts the subject's workers; closed when the phase ends. */
  open(): Promise<OpenedSubject>;
  /** A source that fails to open or warm up is left out with a note (a peer) instead of failing the run. */
  optional?: boolean;
}

export interface PairedOptions {
  rounds: number;
  /** Measured calls per subject and concurrency over all rounds (each block gets calls / rounds). */
  calls: number;
  /** The floor's pool: threads, and the payload its task returns. */
  threads: number;
  payload: unknown;
  sources: PairedSource[];
  progress?: (message: string) => void;
}

export interface PairedResult {
  phase: PairedPhase;
  /** Sources left out, and why. */
  notes: string[];
}

interface Block {
  round: number;
  position: number;
  latencies: Float64Array;
  elapsedMs: number;
  errors: number;
  firstError?: string;
}

interface Member {
  subject: Subject;
  warm: WarmUp;
  concurrency: readonly number[];
  /** Blocks by concurrency. */
  blocks: Map<number, Block[]>;
}

/** The order of a round at one concurrency: floor first, subjects rotated by the round; reversed on odd rounds. */
export function roundOrder<T>(floor: T, subjects: readonly T[], round: number): T[] {
  const shift = subjects.length === 0 ? 0 : round % subjects.length;
  const sequence = [floor, ...subjects.slice(shift), ...subjects.slice(0, shift)];
  return round % 2 === 1 ? sequence.reverse() : sequence;
}

function concat(blocks: readonly Block[]): Float64Array {
  const all = new Float64Array(blocks.reduce((sum, block) => sum + block.latencies.length, 0));
  let offset = 0;
  for (const block of blocks) {
    all.set(block.latencies, offset);
    offset += block.latencies.length;
  }
  return all;
}

const p50 = (latencies: Float64Array): number => summarize(Float64Array.from(latencies)).p50Ms;
const perSec = (calls: number, elapsedMs: number): number => (calls / elapsedMs) * 1000;

function pairedRow(member: Member, concurrency: number, floorBlocks: readonly Block[]): PairedRow {
  const { subject } = member;
  const blocks = member.blocks.get(concurrency) ?? [];
  const rounds: PairedRound[] = blocks.map((block) => {
    const floor = floorBlocks.find((b) => b.round === block.round)!;
    const p50Ms = p50(block.latencies);
    const floorP50Ms = p50(floor.latencies);
    const callsPerSec = perSec(block.latencies.length, block.elapsedMs);
    const floorCallsPerSec = perSec(floor.latencies.length, floor.elapsedMs);
    return {
      round: block.round,
      position: block.position,
      floorPosition: floor.position,
      p50Ms: round3(p50Ms),
      floorP50Ms: round3(floorP50Ms),
      p50VsFloor: round3(p50Ms / floorP50Ms),
      callsPerSec: Math.round(callsPerSec),
      floorCallsPerSec: Math.round(floorCallsPerSec),
      throughputVsFloor: round3(callsPerSec / floorCallsPerSec),
    };
  });
  const mine = summarize(concat(blocks));
  const floorSamples = concat(floorBlocks);
  const floorP50Ms = summarize(floorSamples).p50Ms;
  const calls = blocks.reduce((sum, block) => sum + block.latencies.length, 0);
  const callsPerSec = perSec(calls, blocks.reduce((sum, block) => sum + block.elapsedMs, 0));
  const floorCallsPerSec = perSec(floorSamples.length, floorBlocks.reduce((sum, block) => sum + block.elapsedMs, 0));
  const errors = blocks.reduce((sum, block) => sum + block.errors, 0);
  const firstError = blocks.find((block) => block.firstError !== undefined)?.firstError;
  return {
    ...subjectFields(subject),
    ...warmUpFields(member.warm),
    concurrency,
    calls,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    p50Ms: round3(mine.p50Ms),
    p99Ms: round3(mine.p99Ms),
    callsPerSec: Math.round(callsPerSec),
    floorP50Ms: round3(floorP50Ms),
    floorCallsPerSec: Math.round(floorCallsPerSec),
    p50VsFloor: round3(mine.p50Ms / floorP50Ms),
    throughputVsFloor: round3(callsPerSec / floorCallsPerSec),
    p50VsFloorPerRound: spread(rounds.map((r) => r.p50VsFloor)),
    throughputVsFloorPerRound: spread(rounds.map((r) => r.throughputVsFloor)),
    rounds,
  };
}

/**
 * Calls in a block at `concurrency`: C times the base. A block at 8 in flight
 * of the base count lasted 20-40 ms, so one scavenge or scheduling hiccup
 * moved its rate a lot (per-round throughput ratios spanned 0.31x-1.48x in one
 * run); scaled, a block lasts about as long at every concurrency.
 */
export function blockCalls(callsPerBlock: number, concurrency: number): number {
  return callsPerBlock * Math.max(1, concurrency);
}

async function runBlock(subject: Subject, calls: number, settle: number, concurrency: number, round: number, position: number): Promise<Block> {
  if (subject.renew) {
    await subject.renew();
    await measure(subject.call, subject.renewWarmUpCalls ?? 0, concurrency);
  }
  if (settle > 0) await measure(subject.call, settle, concurrency);
  const m = await measure(subject.call, calls, concurrency);
  return { round, position, latencies: m.latencies, elapsedMs: m.elapsedMs, errors: m.errors, ...(m.firstError === undefined ? {} : { firstError: m.firstError }) };
}

/** Open every source and the floor, warm each up, run the rounds, close everything. */
export async function runPaired(options: PairedOptions): Promise<PairedResult> {
  const progress = options.progress ?? (() => {});
  const notes: string[] = [];
  const callsPerBlock = Math.max(1, Math.round(options.calls / options.rounds));
  const opened: Array<{ source: PairedSource; opened: OpenedSubject }> = [];
  const floor = startFloor({ threads: options.threads, calls: options.calls, payload: options.payload });
  try {
    for (const source of options.sources) {
      try {
        opened.push({ source, opened: await source.open() });
      } catch (error) {
        if (!source.optional) throw error;
        notes.push(`paired phase: ${source.label} left out: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const members: Member[] = [];
    const concurrencies = [...new Set(opened.flatMap((o) => o.source.concurrency))];
    const warmup = warmupCalls(options.calls);
    progress(`paired phase: the floor and ${opened.map((o) => o.opened.subject.label).join('; ')} open at once; each warmed up until its rate settles (at least ${warmup} calls)`);
    const floorWarm = await warmUp(floor.subject.call, warmup, Math.max(...concurrencies));
    if (floorWarm.errors > 0) throw warmUpFailure(floor.subject.label, floorWarm.firstError);
    for (const { source, opened: o } of opened) {
      const warm = await warmUp(o.subject.call, warmup, Math.max(...source.concurrency));
      if (warm.errors === 0) {
        members.push({ subject: o.subject, warm, concurrency: source.concurrency, blocks: new Map() });
        continue;
      }
      const failure = warmUpFailure(o.subject.label, warm.firstError);
      if (!source.optional) throw failure;
      notes.push(`paired phase: ${failure.message}; left out`);
    }

    for (const { subject } of members) {
      if (subject.renew) notes.push(`paired phase: ${subject.label} is measured new in every block, after ${subject.renewWarmUpCalls ?? 0} calls (it slows down as it serves calls)`);
    }
    // A few calls before each block wake the workers that slept through the other blocks; the floor gets as many.
    const settleCalls = Math.min(callsPerBlock, 4 * options.threads);
    const floorBlocks = new Map<number, Block[]>();
    for (let round = 0; round < options.rounds; round += 1) {
      progress(`paired phase: round ${round + 1} of ${options.rounds}, ${callsPerBlock} calls per block (times the concurrency)`);
      for (const concurrency of concurrencies) {
        const here = members.filter((member) => member.concurrency.includes(concurrency));
        if (here.length === 0) continue;
        const order = roundOrder<Member | undefined>(undefined, here, round);
        for (const [position, member] of order.entries()) {
          const block = await runBlock(member?.subject ?? floor.subject, blockCalls(callsPerBlock, concurrency), settleCalls, concurrency, round, position);
          const into = member === undefined ? floorBlocks : member.blocks;
          into.set(concurrency, [...(into.get(concurrency) ?? []), block]);
        }
      }
    }
    // By concurrency, then in the order the sources were given.
    const rows = concurrencies.flatMap((c) => members.filter((member) => member.blocks.has(c)).map((member) => pairedRow(member, c, floorBlocks.get(c) ?? [])));
    return { phase: { rounds: options.rounds, callsPerBlock, settleCalls, rows }, notes };
  } finally {
    await Promise.allSettled([floor.close(), ...opened.map((o) => o.opened.close())]);
  }
}
