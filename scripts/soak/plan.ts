/**
 * The soak's mix: what call number n is, decided from n alone (a seeded
 * generator), so the host process (library calls) and the drivers (MCP,
 * gRPC) agree without sending the plan around. Each kind names its tool,
 * arguments and policy, whether and when the client cancels it, and which
 * outcomes are expected; honest kinds also say what the answer must be.
 */
import { createHash } from 'node:crypto';
import { SOAK_ID_PREFIX } from './ledger.js';

export type Category = 'honest' | 'hostile' | 'cancelled' | 'timed-out' | 'over-budget' | 'bad-input';
export type Channel = 'library' | 'mcp' | 'grpc';
export const CHANNELS: readonly Channel[] = ['library', 'mcp', 'grpc'];

/** Policy fields as every entry point takes them (the proto's names; `memory_mb` is not in the gRPC proto). */
export interface SoakPolicy {
  budget_wall_ms?: number;
  budget_cpu_ms?: number;
}

export interface Kind {
  name: string;
  category: Category;
  /** Relative frequency (per 1000). */
  weight: number;
  tool: string;
  args(n: number): unknown;
  policy?: SoakPolicy;
  /** A conversation (state lives across calls in it). */
  conversation?(n: number): string;
  /** The client cancels the call this long after sending it (ms). */
  cancelAfterMs?: number;
  /** Outcome codes that are fine ('ok' or an error code); anything else is reported as unexpected. */
  expect: readonly string[];
  /** Honest kinds: the structured answer (compared as JSON). */
  answer?(n: number): unknown;
}

/** The native tools the soak host registers beside the components. */
export const NATIVE_ECHO = 'soak_echo';
export const NATIVE_WAIT = 'soak_wait';

const conversation = (n: number): string => `soak-conv-${n % 8}`;
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const CANCELLED = ['CANCELLED'];
/** A guest that sees `cancelled()` and returns what it has ends with that result (docs/sandbox.md, Cancellation). */
const COOPERATIVE_CANCEL = [...CANCELLED, 'ok'];
const TIMED_OUT = ['TOOL_TIMEOUT', 'WALL_TIMEOUT'];

/**
 * The mix (weights per 1000). Kinds that end with the worker terminated (spins, sleeps past a budget or a cancel
 * grace) are kept to a few percent: each costs a new worker, which on a 2-core machine bounds the soak's pace.
 */
