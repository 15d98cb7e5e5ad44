/**
 * ExecutionPolicy: what a caller asks of one call, in the field names of
 * sw4rm's ToolService proto (snake_case; the lowerCamelCase proto3 JSON names
 * are accepted too), plus toolhost's `memory_mb`. 0 or absent means "the host
 * default"; labels are case-insensitive.
 */
import { ToolhostError } from '../base/errors.js';
import { NETWORK_LABELS, PRIVILEGE_LABELS, parseLabel, type NetworkLabel, type PrivilegeLabel } from './labels.js';
import { memorySizeClass } from './memory-classes.js';

/** A protobuf Duration in its JSON form (`"1.5s"`) or as an object. */
export type DurationInput = string | { seconds?: number | string; nanos?: number };

/** The policy as a caller writes it (JSON, e.g. the CLI's `--policy`). */
export interface ExecutionPolicyInput {
  timeout?: DurationInput;
  max_retries?: number;
  backoff?: string;
  worktree_required?: boolean;
  network_policy?: string;
  privilege_level?: string;
  budget_cpu_ms?: number | string;
  budget_wall_ms?: number | string;
  memory_mb?: number;
}

/** The policy after parsing: absent fields stay absent (the host fills defaults). */
export interface ExecutionPolicy {
  timeoutMs?: number;
  maxRetries?: number;
  backoff?: 'exponential';
  worktreeRequired?: boolean;
  networkPolicy?: NetworkLabel;
  privilegeLevel?: PrivilegeLabel;
  budgetCpuMs?: number;
  budgetWallMs?: number;
  memoryMb?: number;
}

const FIELD_ALIASES: Record<string, keyof ExecutionPolicyInput> = {
  timeout: 'timeout',
  max_retries: 'max_retries',
  maxRetries: 'max_retries',
  backoff: 'backoff',
  worktree_required: 'worktree_required',
  worktreeRequired: 'worktree_required',
  network_policy: 'network_policy',
  networkPolicy: 'network_policy',
  privilege_level: 'privilege_level',
  privilegeLevel: 'privilege_level',
  budget_cpu_ms: 'budget_cpu_ms',
  budgetCpuMs: 'budget_cpu_ms',
  budget_wall_ms: 'budget_wall_ms',
  budgetWallMs: 'budget_wall_ms',
  memory_mb: 'memory_mb',
  memoryMb: 'memory_mb',
};

function invalid(message: string): ToolhostError {
  return new ToolhostError('INVALID_INPUT', `policy: ${message}`);
}

/** Parse a protobuf Duration into milliseconds. */
export function parseDuration(value: unknown, field = 'timeout'): number {
  if (typeof value === 'string') {
    const match = /^(-?\d+)(?:\.(\d{1,9}))?s$/.exec(value.trim());
    if (!match) throw invalid(`${field} must be a Duration like "1.5s" or {"seconds":1,"nanos":500000000}, got ${JSON.stringify(value)}`);
    const seconds = Number(match[1]);
    const nanos = Number((match[2] ?? '').padEnd(9, '0'));
    if (seconds < 0) throw invalid(`${field} must not be negative`);
    return seconds * 1000 + nanos / 1e6;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const { seconds = 0, nanos = 0, ...rest } = value as { seconds?: unknown; nanos?: unknown };
    const extra = Object.keys(rest);
    if (extra.length > 0) throw invalid(`${field} has unknown field "${extra[0]}" (expected seconds, nanos)`);
    const s = typeof seconds === 'string' ? Number(seconds) : seconds;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 0) throw invalid(`${field}.seconds must be a non-negative integer`);
    if (typeof nanos !== 'number' || !Number.isInteger(nanos) || nanos < 0 || nanos > 999_999_999) {
      throw invalid(`${field}.nanos must be an integer in 0..999999999`);
    }
    return s * 1000 + nanos / 1e6;
  }
  throw invalid(`${field} must be a Duration string ("1.5s") or object ({"seconds":1,"nanos":0})`);
}

function nonNegativeInteger(value: unknown, field: string): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw invalid(`${field} must be a non-negative integer`);
  return n;
}

