import { describe, expect, it } from 'vitest';
import { parseDuration, parseExecutionPolicy } from '../host/runner.js';

describe('parsing an ExecutionPolicy', () => {
  it('reads protobuf Durations as strings and objects', () => {
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('0.000001s')).toBe(0.001);
    expect(parseDuration({ seconds: 1, nanos: 500_000_000 })).toBe(1500);
    expect(parseDuration({ seconds: '2' })).toBe(2000);
    expect(() => parseDuration('15')).toThrow(/Duration/);
    expect(() => parseDuration({ seconds: 1, nanos: 1e9 })).toThrow(/nanos/);
  });

  it('accepts the proto field names, snake_case and lowerCamelCase, and memory_mb', () => {
    expect(parseExecutionPolicy({
      timeout: '2s', max_retries: 2, backoff: 'exponential', worktree_required: true,
      network_policy: 'egress_restricted', privilege_level: 'Elevated', budget_cpu_ms: 100, budget_wall_ms: '300', memory_mb: 64,
    })).toEqual({
      timeoutMs: 2000, maxRetries: 2, backoff: 'exponential', worktreeRequired: true,
      networkPolicy: 'EGRESS_RESTRICTED', privilegeLevel: 'ELEVATED', budgetCpuMs: 100, budgetWallMs: 300, memoryMb: 64,
    });
    expect(parseExecutionPolicy({ networkPolicy: 'DENY_ALL', budgetWallMs: 10 })).toEqual({ networkPolicy: 'DENY_ALL', budgetWallMs: 10 });
  });

  it('treats 0 and empty values as "the host default"', () => {
    expect(parseExecutionPolicy({ timeout: '0s', budget_cpu_ms: 0, budget_wall_ms: 0, memory_mb: 0, network_policy: '', backoff: '' })).toEqual({});
  });

  it('refuses unknown labels, unknown fields and wrong types with INVALID_INPUT', () => {
    expect(() => parseExecutionPolicy({ network_policy: 'SOMETIMES' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining('SOMETIMES') }));
    expect(() => parseExecutionPolicy({ privilege_level: 'root' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => parseExecutionPolicy({ timeout_ms: 5 })).toThrow(/unknown field "timeout_ms"/);
    expect(() => parseExecutionPolicy({ max_retries: -1 })).toThrow(/max_retries/);
    expect(() => parseExecutionPolicy([])).toThrow(/object/);
  });
});