export const KINDS: readonly Kind[] = [
  // Honest: C guests (a reused instance and a fresh one per call), a JS guest, a native tool.
  { name: 'echo (C)', category: 'honest', weight: 300, tool: 'echo', args: (n) => ({ text: `soak ${n}`, n }), expect: ['ok'], answer: (n) => ({ text: `soak ${n}`, n }) },
  { name: 'sha256 (C)', category: 'honest', weight: 150, tool: 'sha256', args: (n) => ({ text: `soak ${n}` }), expect: ['ok'], answer: (n) => ({ sha256: sha256(`soak ${n}`) }) },
  { name: 'honest (C, fresh instance)', category: 'honest', weight: 80, tool: 'honest', args: (n) => ({ n: n % 100 }), expect: ['ok'], answer: (n) => ({ ok: true, sum: ((n % 100) * ((n % 100) + 1)) / 2 }) },
  // The victims of the segment smuggler below: every probe must see what a new instance sees.
  { name: 'segment probe (data, WAT)', category: 'honest', weight: 10, tool: 'probe_d0', args: () => ({}), expect: ['ok'], answer: () => 'SEG0' },
  { name: 'segment probe (element, WAT)', category: 'honest', weight: 10, tool: 'probe_e0', args: () => ({}), expect: ['ok'], answer: () => 'ELEM' },
  { name: 'js_echo (JS)', category: 'honest', weight: 40, tool: 'js_echo', args: (n) => ({ n }), expect: ['ok'] },
  { name: 'native echo', category: 'honest', weight: 150, tool: NATIVE_ECHO, args: (n) => ({ text: `soak ${n}` }), expect: ['ok'], answer: (n) => ({ text: `soak ${n}` }) },
  // Hostile guests (test/fixtures): traps, exits, stack overflow, memory, state, host calls, refused HTTP, tables, floods.
  { name: 'trap', category: 'hostile', weight: 12, tool: 'trap', args: () => ({}), expect: ['TOOL_CRASHED'] },
  { name: 'out-of-bounds load', category: 'hostile', weight: 8, tool: 'oob', args: () => ({}), expect: ['TOOL_CRASHED'] },
  { name: 'exit(3)', category: 'hostile', weight: 5, tool: 'exit', args: () => ({ code: 3 }), expect: ['TOOL_CRASHED'] },
  { name: 'recurse (stack overflow)', category: 'hostile', weight: 5, tool: 'recurse', args: () => ({}), expect: ['TOOL_CRASHED'] },
  { name: 'memory_bomb (grant 32 MiB)', category: 'hostile', weight: 8, tool: 'memory_bomb', args: () => ({ mb: 256 }), expect: ['TOOL_ERROR', 'MEMORY_LIMIT_EXCEEDED'] },
  { name: 'state flood (8 conversations)', category: 'hostile', weight: 12, tool: 'state_flood', args: () => ({ count: 1500, bytes: 512, distinct: 0 }), conversation, expect: ['ok'] },
  { name: 'host-call flood', category: 'hostile', weight: 4, tool: 'state_flood', args: () => ({ count: 20_000, bytes: 8, distinct: 1 }), expect: ['OUTPUT_LIMIT_EXCEEDED'] },
  { name: 'denied HTTP flood (JS)', category: 'hostile', weight: 5, tool: 'flood', args: () => ({ count: 200 }), expect: ['ok'] },
  { name: 'segment drop (data.drop, WAT)', category: 'hostile', weight: 6, tool: 'drop_d0', args: () => ({}), expect: ['ok'] },
  { name: 'segment drop (elem.drop, WAT)', category: 'hostile', weight: 6, tool: 'drop_e0', args: () => ({}), expect: ['ok'] },
  { name: 'scribble (memory, global, tables; WAT)', category: 'hostile', weight: 4, tool: 'scribble', args: () => ({}), expect: ['ok'] },
  { name: 'table growth (WAT)', category: 'hostile', weight: 4, tool: 'grow_table', args: () => ({}), expect: ['ok'] },
  { name: 'event flood (300 deltas)', category: 'hostile', weight: 8, tool: 'event_flood', args: () => ({ count: 300, bytes: 64 }), expect: ['ok'] },
  { name: 'log flood', category: 'hostile', weight: 4, tool: 'log_flood', args: () => ({ count: 300 }), expect: ['ok'] },
  { name: 'stdout flood', category: 'hostile', weight: 4, tool: 'stdout_flood', args: () => ({ lines: 5000 }), expect: ['ok'] },
  { name: '1 MiB result', category: 'hostile', weight: 4, tool: 'big_result', args: () => ({ mb: 1 }), expect: ['ok'] },
  // Issue 36 M2, M6: a huge sample request without a grant (refused in the worker), 1 MiB state keys (short warnings).
  { name: 'sample flood (no grant, 0.2.0)', category: 'hostile', weight: 3, tool: 'huge_sample', args: () => ({ messages: 20_000 }), expect: ['ok'] },
  { name: 'long state keys (0.2.0)', category: 'hostile', weight: 3, tool: 'long_key', args: () => ({ count: 20, bytes: 1_048_576 }), expect: ['ok'] },
  // Issue 36 M1: honest args against a schema whose validation costs 2^30 checks (prefixItems over an allOf/$ref
  // DAG): validated in the call's worker, ended by its CPU budget (the worker is replaced); its honest twin beside it.
  { name: 'schema bomb (prefixItems DAG)', category: 'hostile', weight: 2, tool: 'prefix_dag', args: () => ({ list: ['x'] }), policy: { budget_cpu_ms: 100 }, expect: ['CPU_BUDGET_EXCEEDED', 'WALL_TIMEOUT', 'TOOL_TIMEOUT'] },
  { name: 'schema bomb\'s plain tool', category: 'honest', weight: 5, tool: 'plain', args: (n) => ({ text: `soak ${n}` }), expect: ['ok'], answer: (n) => ({ text: `soak ${n}` }) },
  // Cancelled by the client mid-call: a native tool that waits, a guest that checks cancelled(), one that never does.
  { name: 'cancel: native wait', category: 'cancelled', weight: 25, tool: NATIVE_WAIT, args: () => ({ ms: 10_000 }), cancelAfterMs: 15, expect: CANCELLED },
  { name: 'cancel: event flood (cooperative)', category: 'cancelled', weight: 8, tool: 'event_flood', args: () => ({ count: 100_000_000, bytes: 8 }), cancelAfterMs: 30, expect: COOPERATIVE_CANCEL },
  { name: 'cancel: sleep (grace, then killed)', category: 'cancelled', weight: 4, tool: 'sleep_for', args: () => ({ ms: 10_000 }), cancelAfterMs: 20, expect: CANCELLED },
  // Past the wall clock: a native tool, a sleeping guest, a spinning guest (the last two cost a worker each).
  { name: 'wall: native wait', category: 'timed-out', weight: 25, tool: NATIVE_WAIT, args: () => ({ ms: 10_000 }), policy: { budget_wall_ms: 25 }, expect: TIMED_OUT },
  { name: 'wall: sleep', category: 'timed-out', weight: 4, tool: 'sleep_for', args: () => ({ ms: 10_000 }), policy: { budget_wall_ms: 40 }, expect: TIMED_OUT },
  { name: 'wall: spin', category: 'timed-out', weight: 3, tool: 'spin', args: () => ({}), policy: { budget_wall_ms: 40 }, expect: TIMED_OUT },
  // Over the CPU budget.
  { name: 'cpu: spin', category: 'over-budget', weight: 5, tool: 'spin_for', args: () => ({ ms: 10_000 }), policy: { budget_cpu_ms: 25, budget_wall_ms: 5_000 }, expect: ['CPU_BUDGET_EXCEEDED'] },
  // Bad inputs: refused before anything runs.
  { name: 'unknown tool', category: 'bad-input', weight: 20, tool: 'no_such_tool', args: () => ({}), expect: ['TOOL_NOT_FOUND'] },
  { name: 'schema failure', category: 'bad-input', weight: 20, tool: 'sha256', args: (n) => ({ text: n }), expect: ['INVALID_INPUT'] },
  { name: 'policy over the ceiling', category: 'bad-input', weight: 8, tool: 'echo', args: () => ({}), policy: { budget_wall_ms: 10_000_000 }, expect: ['PERMISSION_DENIED', 'INVALID_INPUT'] },
  { name: 'args the guest refuses', category: 'bad-input', weight: 8, tool: 'spin_for', args: () => ({ ms: 'long' }), expect: ['INVALID_INPUT', 'TOOL_ERROR'] },
];