/**
 * Parse a caller's policy. Unknown fields and labels are INVALID_INPUT, with a
 * message that names the field and what was expected.
 */
export function parseExecutionPolicy(input: unknown): ExecutionPolicy {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) throw invalid('must be a JSON object');
  const policy: ExecutionPolicy = {};
  for (const [rawKey, value] of Object.entries(input)) {
    // Own keys only: `__proto__`, `toString` or `constructor` are unknown fields, not inherited ones.
    const key = Object.hasOwn(FIELD_ALIASES, rawKey) ? FIELD_ALIASES[rawKey] : undefined;
    if (key === undefined) {
      throw invalid(`unknown field "${rawKey}" (expected one of ${[...new Set(Object.values(FIELD_ALIASES))].join(', ')})`);
    }
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'timeout': {
        const ms = parseDuration(value);
        if (ms > 0) policy.timeoutMs = ms;
        break;
      }
      case 'max_retries':
        policy.maxRetries = nonNegativeInteger(value, key);
        break;
      case 'backoff': {
        if (typeof value !== 'string') throw invalid('backoff must be a string');
        if (value !== '' && value.toLowerCase() !== 'exponential') throw invalid(`backoff must be "exponential", got "${value}"`);
        if (value !== '') policy.backoff = 'exponential';
        break;
      }
      case 'worktree_required':
        if (typeof value !== 'boolean') throw invalid('worktree_required must be a boolean');
        policy.worktreeRequired = value;
        break;
      case 'network_policy': {
        if (typeof value !== 'string') throw invalid('network_policy must be a string');
        if (value === '') break;
        const label = parseLabel(NETWORK_LABELS, value);
        if (!label) throw invalid(`unknown network_policy "${value}" (expected one of ${NETWORK_LABELS.join(', ')})`);
        policy.networkPolicy = label;
        break;
      }
      case 'privilege_level': {
        if (typeof value !== 'string') throw invalid('privilege_level must be a string');
        if (value === '') break;
        const label = parseLabel(PRIVILEGE_LABELS, value);
        if (!label) throw invalid(`unknown privilege_level "${value}" (expected one of ${PRIVILEGE_LABELS.join(', ')})`);
        policy.privilegeLevel = label;
        break;
      }
      case 'budget_cpu_ms': {
        const ms = nonNegativeInteger(value, key);
        if (ms > 0) policy.budgetCpuMs = ms;
        break;
      }
      case 'budget_wall_ms': {
        const ms = nonNegativeInteger(value, key);
        if (ms > 0) policy.budgetWallMs = ms;
        break;
      }
      case 'memory_mb': {
        const mb = nonNegativeInteger(value, key);
        if (mb > 0) policy.memoryMb = mb;
        break;
      }
    }
  }
  return policy;
}

/** Host defaults, applied where a call's policy is silent, and ceilings no call may exceed. */
export interface PolicyDefaults {
  /** Wall-clock limit when neither `timeout` nor `budget_wall_ms` is set (ms). */
  wallMs: number;
  /** The longest wall-clock limit a call may ask for (ms). */
  maxWallMs: number;
  /**
   * CPU budget when `budget_cpu_ms` is not set (ms); undefined: none beyond the
   * wall clock, which already bounds a thread's CPU time.
   */
  cpuMs?: number;
  /** The largest CPU budget a call may ask for (ms). */
  maxCpuMs: number;
  /** Linear-memory cap when `memory_mb` is not set (MiB). */
  memoryMb: number;
  /** The largest memory cap a call may ask for (MiB; 4096 is all a 32-bit guest can address). */
  maxMemoryMb: number;
  /** The most retries a call may ask for. */
  maxRetries: number;
  networkPolicy: NetworkLabel;
  privilegeLevel: PrivilegeLabel;
}

export const DEFAULT_POLICY_DEFAULTS: PolicyDefaults = {
  wallMs: 30_000,
  maxWallMs: 600_000,
  maxCpuMs: 600_000,
  memoryMb: 256,
  maxMemoryMb: 4096,
  maxRetries: 5,
  networkPolicy: 'DENY_ALL',
  privilegeLevel: 'MINIMAL',
};

