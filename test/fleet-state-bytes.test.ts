/**
 * The fleet's Redis state is capped in bytes, per conversation and in total
 * (issue 30, "Found" 4: one hostile call added ~250 MiB to Redis). The sizes
 * are kept in Redis by the write scripts themselves, so hosts writing at once
 * never miscount; conversations whose TTL ran out stop counting; a write past
 * a cap is refused with the host's state-limit error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../host/index.js';
import { resolveCluster } from '../host/config/resolve.js';
import { configValidator } from '../host/config/schema.js';
import { STATE_CONVERSATION_OVERHEAD_BYTES, STATE_ENTRY_OVERHEAD_BYTES } from '../host/core/state.js';
import { RedisStateStore, openFleet, type Fleet } from '../host/fleet/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { RedisServer, hasRedis } from './redis-server.js';

const open = (redis: string, prefix: string, state: Parameters<typeof openFleet>[0]['state']): Fleet =>
  openFleet({ redis, keyPrefix: prefix, commandTimeoutMs: 2_000, state }, silentLogger);

describe.runIf(hasRedis)('byte caps of the fleet\'s state', () => {
  const redis = new RedisServer();
  const fleets: Fleet[] = [];

  beforeAll(async () => {
    await redis.start();
  });
  afterAll(async () => {
    for (const fleet of fleets) await fleet.close();
    await redis.stop();
  });

  const fleet = async (prefix: string, state: Parameters<typeof openFleet>[0]['state']): Promise<Fleet> => {
    const opened = open(redis.url, prefix, state);
    fleets.push(opened);
    await opened.link.ready();
    return opened;
  };

  it.runIf(hasCGuests)('refuses a guest\'s writes past the conversation\'s bytes and past the fleet\'s total, with the state-limit error', async () => {
    const { stateStore } = await fleet('guest:', { maxValueBytes: 65_536, maxBytesPerConversation: 100_000, maxTotalBytes: 250_000 });
    const registry = makeRegistry({ stateStore });
    const hits: string[] = [];
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    try {
      await registry.registerWasmTools(fixture('flood'));
      // ~10 KB a value: nine fit in a conversation of 100,000 bytes.
      const first = await registry.execute('state_flood', { count: 1000, bytes: 10_000, distinct: 0 }, { conversationId: 'c1' });
      expect(first.structuredContent).toEqual({ set: 9, refused: expect.stringMatching(/^OUTPUT_LIMIT_EXCEEDED: .*\(state_bytes_per_conversation\)$/) });
      const second = await registry.execute('state_flood', { count: 1000, bytes: 10_000, distinct: 0 }, { conversationId: 'c2' });
      expect(second.structuredContent).toMatchObject({ set: 9 });
      // The third conversation reaches the fleet's total first.
      const third = await registry.execute('state_flood', { count: 1000, bytes: 10_000, distinct: 0 }, { conversationId: 'c3' });
      expect(third.structuredContent).toEqual({ set: expect.any(Number), refused: expect.stringMatching(/\(state_total_bytes\)$/) });
      expect((third.structuredContent as { set: number }).set).toBeLessThan(9);
      expect(await stateStore.totalBytes()).toBeLessThanOrEqual(250_000);
      expect(hits).toEqual(['state_bytes_per_conversation', 'state_bytes_per_conversation', 'state_total_bytes']);
    } finally {
      await registry.close();
    }
  });

  it('refuses the store\'s own writes with OUTPUT_LIMIT_EXCEEDED details, and a delete gives the bytes back', async () => {
    const { stateStore } = await fleet('direct:', { maxBytesPerConversation: 1_000, maxTotalBytes: 1_000_000 });
    await stateStore.set('c', 'a', `"${'x'.repeat(600)}"`);
    await expect(stateStore.set('c', 'b', `"${'x'.repeat(600)}"`)).rejects.toMatchObject({
      code: 'OUTPUT_LIMIT_EXCEEDED',
      details: { reason: 'state', limit: 'state_bytes_per_conversation', max: 1_000 },
    });
    // Overwriting a key counts only the difference.
    await stateStore.set('c', 'a', `"${'y'.repeat(900)}"`);
    await stateStore.delete('c', 'a');
    await stateStore.set('c', 'b', `"${'x'.repeat(900)}"`);
    await stateStore.delete('c', 'b');
    expect(await stateStore.totalBytes()).toBe(0);
  });

  it('counts exactly while two hosts write at once', async () => {
    const a = await fleet('race:', { maxTotalBytes: 10_000_000 });
    const b = await fleet('race:', { maxTotalBytes: 10_000_000 });
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 200; i++) {
      const store = i % 2 === 0 ? a.stateStore : b.stateStore;
      writes.push(store.set(`conv-${i % 7}`, `k${i % 13}`, JSON.stringify('v'.repeat(i))));
    }
    await Promise.all(writes);
    // What the hashes hold, with the documented overheads.
    let expected = 0;
    for (let c = 0; c < 7; c++) {
      const keys = await a.link.command<string[]>(['HKEYS', `race:state:conv-${c}`]);
      const values = await a.link.command<string[]>(['HVALS', `race:state:conv-${c}`]);
      if (keys.length === 0) continue;
      expected += STATE_CONVERSATION_OVERHEAD_BYTES + `conv-${c}`.length;
      for (const text of [...keys, ...values]) expected += Buffer.byteLength(String(text));
      expected += keys.length * STATE_ENTRY_OVERHEAD_BYTES;
    }
    expect(await a.stateStore.totalBytes()).toBe(expected);
  });

  it('stops counting a conversation once its TTL ran out, so the fleet is not full for good', async () => {
    const { stateStore } = await fleet('ttl:', { ttlSeconds: 1, maxTotalBytes: 2_000 });
    await stateStore.set('old', 'k', `"${'x'.repeat(1_500)}"`);
    await expect(stateStore.set('new', 'k', `"${'x'.repeat(1_000)}"`)).rejects.toMatchObject({ details: { limit: 'state_total_bytes' } });
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await stateStore.set('new', 'k', `"${'x'.repeat(1_000)}"`);
    expect(await stateStore.get('old', 'k')).toBeUndefined();
    expect(await stateStore.totalBytes()).toBe(1_002 + 1 + STATE_ENTRY_OVERHEAD_BYTES + STATE_CONVERSATION_OVERHEAD_BYTES + 'new'.length);
  });

  it('takes its caps from cluster.state in toolhost.yaml', () => {
    expect(resolveCluster({ redis: redis.url, state: { max_bytes_per_conversation: 5_000, max_total_bytes: 6_000 } }).state).toEqual({ maxBytesPerConversation: 5_000, maxTotalBytes: 6_000 });
    expect(configValidator()({ cluster: { redis: redis.url, state: { max_bytes_per_conversation: 5_000, max_total_bytes: 6_000 } } })).toBe(true);
  });

  it('refuses caps that are not positive integers, naming the option', () => {
    const link = fleets[0]!.link;
    expect(() => new RedisStateStore(link, { maxTotalBytes: 0 })).toThrow('options.maxTotalBytes must be a positive integer');
    expect(() => new RedisStateStore(link, { maxBytesPerConversation: -1 })).toThrow('options.maxBytesPerConversation must be a positive integer');
  });
});
