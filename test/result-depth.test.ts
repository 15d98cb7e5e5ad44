/**
 * A result the host cannot carry ends its call with a structured error, and
 * the host keeps serving: values nested past the limit, cycles, values JSON
 * cannot hold. (A 5,000-level result used to overflow the stack while the
 * call ended: an unhandled rejection that took the whole process down.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ToolRegistry, defineNativeTool, silentLogger } from '../host/index.js';
import { nestsDeeperThan } from '../host/core/result-depth.js';
import { collect } from './helpers.js';

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? { v: value } : [value];
  return value;
}

let current: ToolRegistry | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

function withTool(run: () => unknown, maxResultDepth?: number): ToolRegistry {
  const registry = new ToolRegistry({ logger: silentLogger, ...(maxResultDepth === undefined ? {} : { maxResultDepth }) });
  registry.register(defineNativeTool({ name: 'returns', description: 'Returns what the test says.', inputSchema: {}, run }));
  registry.register(defineNativeTool({ name: 'ok', description: 'Answers.', inputSchema: {}, run: () => ({ ok: true }) }));
  current = registry;
  return registry;
}

describe('results the host cannot carry', () => {
  it('measures depth without recursion, and calls a cycle too deep', () => {
    expect(nestsDeeperThan(nested(10), 10)).toBe(false);
    expect(nestsDeeperThan(nested(11), 10)).toBe(true);
    expect(nestsDeeperThan(nested(100_000), 256)).toBe(true);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(nestsDeeperThan(cycle, 256)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
  });

  it('ends a call whose result nests 5,000 levels deep with OUTPUT_LIMIT_EXCEEDED, once, and keeps serving', async () => {
    const registry = withTool(() => nested(5_000));
    const events = await collect(registry.stream('returns', {}));
    expect(events.filter((event) => event.type === 'result' || event.type === 'error')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED', details: { maxDepth: 256 } });
    expect((await registry.execute('ok', {})).structuredContent).toEqual({ ok: true });
  });

  it('takes the limit from the registry\'s options', async () => {
    const registry = withTool(() => nested(5), 4);
    expect((await registry.execute('returns', {})).error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
  });

  it('ends a call whose result is a cycle, or holds a BigInt, with an error rather than a crash', async () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const registry = withTool(() => cycle);
    expect((await registry.execute('returns', {})).error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
    registry.register(defineNativeTool({ name: 'bigint', description: 'Returns a BigInt.', inputSchema: {}, run: () => ({ n: 1n }) }));
    const bigint = await registry.execute('bigint', {});
    expect(bigint.isError).toBe(true);
    expect(bigint.error?.code).toBe('TOOL_CRASHED');
    expect((await registry.execute('ok', {})).structuredContent).toEqual({ ok: true });
  });
});
