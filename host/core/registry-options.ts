/** The registry's options checked once, at the boundary, with messages that name the option. */
import { DEFAULT_POLICY_DEFAULTS, type PolicyDefaults } from '../policy/execution-policy.js';
import { DEFAULT_CANCEL_GRACE_MS } from './call/call.js';
import { DEFAULT_CALL_ID_LIMITS, type CallIdLimits } from './call/ids.js';
import { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './retry.js';
import { DEFAULT_MAX_RESULT_DEPTH } from './result-depth.js';
import type { ToolRegistryOptions } from './registry-types.js';
import { DEFAULT_CLIENT_REQUEST_BYTES } from './client-requests.js';

export interface CheckedRegistryOptions {
  cancelGraceMs: number;
  defaults: PolicyDefaults;
  callIds: CallIdLimits;
  retry: RetryOptions;
  maxResultDepth: number;
  clientRequestBytes: number;
}

export function checkRegistryOptions(options: ToolRegistryOptions): CheckedRegistryOptions {
  const cancelGraceMs = options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
  if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
    throw new TypeError('options.cancelGraceMs must be a non-negative number');
  }
  const defaults = { ...DEFAULT_POLICY_DEFAULTS, ...options.defaults };
  for (const key of ['wallMs', 'maxWallMs', 'maxCpuMs', 'memoryMb', 'maxMemoryMb'] as const) {
    if (!Number.isFinite(defaults[key]) || defaults[key] <= 0) throw new TypeError(`options.defaults.${key} must be a positive number`);
  }
  if (defaults.cpuMs !== undefined && (!Number.isFinite(defaults.cpuMs) || defaults.cpuMs <= 0)) {
    throw new TypeError('options.defaults.cpuMs must be a positive number when set');
  }
  if (!Number.isInteger(defaults.maxRetries) || defaults.maxRetries < 0) throw new TypeError('options.defaults.maxRetries must be a non-negative integer');
  const callIds = { ...DEFAULT_CALL_ID_LIMITS, ...options.callIds };
  if (!Number.isInteger(callIds.maxLength) || callIds.maxLength < 1) throw new TypeError('options.callIds.maxLength must be a positive integer');
  const retry = { ...DEFAULT_RETRY_OPTIONS, ...options.retry };
  if (!(retry.baseMs >= 0) || !(retry.capMs >= retry.baseMs)) throw new TypeError('options.retry needs 0 <= baseMs <= capMs');
  const maxResultDepth = options.maxResultDepth ?? DEFAULT_MAX_RESULT_DEPTH;
  if (!Number.isInteger(maxResultDepth) || maxResultDepth < 1) throw new TypeError('options.maxResultDepth must be a positive integer');
  const clientRequestBytes = options.clientRequestBytes ?? DEFAULT_CLIENT_REQUEST_BYTES;
  if (!Number.isInteger(clientRequestBytes) || clientRequestBytes < 1) throw new TypeError('options.clientRequestBytes must be a positive integer');
  return { cancelGraceMs, defaults, callIds, retry, maxResultDepth, clientRequestBytes };
}
