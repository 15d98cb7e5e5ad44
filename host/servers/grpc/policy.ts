/**
 * The proto's ExecutionPolicy → the host's ExecutionPolicyInput.
 *
 * proto3 cannot tell an absent scalar from its default, and the contract says
 * 0 means "the host default": every 0, "" and false (and a missing or zero
 * Duration) is left out, so the tool's default policy and then the host's
 * defaults apply. Everything else goes through `parseExecutionPolicy` in the
 * call path unchanged, which checks it (labels case-insensitive, 64-bit
 * integers as decimal strings, Durations as {seconds, nanos}).
 */
import { ToolhostError } from '../../base/errors.js';
import type { DurationInput, ExecutionPolicyInput } from '../../policy/execution-policy.js';
import type { DurationMessage, ExecutionPolicyMessage } from './proto.js';

/** Map a received ExecutionPolicy; undefined when it is absent or says nothing. */
export function toPolicyInput(message: ExecutionPolicyMessage | null | undefined): ExecutionPolicyInput | undefined {
  if (message === null || message === undefined) return undefined;
  const policy: ExecutionPolicyInput = {};
  const timeout = toDuration(message.timeout);
  if (timeout !== undefined) policy.timeout = timeout;
  if (isSet(message.max_retries)) policy.max_retries = message.max_retries;
  if (message.backoff) policy.backoff = message.backoff;
  if (message.worktree_required === true) policy.worktree_required = true;
  if (message.network_policy) policy.network_policy = message.network_policy;
  if (message.privilege_level) policy.privilege_level = message.privilege_level;
  if (isSet(message.budget_cpu_ms)) policy.budget_cpu_ms = exactUint64(message.budget_cpu_ms, 'policy.budget_cpu_ms', 'ms');
  if (isSet(message.budget_wall_ms)) policy.budget_wall_ms = exactUint64(message.budget_wall_ms, 'policy.budget_wall_ms', 'ms');
  return Object.keys(policy).length > 0 ? policy : undefined;
}

/** A Duration as the policy parser reads it; undefined for a missing or zero one. */
function toDuration(message: DurationMessage | null | undefined): DurationInput | undefined {
  if (message === null || message === undefined) return undefined;
  const seconds = message.seconds === undefined || message.seconds === null ? 0 : exactUint64(message.seconds, 'policy.timeout.seconds', 's');
  const nanos = message.nanos ?? 0;
  if (isZero(seconds) && nanos === 0) return undefined;
  return { seconds, nanos };
}

/**
 * A uint64 (int64 for Duration seconds) as proto-loader hands it over (a decimal
 * string, exact), passed on unchanged when it is a safe integer; above 2^53-1 a clear
 * INVALID_INPUT naming the field, the value and the largest accepted one (the
 * host's ceilings are far lower).
 */
function exactUint64(value: string | number, field: string, unit: string): string | number {
  const text = String(value).trim();
  if (!/^[+-]?\d+$/.test(text)) return value;
  const exact = BigInt(text);
  if (exact < 0n) throw new ToolhostError('INVALID_INPUT', `${field} is ${exact} ${unit}: it must not be negative`, { details: { field, value: text } });
  if (exact > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ToolhostError('INVALID_INPUT', `${field} is ${exact} ${unit}, above the largest accepted value ${Number.MAX_SAFE_INTEGER} (2^53-1); the host's ceiling applies anyway, and 0 means the host default`, {
      details: { field, value: text, max: String(Number.MAX_SAFE_INTEGER) },
    });
  }
  // A safe integer goes on as it came (the policy parser reads digit strings exactly).
  return value;
}

function isSet<T extends string | number>(value: T | null | undefined): value is T {
  return value !== null && value !== undefined && !isZero(value);
}

function isZero(value: string | number): boolean {
  return typeof value === 'number' ? value === 0 : /^[+-]?0+$/.test(value.trim()) || value.trim() === '';
}
