/**
 * Issue 36 M6: the host's own warnings about guest input are events of the call like the guest's own log
 * lines: they count against its event and byte limits, and quote at most a short prefix of the input. Before, a
 * get-state with an over-long key made the worker post a warning quoting the whole key outside the limits (one call
 * delivered 2.5 GiB of log events under a 16 MiB limit). The control: a state round trip still works.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

async function collect(stream: AsyncIterable<ToolEvent>): Promise<ToolEvent[]> {
  const events: ToolEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const logs = (events: ToolEvent[]): string[] => events.flatMap((event) => (event.type === 'log' ? [event.message] : []));

describe.skipIf(!hasCGuests)('host warnings about guest input', () => {
  let registry: ToolRegistry;
  let strict: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 60_000 } });
    await registry.registerWasmTools(fixture('client_flood'));
    strict = makeRegistry({ sandbox: { outputLimits: { maxEvents: 50 } } });
    await strict.registerWasmTools(fixture('client_flood'));
  }, 60_000);
  afterAll(async () => {
    await registry?.close();
    await strict?.close();
  });

  it('quotes at most a short prefix of a 1 MB state key, 1000 times over, within the byte limit', { timeout: 120_000 }, async () => {
    const events = await collect(registry.stream('long_key', { count: 1000, bytes: 1_048_576 }, { conversationId: 'c1' }));
    const end = events.at(-1)!;
    expect(end).toMatchObject({ type: 'result' });
    expect((end as Extract<ToolEvent, { type: 'result' }>).data).toEqual({ absent: 1000 });
    const warnings = logs(events);
    expect(warnings).toHaveLength(1000);
    for (const warning of warnings) expect(warning.length).toBeLessThan(400);
    expect(warnings[0]).toContain('…(1048576 bytes)');
    expect(warnings.reduce((sum, warning) => sum + warning.length, 0)).toBeLessThan(400_000);
  });

  it('ends the call when the warnings pass the event limit, as the guest\'s own log lines would', { timeout: 60_000 }, async () => {
    const events = await collect(strict.stream('long_key', { count: 200, bytes: 100_000 }, { conversationId: 'c1' }));
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED' });
    expect(logs(events).length).toBeLessThanOrEqual(50);
  });

  it('round-trips state through set-state and get-state (control)', async () => {
    const result = await registry.execute('state_round', {}, { conversationId: 'c2' });
    expect(result.structuredContent).toEqual({ value: { v: 1 } });
  });
});