/** The limits one call runs under, after defaults and ceilings. */
export interface CallBudgets {
  /** Wall-clock limit (ms) and the code the call ends with when it is hit. */
  wallMs: number;
  wallCode: 'TOOL_TIMEOUT' | 'WALL_TIMEOUT';
  /** CPU budget of the guest's thread (ms), if any. */
  cpuMs?: number;
  /** Cap on the guest's linear memory (MiB). */
  memoryMb: number;
  /** Retries of transient failures (idempotent tools only). */
  maxRetries: number;
}

function overCeiling(what: string, asked: number, ceiling: number, unit: string): ToolhostError {
  return new ToolhostError('PERMISSION_DENIED', `policy: ${what} of ${asked} ${unit} is above the host's ceiling of ${ceiling} ${unit}`, {
    details: { field: what, asked, ceiling },
  });
}

/**
 * The first host ceiling the policy asks above (PERMISSION_DENIED), or
 * undefined when it stays within them all.
 */
export function ceilingDenial(policy: ExecutionPolicy, defaults: PolicyDefaults): ToolhostError | undefined {
  for (const [field, asked] of [['timeout', policy.timeoutMs], ['budget_wall_ms', policy.budgetWallMs]] as const) {
    if (asked !== undefined && asked > defaults.maxWallMs) return overCeiling(field, asked, defaults.maxWallMs, 'ms');
  }
  if (policy.budgetCpuMs !== undefined && policy.budgetCpuMs > defaults.maxCpuMs) {
    return overCeiling('budget_cpu_ms', policy.budgetCpuMs, defaults.maxCpuMs, 'ms');
  }
  const requestedMb = policy.memoryMb ?? defaults.memoryMb;
  if (requestedMb > defaults.maxMemoryMb) return overCeiling('memory_mb', requestedMb, defaults.maxMemoryMb, 'MiB');
  const maxRetries = policy.maxRetries ?? 0;
  if (maxRetries > defaults.maxRetries) return overCeiling('max_retries', maxRetries, defaults.maxRetries, 'retries');
  return undefined;
}

/**
 * The budgets of a call: the smaller of `timeout` and `budget_wall_ms` (with
 * the code each ends with), the CPU and memory budgets, retries; host defaults
 * where the policy is silent. Asking above a host ceiling throws
 * PERMISSION_DENIED (see {@link ceilingDenial}); memory is also capped by the
 * tool's grant (the smaller wins), then put in its size class
 * (./memory-classes.ts: a value the configuration does not name is rounded
 * down to a power of two; `toolDefaults` is the tool's configured default policy).
 */
export function resolveBudgets(policy: ExecutionPolicy, defaults: PolicyDefaults, grant: { memoryMb?: number } = {}, toolDefaults: { memoryMb?: number } = {}): CallBudgets {
  const denied = ceilingDenial(policy, defaults);
  if (denied) throw denied;
  const { timeoutMs, budgetWallMs } = policy;
  let wallMs = defaults.wallMs;
  let wallCode: CallBudgets['wallCode'] = 'TOOL_TIMEOUT';
  if (timeoutMs !== undefined && (budgetWallMs === undefined || timeoutMs <= budgetWallMs)) {
    wallMs = timeoutMs;
  } else if (budgetWallMs !== undefined) {
    wallMs = budgetWallMs;
    wallCode = 'WALL_TIMEOUT';
  }
  const cpuMs = policy.budgetCpuMs ?? defaults.cpuMs;
  // The tool's grant and the call's request: the smaller wins.
  const capMb = Math.min(policy.memoryMb ?? defaults.memoryMb, grant.memoryMb ?? Number.POSITIVE_INFINITY);
  const memoryMb = memorySizeClass(capMb, [defaults.memoryMb, defaults.maxMemoryMb, grant.memoryMb, toolDefaults.memoryMb]);
  const maxRetries = policy.maxRetries ?? 0;
  const budgets: CallBudgets = { wallMs, wallCode, memoryMb, maxRetries };
  if (cpuMs !== undefined) budgets.cpuMs = cpuMs;
  return budgets;
}