/** The tools the plan calls (the unknown one aside): the host checks it has them all before the start. */
export const PLANNED_TOOLS: readonly string[] = [...new Set(KINDS.filter((kind) => kind.name !== 'unknown tool').map((kind) => kind.tool))];

const TOTAL_WEIGHT = KINDS.reduce((sum, kind) => sum + kind.weight, 0);

/** One planned call. */
export interface PlannedCall {
  n: number;
  id: string;
  channel: Channel;
  kind: Kind;
  /** Which variant of the channel's API (e.g. unary vs stream, abort vs Cancel by id), from n. */
  variant: number;
}

/** Call n of the soak with `seed`: deterministic, spread over the channels in turn. */
export function plannedCall(n: number, seed: number): PlannedCall {
  let pick = Math.floor(uniform(n, seed) * TOTAL_WEIGHT);
  let kind = KINDS[KINDS.length - 1]!;
  for (const candidate of KINDS) {
    if (pick < candidate.weight) {
      kind = candidate;
      break;
    }
    pick -= candidate.weight;
  }
  return { n, id: `${SOAK_ID_PREFIX}${n}`, channel: CHANNELS[n % CHANNELS.length]!, kind, variant: Math.floor(n / CHANNELS.length) % 2 };
}

/** A number in [0, 1) from (n, seed): mulberry32 over a mix of both. */
export function uniform(n: number, seed: number): number {
  let t = (Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ seed) >>> 0;
  t = (t + 0x6d2b79f5) >>> 0;
  let r = Math.imul(t ^ (t >>> 15), t | 1);
  r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
  return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
}
