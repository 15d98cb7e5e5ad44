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
  if (isSet(message.budget_cpu_ms)) policy.budget_cpu_ms = message.budget_cpu_ms;
  if (isSet(message.budget_wall_ms)) policy.budget_wall_ms = message.budget_wall_ms;
  return Object.keys(policy).length > 0 ? policy : undefined;
}

/** A Duration as the policy parser reads it; undefined for a missing or zero one. */
function toDuration(message: DurationMessage | null | undefined): DurationInput | undefined {
  if (message === null || message === undefined) return undefined;
  const seconds = message.seconds ?? 0;
  const nanos = message.nanos ?? 0;
  if (isZero(seconds) && nanos === 0) return undefined;
  return { seconds, nanos };
}

function isSet<T extends string | number>(value: T | null | undefined): value is T {
  return value !== null && value !== undefined && !isZero(value);
}

function isZero(value: string | number): boolean {
  return typeof value === 'number' ? value === 0 : /^[+-]?0+$/.test(value.trim()) || value.trim() === '';
}
