/**
 * The in-memory state store caps the bytes it holds in all (issue 30, "Found"
 * 4): before, only each conversation (16 MiB) and their number (10,000) were
 * capped, and a tool that filled each conversation it was called in aborted
 * `toolhost serve` after ~260 conversations. A write that would pass the total
 * evicts the least recently used other conversations (each a
 * `state_total_bytes` limit hit); one conversation alone past it is refused.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, defineNativeTool, type ToolRegistry } from '../host/index.js';
import { DEFAULT_STATE_LIMITS } from '../host/core/state.js';
import { createMetrics } from '../host/servers/metrics.js';
import { fixture, hasCGuests, makeRegistry, root } from './helpers.js';

const value = (bytes: number, fill = 'x'): string => `"${fill.repeat(bytes - 2)}"`;

describe('the total bytes of the in-memory state store', () => {
  it('evicts the least recently used other conversations to make room, and counts what it holds', async () => {
    // Each conversation below: key "k" (1) + value (1000) + id (2) + 64 + 256 = 1323 bytes.
    const store = new InMemoryStateStore({ maxTotalBytes: 3 * 1323 });
    await store.set('c1', 'k', value(1000));
    await store.set('c2', 'k', value(1000));
    await store.set('c3', 'k', value(1000));
    expect(store.heldBytes).toBe(3 * 1323);
    await store.get('c1', 'k'); // c2 is now the least recently used
    expect(await store.set('c4', 'k', value(1000))).toEqual({ evictedConversations: 0, evictedForBytes: 1 });
    expect(await store.get('c2', 'k')).toBeUndefined();
    expect(await store.get('c1', 'k')).toBe(value(1000));
    expect(store.conversations).toBe(3);
    expect(store.heldBytes).toBeLessThanOrEqual(3 * 1323);
  });

  it('never evicts the conversation being written, even when it is the least recently used', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 4000 });
    await store.set('c1', 'a', value(1000));
    await store.set('c2', 'a', value(1000));
    // c1 (least recently used) grows: c2 has to go, not c1.
    expect(await store.set('c1', 'b', value(1500))).toEqual({ evictedConversations: 0, evictedForBytes: 1 });
    expect(await store.get('c1', 'a')).toBe(value(1000));
    expect(await store.get('c2', 'a')).toBeUndefined();
  });

  it('refuses a write that would take its conversation alone past the total, keeping the others', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 2000 });
    await store.set('other', 'k', value(500));
    await expect(store.set('big', 'k', value(1900))).rejects.toMatchObject({
      code: 'OUTPUT_LIMIT_EXCEEDED',
      details: { reason: 'state', limit: 'state_total_bytes', max: 2000 },
    });
    expect(await store.get('other', 'k')).toBe(value(500));
  });

  it('frees the bytes of deleted keys and charges tiny entries their overhead', async () => {
    const store = new InMemoryStateStore({ maxTotalBytes: 10_000 });
    for (let i = 0; i < 20; i++) await store.set('c', `k${i}`, '1');
    const held = store.heldBytes;
    expect(held).toBeGreaterThan(20 * 64);
    for (let i = 0; i < 20; i++) await store.delete('c', `k${i}`);
    expect(store.heldBytes).toBe(0);
    expect(store.conversations).toBe(0);
  });

  it('defaults to a quarter of the heap limit and refuses a total that is not a positive integer', () => {
    expect(DEFAULT_STATE_LIMITS.maxTotalBytes).toBe(Math.floor(getHeapStatistics().heap_size_limit / 4));
    expect(() => new InMemoryStateStore({ maxTotalBytes: 0 })).toThrow('options.stateLimits.maxTotalBytes must be a positive integer');
  });

  it('keeps a host with a 128 MiB heap alive while a client fills 32 conversations of 16 MB (the default limits)', () => {
    // What aborted `toolhost serve`, at an eighth of the scale (4 times the heap): every value a distinct 1 MB string.
    const script = `
      const { InMemoryStateStore } = await import(${JSON.stringify(join(root, 'dist', 'host', 'core', 'state.js'))});
      const store = new InMemoryStateStore();
      let evicted = 0;
      for (let c = 0; c < 32; c++) {
        for (let k = 0; k < 16; k++) {
          const text = '"' + Buffer.alloc(1_000_000 - 2, 97 + ((c * 16 + k) % 26)).toString('latin1') + '"';
          const outcome = await store.set('conversation-' + c, 'k' + k, text);
          evicted += outcome?.evictedForBytes ?? 0;
        }
      }
      const limit = (await import('node:v8')).getHeapStatistics().heap_size_limit;
      console.log(JSON.stringify({ held: store.heldBytes, limit, conversations: store.conversations, evicted }));
    `;
    const child = spawnSync(process.execPath, ['--max-old-space-size=128', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 50_000 });
    expect(child.stderr).not.toMatch(/heap out of memory/);
    expect(child.status).toBe(0);
    const report = JSON.parse(child.stdout) as { held: number; limit: number; conversations: number; evicted: number };
    expect(report.held).toBeLessThanOrEqual(report.limit / 4);
    expect(report.conversations).toBeLessThan(32);
    expect(report.evicted).toBe(32 - report.conversations);
  });
});

describe.runIf(hasCGuests)('a guest that fills every conversation it is called in', () => {
  it('makes the store evict the least recently used conversations, each eviction a state_total_bytes limit hit on /metrics', async () => {
    const registry: ToolRegistry = makeRegistry({ stateLimits: { maxValueBytes: 4096, maxBytesPerConversation: 32 * 1024, maxTotalBytes: 100 * 1024 } });
    const metrics = createMetrics(registry);
    const hits: string[] = [];
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    try {
      // peek reads flood's namespace of each conversation: both are granted its share group.
      await registry.registerWasmTools(fixture('flood'), { grant: { state: { share: 'flood' } } });
      registry.register(defineNativeTool({
        name: 'peek',
        grant: { state: { share: 'flood' } },
        description: 'Says whether the conversation still holds k9.',
        inputSchema: { type: 'object' },
        run: async (_args, ctx) => ({ kept: (await ctx.getState<string | null>('k9', null)) !== null }),
      }));
      // 10 keys of ~3 KB: ~30 KiB a conversation, so three fit in 100 KiB.
      for (let c = 0; c < 8; c++) {
        const result = await registry.execute('state_flood', { count: 10, bytes: 3000, distinct: 0 }, { conversationId: `conv-${c}` });
        expect(result.structuredContent).toEqual({ set: 10 });
      }
      expect(hits.filter((limit) => limit === 'state_total_bytes').length).toBe(5);
      // The newest three conversations are intact; the oldest five start empty again.
      const kept: boolean[] = [];
      for (let c = 0; c < 8; c++) {
        const peek = await registry.execute('peek', {}, { conversationId: `conv-${c}` });
        kept.push((peek.structuredContent as { kept: boolean }).kept);
      }
      expect(kept).toEqual([false, false, false, false, false, true, true, true]);
      const text = await metrics.metrics();
      expect(text).toContain('toolhost_limit_hits_total{tool="state_flood",limit="state_total_bytes"} 5');
    } finally {
      metrics.close();
      await registry.close();
    }
  });
});
