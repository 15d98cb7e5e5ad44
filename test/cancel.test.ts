import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, collect, fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

async function firstEvent(iterator: AsyncIterator<ToolEvent>): Promise<ToolEvent> {
  const next = await iterator.next();
  if (next.done) throw new Error('stream ended early');
  return next.value;
}

describe.runIf(hasCGuests)('cancelling calls', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ cancelGraceMs: 200 });
    await registry.registerWasmTools(fixture('counter'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('answers CANCELLED for a running call that stops cooperatively, and the stream ends with CANCELLED', async () => {
    // A long grace: this guest must stop on its own, by seeing cancelled() turn true.
    const patient = makeRegistry({ cancelGraceMs: 30_000 });
    try {
      await patient.registerWasmTools(fixture('counter'));
      const stream = patient.stream('stream_then_wait', {}, { callId: 'coop-1' });
      const events: ToolEvent[] = [];
      for await (const event of stream) {
        events.push(event);
        // The delta proves the guest is running; only the cooperative flag can stop it before the grace.
        if (event.type === 'delta') expect(patient.cancel('coop-1')).toBe('CANCELLED');
      }
      expect(terminalCount(events)).toBe(1);
      const last = events.at(-1);
      expect(last).toMatchObject({ type: 'error', code: 'CANCELLED', details: { partial: true } });
      // The worker reported its accounting, so it was not terminated: the guest returned by itself.
      expect(last).toMatchObject({ accounting: { cpuMs: expect.any(Number), instance: expect.any(String) } });
    } finally {
      await patient.close();
    }
  });

  it('stops a guest that ignores cancellation by terminating its worker after the grace', async () => {
    const started = Date.now();
    const stream = registry.stream('loop', {}, { callId: 'hard-1' });
    const iterator = stream[Symbol.asyncIterator]();
    await firstEvent(iterator);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stream.cancel()).toBe('CANCELLED');
    const rest: ToolEvent[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    expect(Date.now() - started).toBeLessThan(10_000);
    // The pool healed: the next calls run normally.
    expect((await registry.execute('counter', {})).structuredContent).toEqual({ count: 1 });
  });

  it('answers ALREADY_COMPLETED for a finished call and NOT_FOUND for an unknown id', async () => {
    await registry.execute('counter', {}, { callId: 'done-1' });
    expect(registry.cancel('done-1')).toBe('ALREADY_COMPLETED');
    expect(registry.cancel('never-seen')).toBe('NOT_FOUND');
  });

  it('cancels through the caller\'s AbortSignal', async () => {
    const controller = new AbortController();
    const pending = collect(registry.stream('spin', {}, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    const events = await pending;
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it('ends a runaway guest at its timeout with TOOL_TIMEOUT, and a budget with WALL_TIMEOUT', async () => {
    const timedOut = await registry.execute('loop', {}, { policy: { timeout: '0.2s' } });
    expect(timedOut.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
    const budget = await registry.execute('loop', {}, { policy: { budget_wall_ms: 150, timeout: '5s' } });
    expect(budget.error).toMatchObject({ code: 'WALL_TIMEOUT' });
    expect((await registry.execute('counter', {})).isError).toBe(false);
  });
});

describe.runIf(hasCGuests).each(CONTAINMENTS)('events of a running guest (%s containment)', (containment) => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ cancelGraceMs: 1000, sandbox: { containment } });
    await registry.registerWasmTools(fixture('counter'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('reach the caller while the guest is still running, and a cancel then reports a partial result', async () => {
    const stream = registry.stream('stream_then_wait', {});
    const seen: ToolEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      // The guest is spinning now; it only stops because of this cancel.
      if (event.type === 'delta') expect(stream.cancel()).toBe('CANCELLED');
    }
    expect(seen.map((event) => event.type)).toEqual(['start', 'delta', 'progress', 'error']);
    expect(seen[1]).toMatchObject({ data: { ready: true } });
    expect(seen.at(-1)).toMatchObject({ code: 'CANCELLED', details: { partial: true } });
    // The guest saw cancelled() turn true and returned (its worker reported), well within the grace.
    expect(seen.at(-1)).toMatchObject({ accounting: { cpuMs: expect.any(Number), instance: expect.any(String) } });
  });
});
