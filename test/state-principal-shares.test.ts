/**
 * The in-memory state store's limits are shared fairly between principals
 * (issue 36, M7): before, eviction was one least-recently-used list, and one
 * principal's 75 calls wiped every other principal's conversation state.
 * Each principal holding state has a share (total / principals holding
 * state); a writer over its share makes room from its own least recently used
 * conversations, and another principal loses conversations only while it is
 * over its share.
 */
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, type ToolRegistry } from '../host/index.js';
import { conversationScope } from '../host/core/principal-scope.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const value = (bytes: number, fill = 'x'): string => `"${fill.repeat(bytes - 2)}"`;
const key = (principal: string, id: string): string => conversationScope(principal, id);

describe('shares of the in-memory state store between principals', () => {
  it('keeps the conversations of a principal within its share while another principal fills the store many times over', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 20_000 });
    await store.set(key('bob', 'diary'), 'k', value(1000));
    for (let c = 0; c < 200; c++) await store.set(key('alice', `a-${c}`), 'k', value(1000));
    expect(await store.get(key('bob', 'diary'), 'k')).toBe(value(1000));
    // Alice's own least recently used conversations went first; her newest are kept.
    expect(await store.get(key('alice', 'a-0'), 'k')).toBeUndefined();
    expect(await store.get(key('alice', 'a-199'), 'k')).toBe(value(1000));
    expect(store.heldBytes).toBeLessThanOrEqual(20_000);
  });

  it('keeps a principal\'s conversations within its share of the conversation cap too', async () => {
    const store = new InMemoryStateStore({ maxConversations: 10 });
    await store.set(key('bob', 'diary'), 'k', '1');
    let evicted = 0;
    for (let c = 0; c < 100; c++) evicted += (await store.set(key('alice', `a-${c}`), 'k', '1'))?.evictedConversations ?? 0;
    expect(evicted).toBe(91);
    expect(await store.get(key('bob', 'diary'), 'k')).toBe('1');
    expect(store.conversations).toBe(10);
  });

  it('takes room from a principal over its share, its least recently used conversation first', async () => {
    // One conversation: key (1) + value (1000) + id (~20) + 64 + 256 ≈ 1.34 KB; the total fits 10.
    const store = new InMemoryStateStore({ maxTotalBytes: 13_500 });
    for (let c = 0; c < 10; c++) await store.set(key('alice', `a-${c}`), 'k', value(1000));
    await store.get(key('alice', 'a-0'), 'k'); // a-1 is now Alice's least recently used
    // Bob is within his share (half the total): Alice, over hers, gives room.
    const outcome = await store.set(key('bob', 'b-0'), 'k', value(1000));
    expect(outcome).toMatchObject({ evictedForBytes: 1 });
    expect(await store.get(key('alice', 'a-1'), 'k')).toBeUndefined();
    expect(await store.get(key('alice', 'a-0'), 'k')).toBe(value(1000));
    expect(await store.get(key('bob', 'b-0'), 'k')).toBe(value(1000));
  });

  it('refuses a write that would take a principal past its share with nothing of its own to give, and evicts nothing', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 4000 });
    await store.set(key('alice', 'a'), 'k', value(1500));
    await store.set(key('bob', 'b'), 'k', value(1500));
    // Bob's one conversation would take 2.5 KB of 4 KB: over his share (2 KB), and Alice is within hers.
    await expect(store.set(key('bob', 'b'), 'k2', value(800))).rejects.toMatchObject({
      code: 'OUTPUT_LIMIT_EXCEEDED',
      details: { reason: 'state', limit: 'state_total_bytes', principalShare: true },
    });
    expect(await store.get(key('alice', 'a'), 'k')).toBe(value(1500));
    expect(await store.get(key('bob', 'b'), 'k')).toBe(value(1500));
  });

  it('lets one principal use the whole store while nobody else holds state', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 20_000 });
    for (let c = 0; c < 14; c++) await store.set(key('alice', `a-${c}`), 'k', value(1000));
    for (let c = 0; c < 14; c++) expect(await store.get(key('alice', `a-${c}`), 'k')).toBe(value(1000));
    expect(store.heldBytesOf('alice')).toBe(store.heldBytes);
  });
});

describe.runIf(hasCGuests)('a principal whose guest fills state in many conversations', () => {
  it('leaves another principal\'s conversation state in place, evicting its own oldest conversations', async () => {
    const registry: ToolRegistry = makeRegistry({ stateLimits: { maxValueBytes: 4096, maxBytesPerConversation: 32 * 1024, maxTotalBytes: 100 * 1024 } });
    const hits: string[] = [];
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    try {
      await registry.registerWasmTools(fixture('counter'));
      const bob = { conversationId: 'diary', principal: 'bob' };
      expect((await registry.execute('state', { op: 'set', key: 'note', value: '"bob\'s"' }, bob)).structuredContent).toEqual({ ok: true });
      // Alice: 75 conversations of ~3.4 KB each, 2.5 times the store's total.
      for (let c = 0; c < 75; c++) {
        const result = await registry.execute('state', { op: 'set', key: 'k', value: value(3000) }, { conversationId: `a-${c}`, principal: 'alice' });
        expect(result.structuredContent).toEqual({ ok: true });
      }
      expect(hits.filter((limit) => limit === 'state_total_bytes').length).toBeGreaterThan(0);
      // Bob's state survived, and his round trips go on.
      expect((await registry.execute('state', { op: 'get', key: 'note' }, bob)).structuredContent).toEqual({ value: '"bob\'s"' });
      expect((await registry.execute('state', { op: 'set', key: 'note', value: '"again"' }, bob)).structuredContent).toEqual({ ok: true });
      expect((await registry.execute('state', { op: 'get', key: 'note' }, bob)).structuredContent).toEqual({ value: '"again"' });
      // Alice's oldest conversations went, her newest are kept.
      const get = async (c: number): Promise<unknown> => (await registry.execute('state', { op: 'get', key: 'k' }, { conversationId: `a-${c}`, principal: 'alice' })).structuredContent;
      expect(await get(0)).toEqual({ value: null });
      expect(await get(74)).toEqual({ value: value(3000) });
    } finally {
      await registry.close();
    }
  });
});
