/**
 * What a guest can make the host hold is bounded (issue 11, "Found" 1 and 2):
 * conversation state (bytes per value, keys and bytes per conversation),
 * refused outgoing requests (counted, the first few kept) and host calls per
 * call. A state write past a limit is an error the guest handles; going past
 * the host-call limit ends the call with OUTPUT_LIMIT_EXCEEDED. Each limit hit
 * is reported to `onLimitHit` (metrics).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryStateStore, type ToolRegistry } from '../host/index.js';
import { collect, fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

describe.runIf(hasCGuests)('state limits', () => {
  let registry: ToolRegistry;
  const hits: string[] = [];

  beforeAll(async () => {
    registry = makeRegistry({ stateLimits: { maxValueBytes: 4096, maxKeysPerConversation: 20, maxBytesPerConversation: 32 * 1024 } });
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    await registry.registerWasmTools(fixture('flood'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('refuses a value over state_value_bytes with an error the guest handles; the call goes on', async () => {
    hits.length = 0;
    const result = await registry.execute('state_flood', { count: 3, bytes: 5000 }, { conversationId: 'c-value' });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ set: 0, refused: expect.stringMatching(/^OUTPUT_LIMIT_EXCEEDED: .*over the limit of 4096 \(state_value_bytes\)$/) });
    expect(hits).toEqual(['state_value_bytes']);
  });

  it('refuses the key past state_keys_per_conversation, and overwriting a kept key still works', async () => {
    const result = await registry.execute('state_flood', { count: 1000, bytes: 8, distinct: 0 }, { conversationId: 'c-keys' });
    expect(result.structuredContent).toEqual({ set: 20, refused: expect.stringMatching(/\(state_keys_per_conversation\)$/) });
    const again = await registry.execute('state_flood', { count: 50, bytes: 8, distinct: 20 }, { conversationId: 'c-keys' });
    expect(again.structuredContent).toEqual({ set: 50 });
  });

  it('refuses the write that would take a conversation past state_bytes_per_conversation', async () => {
    const result = await registry.execute('state_flood', { count: 1000, bytes: 3000, distinct: 0 }, { conversationId: 'c-bytes' });
    // 10 keys of ~3 KB fit in 32 KiB, the 11th does not.
    expect(result.structuredContent).toEqual({ set: 10, refused: expect.stringMatching(/\(state_bytes_per_conversation\)$/) });
  });

  it('bounds the scratch state of a call without a conversation the same way', async () => {
    const result = await registry.execute('state_flood', { count: 1000, bytes: 8, distinct: 0 });
    expect(result.structuredContent).toEqual({ set: 20, refused: expect.stringMatching(/state_keys_per_conversation/) });
  });

  it('InMemoryStateStore frees a conversation\'s bytes when keys are deleted', async () => {
    const store = new InMemoryStateStore({ maxKeysPerConversation: 2, maxBytesPerConversation: 100 });
    await store.set('c', 'a', '"'.padEnd(60, 'x') + '"');
    await expect(store.set('c', 'b', '"'.padEnd(60, 'x') + '"')).rejects.toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'state', limit: 'state_bytes_per_conversation' } });
    await store.delete('c', 'a');
    await store.set('c', 'b', '"'.padEnd(60, 'x') + '"');
    await store.set('c', 'a', '1');
    await expect(store.set('c', 'z', '1')).rejects.toMatchObject({ details: { limit: 'state_keys_per_conversation' } });
  });
});

describe.runIf(hasCGuests)('host calls per call', () => {
  let registry: ToolRegistry;
  const hits: string[] = [];

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { outputLimits: { maxHostCalls: 200 } } });
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    await registry.registerWasmTools([fixture('flood'), fixture('http_flood')]);
  });
  afterAll(async () => {
    await registry.close();
  });

  it('ends a guest that makes more host calls than host_calls_per_call with OUTPUT_LIMIT_EXCEEDED, even though it returned', async () => {
    hits.length = 0;
    // Overwriting one key never hits a state limit: only the number of calls does.
    const events = await collect(registry.stream('state_flood', { count: 5000, bytes: 8, distinct: 1 }));
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'host-calls', limit: 'host_calls_per_call', max: 200 } });
    expect(hits).toEqual(['host_calls_per_call']);
    expect((await registry.execute('honest', {})).structuredContent).toEqual({ ok: true });
  });

  it('counts refused requests and keeps only the first few, with their URLs cut short', async () => {
    const result = await registry.execute('flood', { count: 150, pathBytes: 4096 });
    expect(result.error?.code ?? 'ok').toBe('ok');
    expect(result.structuredContent).toEqual({ sent: 150, failed: 150 });
    const accounting = result.accounting!;
    expect(accounting.networkDenied).toHaveLength(8);
    expect(accounting.networkDeniedCount).toBe(150);
    for (const denied of accounting.networkDenied!) expect(denied.url.length).toBeLessThan(600);
  });

  it('ends a denied-request flood at the host-call limit, with the refusals counted', async () => {
    const events = await collect(registry.stream('flood', { count: 100_000 }));
    const last = events.at(-1);
    expect(last).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'host-calls' } });
    expect(last?.type === 'error' && last.accounting.networkDeniedCount).toBe(200);
  });
});

describe.runIf(hasCGuests)('conversation isolation', () => {
  it('gives callers passing conversationId "" no shared instance (nor shared state): such a call is refused', async () => {
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(fixture('counter'), { isolation: 'conversation' });
      // Admission refuses the empty id (the sandbox would also treat it as no conversation, never as a shared one).
      for (const tool of ['counter', 'state']) {
        await expect(registry.execute(tool, { op: 'get', key: 'k' }, { conversationId: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      }
      // A named conversation still keeps its instance.
      await registry.execute('counter', {}, { conversationId: 'c1' });
      expect((await registry.execute('counter', {}, { conversationId: 'c1' })).structuredContent).toEqual({ count: 2 });
    } finally {
      await registry.close();
    }
  });

});
