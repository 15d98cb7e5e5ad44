/**
 * The in-memory state store keeps a bounded number of conversations (clients
 * choose conversation ids): at the cap, a write to a new conversation evicts
 * the least recently used one, and the eviction is a limit hit that metrics
 * count (`toolhost_limit_hits_total`).
 */
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, defineNativeTool } from '../host/index.js';
import { createMetrics } from '../host/servers/metrics.js';
import { makeRegistry } from './helpers.js';

describe('the conversation cap of the in-memory state store', () => {
  it('evicts the least recently used conversation (read or written last) to make room for a new one', async () => {
    const store = new InMemoryStateStore({ maxConversations: 2 });
    expect(await store.set('a', 'k', '1')).toBeUndefined();
    await store.set('b', 'k', '2');
    // Reading `a` makes `b` the least recently used.
    expect(await store.get('a', 'k')).toBe('1');
    expect(await store.set('c', 'k', '3')).toEqual({ evictedConversations: 1 });
    expect(store.conversations).toBe(2);
    expect(await store.get('b', 'k')).toBeUndefined();
    expect(await store.get('a', 'k')).toBe('1');
    // Writing to a conversation it holds evicts nothing.
    expect(await store.set('c', 'k2', '4')).toBeUndefined();
  });

  it('refuses a cap that is not a positive integer, naming the option', () => {
    expect(() => new InMemoryStateStore({ maxConversations: 0 })).toThrow('options.stateLimits.maxConversations must be a positive integer');
  });

  it('counts an eviction as a state_conversations limit hit, served by the metrics', async () => {
    const registry = makeRegistry({ stateLimits: { maxConversations: 3 } });
    registry.register(defineNativeTool({
      name: 'remember',
      description: 'Stores its value in the conversation.',
      inputSchema: { type: 'object', properties: { value: { type: 'string' } } },
      run: async (args, ctx) => {
        const before = await ctx.getState<string | null>('value', null);
        await ctx.setState('value', (args as { value: string }).value);
        return { before };
      },
    }));
    const metrics = createMetrics(registry);
    const hits: Array<[string, string]> = [];
    registry.onLimitHit((tool, limit) => hits.push([tool, limit]));
    try {
      for (const id of ['c1', 'c2', 'c3', 'c4', 'c5']) await registry.execute('remember', { value: id }, { conversationId: id });
      expect(hits).toEqual([['remember', 'state_conversations'], ['remember', 'state_conversations']]);
      // c1 and c2 were evicted; c5, the newest, is kept.
      expect((await registry.execute('remember', { value: 'again' }, { conversationId: 'c5' })).structuredContent).toEqual({ before: 'c5' });
      expect((await registry.execute('remember', { value: 'again' }, { conversationId: 'c1' })).structuredContent).toEqual({ before: null });
      const text = await metrics.metrics();
      expect(text).toContain('# TYPE toolhost_limit_hits_total counter');
      expect(text).toContain('toolhost_limit_hits_total{tool="remember",limit="state_conversations"} 3');
    } finally {
      metrics.close();
      await registry.close();
    }
  });
});
