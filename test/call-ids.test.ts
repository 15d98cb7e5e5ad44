/** Call ids are bounded on every entry point, and the finished ids remembered are bounded in bytes. */
import { describe, expect, it } from 'vitest';
import { defineNativeTool } from '../host/index.js';
import { CallTracker } from '../host/core/call-tracker.js';
import { CallIdSource } from '../host/core/call/call-id-source.js';
import { callIdProblem } from '../host/core/call/ids.js';
import { makeRegistry } from './helpers.js';

describe('call ids', () => {
  it('the library refuses ids that are too long, empty or not visible ASCII with INVALID_INPUT', async () => {
    const registry = makeRegistry({ callIds: { maxLength: 40 } });
    registry.register(defineNativeTool({ name: 'ok', description: 'ok', inputSchema: { type: 'object' }, run: () => ({}) }));
    try {
      for (const callId of ['', 'a'.repeat(41), 'tab\there', 'é']) {
        await expect(registry.execute('ok', {}, { callId })).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'call_id' } });
      }
      expect((await registry.execute('ok', {}, { callId: 'a'.repeat(40) })).isError).toBeFalsy();
    } finally {
      await registry.close();
    }
  });

  it('the host makes random version-4 UUIDs, unique across many batches', () => {
    const source = new CallIdSource();
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i += 1) {
      const id = source.next();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(1000);
    // Every hex digit appears in every free position over 1000 ids (a formatting slip would pin one).
    const free = [0, 9, 15, 20, 35];
    for (const at of free) expect(new Set([...seen].map((id) => id[at])).size).toBe(16);
  });

  it('a call without an id gets a UUID of its own', async () => {
    const registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ok', description: 'ok', inputSchema: { type: 'object' }, run: () => ({}) }));
    try {
      const ids = [registry.stream('ok', {}).callId, registry.stream('ok', {}).callId];
      for (const id of ids) expect(callIdProblem(id)).toBeUndefined();
      expect(ids[0]).not.toBe(ids[1]);
    } finally {
      await registry.close();
    }
  });

  it('the rule: 1..maxLength visible ASCII characters', () => {
    expect(callIdProblem('550e8400-e29b-41d4-a716-446655440000')).toBeUndefined();
    expect(callIdProblem('x'.repeat(129))).toMatch(/at most 128/);
  });

  it('remembers finished ids up to a number of bytes, forgetting the oldest first', () => {
    const tracker = new CallTracker(10_000);
    for (let i = 0; i < 1000; i += 1) {
      const id = `call-${i}`.padEnd(100, 'x');
      tracker.begin(id, () => undefined);
      tracker.end(id);
    }
    expect(tracker.rememberedBytes).toBeLessThanOrEqual(10_000);
    expect(tracker.state('call-999'.padEnd(100, 'x'))).toBe('completed');
    expect(tracker.state('call-0'.padEnd(100, 'x'))).toBe('unknown');
  });

  it('an id used again after it finished is in flight, then completed, and counted once', () => {
    const tracker = new CallTracker(10_000);
    tracker.begin('again', () => undefined);
    tracker.end('again');
    const once = tracker.rememberedBytes;
    expect(tracker.begin('again', () => undefined)).toBe(true);
    expect(tracker.state('again')).toBe('in_flight');
    expect(tracker.begin('again', () => undefined)).toBe(false);
    tracker.end('again');
    expect(tracker.state('again')).toBe('completed');
    expect(tracker.rememberedBytes).toBe(once);
  });

  it('stays within its bytes over many more calls than it remembers (the forgotten front is cut off)', () => {
    const tracker = new CallTracker(4_000);
    for (let i = 0; i < 50_000; i += 1) {
      tracker.begin(`c${i}`, () => undefined);
      tracker.end(`c${i}`);
      expect(tracker.rememberedBytes).toBeLessThanOrEqual(4_000);
    }
    expect(tracker.state('c49999')).toBe('completed');
    expect(tracker.state('c49000')).toBe('unknown');
    expect(tracker.cancel('c49999')).toBe('ALREADY_COMPLETED');
  });
});

describe('smaller admission checks', () => {
  it('refuses conversationId "" and policy fields named __proto__, toString or constructor with INVALID_INPUT', async () => {
    const registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'ok', description: 'ok', inputSchema: { type: 'object' }, run: () => ({}) }));
    try {
      await expect(registry.execute('ok', {}, { conversationId: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'conversation_id' } });
      for (const field of ['__proto__', 'toString', 'constructor']) {
        const policy = JSON.parse(`{"${field}": {"network_policy": "FULL_ACCESS"}}`) as Record<string, unknown>;
        await expect(registry.execute('ok', {}, { policy })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining(`unknown field "${field}"`) as string });
      }
    } finally {
      await registry.close();
    }
  });
});
