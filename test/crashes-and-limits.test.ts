/**
 * Crashes and output floods end only the hostile call, with a code and a
 * message that says what happened; the pool heals and honest calls beside and
 * behind them run normally.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { collect, fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

describe.runIf(hasCGuests)('crashing guests', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('hostile'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it.each([
    ['trap', /trapped: .*unreachable/],
    ['div_zero', /trapped: .*divide by zero/],
    ['oob', /trapped: .*out of bounds/],
    ['recurse', /trapped/],
    ['recurse_native', /overflowed its stack/],
    ['exit', /called exit/],
  ])('ends %s with TOOL_CRASHED and a message that says what happened', async (tool, message) => {
    const events = await collect(registry.stream(tool, {}));
    expect(terminalCount(events)).toBe(1);
    const last = events.at(-1);
    expect(last).toMatchObject({ type: 'error', code: 'TOOL_CRASHED', message: expect.stringMatching(message) });
    expect((await registry.execute('honest', { n: 4 })).structuredContent).toEqual({ ok: true, sum: 10 });
  });

  it('runs the calls queued behind a crash normally', async () => {
    const small = makeRegistry({ sandbox: { threads: 1 } });
    try {
      await small.registerWasmTools(fixture('hostile'));
      const calls = [small.execute('trap', {}), ...[1, 2, 3].map((n) => small.execute('honest', { n })), small.execute('spin', {}, { policy: { timeout: '0.2s' } }), small.execute('honest', { n: 5 })];
      const results = await Promise.all(calls);
      expect(results.map((r) => r.error?.code ?? r.structuredContent)).toEqual([
        'TOOL_CRASHED',
        { ok: true, sum: 1 },
        { ok: true, sum: 3 },
        { ok: true, sum: 6 },
        'TOOL_TIMEOUT',
        { ok: true, sum: 15 },
      ]);
    } finally {
      await small.close();
    }
  });
});

describe.runIf(hasCGuests)('output limits', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { outputLimits: { maxEvents: 500, maxEventBytes: 64 * 1024, maxResultBytes: 1024 * 1024, stdioBytes: 4096 } } });
    await registry.registerWasmTools(fixture('hostile'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('ends a result larger than the limit with OUTPUT_LIMIT_EXCEEDED, without delivering it', async () => {
    const result = await registry.execute('big_result', { mb: 2 });
    expect(result.error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'result', limit: 1024 * 1024 } });
    expect(result.structuredContent).toBeUndefined();
  });

  it('ends an event flood at the event count limit', async () => {
    const events = await collect(registry.stream('event_flood', { count: 100_000, bytes: 16 }));
    expect(events.filter((event) => event.type === 'delta').length).toBeLessThanOrEqual(500);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED' });
    expect(terminalCount(events)).toBe(1);
  });

  it('ends an event flood at the byte limit', async () => {
    const events = await collect(registry.stream('event_flood', { count: 400, bytes: 4096 }));
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED', message: expect.stringContaining('bytes') });
  });

  it('ends a log flood the same way', async () => {
    const events = await collect(registry.stream('log_flood', { count: 100_000 }));
    expect(events.at(-1)).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
  });

  it('drops stdout past its cap but lets the call finish', async () => {
    const events = await collect(registry.stream('stdout_flood', { lines: 10_000 }));
    const logs = events.filter((event) => event.type === 'log');
    expect(logs.length).toBeLessThan(500);
    expect(logs.at(-1)).toMatchObject({ level: 'warn', message: expect.stringContaining('dropped') });
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { lines: 10_000 } });
  });
});

describe.runIf(hasCGuests)('honest calls beside hostile ones', () => {
  it('finish with correct results while each hostile call runs on the other worker', async () => {
    const registry = makeRegistry({ sandbox: { threads: 2 } });
    try {
      await registry.registerWasmTools(fixture('hostile'));
      const hostile: Array<[string, Record<string, number>, Record<string, unknown>]> = [
        ['spin', {}, { timeout: '0.2s' }],
        ['spin', {}, { budget_cpu_ms: 100, timeout: '10s' }],
        ['memory_bomb', { mb: 4096 }, { memory_mb: 64 }],
        ['malloc_bomb', {}, { memory_mb: 48 }],
        ['recurse', {}, {}],
        ['trap', {}, {}],
        ['exit', {}, {}],
        ['big_result', { mb: 20 }, {}],
        ['event_flood', {}, {}],
        ['sleep_for', { ms: 300 }, { budget_cpu_ms: 50 }],
      ];
      for (const [tool, args, policy] of hostile) {
        const attack = registry.execute(tool, args, { policy });
        const honest: Array<Promise<unknown>> = [];
        for (let n = 1; n <= 5; n += 1) honest.push(registry.execute('honest', { n: n * 10 }).then((r) => r.structuredContent));
        expect(await Promise.all(honest)).toEqual([10, 20, 30, 40, 50].map((n) => ({ ok: true, sum: (n * (n + 1)) / 2 })));
        const outcome = await attack;
        if (tool === 'sleep_for') expect(outcome.isError).toBe(false);
        else expect(outcome.isError, tool).toBe(true);
      }
    } finally {
      await registry.close();
    }
  });
});
