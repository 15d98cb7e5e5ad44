/**
 * The fleet's Redis state can cap what one principal holds
 * (`cluster.state.max_bytes_per_principal`; issue 36, M7 on the fleet's side):
 * the Redis store does not evict, so without it one principal filling the
 * fleet's total locked every other principal out of writing until its
 * conversations expired (a day by default).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../host/index.js';
import { conversationScope } from '../host/core/principal-scope.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { RedisServer, hasRedis } from './redis-server.js';

describe.runIf(hasRedis)('a per-principal cap on the fleet\'s state', () => {
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
    const opened = openFleet({ redis: redis.url, keyPrefix: prefix, commandTimeoutMs: 2_000, state }, silentLogger);
    fleets.push(opened);
    await opened.link.ready();
    return opened;
  };
  const value = (bytes: number): string => `"${'x'.repeat(bytes - 2)}"`;

  it('refuses one principal\'s writes past its cap while another principal\'s still go through', async () => {
    const { stateStore } = await fleet('cap:', { maxTotalBytes: 100_000, maxBytesPerPrincipal: 40_000 });
    let refused: unknown;
    for (let c = 0; c < 100 && refused === undefined; c++) {
      await stateStore.set(conversationScope('alice', `a-${c}`), 'k', value(5_000)).catch((error: unknown) => {
        refused = error;
      });
    }
    expect(refused).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { limit: 'state_total_bytes', principalShare: true, max: 40_000 } });
    // Bob writes, and reads back; Alice's deletes give her room again.
    await stateStore.set(conversationScope('bob', 'diary'), 'note', value(5_000));
    expect(await stateStore.get(conversationScope('bob', 'diary'), 'note')).toBe(value(5_000));
    await stateStore.delete(conversationScope('alice', 'a-0'), 'k');
    await stateStore.set(conversationScope('alice', 'again'), 'k', value(5_000));
    expect(await stateStore.totalBytes()).toBeLessThanOrEqual(100_000);
  });

  it('without the cap lets one principal fill the fleet\'s total (the default, as before)', async () => {
    const { stateStore } = await fleet('nocap:', { maxTotalBytes: 50_000 });
    let written = 0;
    for (let c = 0; c < 20; c++) {
      try {
        await stateStore.set(conversationScope('alice', `a-${c}`), 'k', value(5_000));
        written += 1;
      } catch {
        break;
      }
    }
    expect(written).toBeGreaterThanOrEqual(8);
    await expect(stateStore.set(conversationScope('bob', 'diary'), 'note', value(5_000))).rejects.toMatchObject({ details: { limit: 'state_total_bytes' } });
  });

  it.runIf(hasCGuests)('keeps a principal\'s guest within the cap through the registry, the other principal\'s guest unaffected', async () => {
    const { stateStore } = await fleet('guests:', { maxValueBytes: 65_536, maxBytesPerConversation: 100_000, maxTotalBytes: 250_000, maxBytesPerPrincipal: 100_000 });
    const registry = makeRegistry({ stateStore });
    try {
      await registry.registerWasmTools(fixture('flood'));
      for (let c = 0; c < 3; c++) {
        await registry.execute('state_flood', { count: 1000, bytes: 10_000, distinct: 0 }, { conversationId: `a-${c}`, principal: 'alice' });
      }
      const alice = await registry.execute('state_flood', { count: 1, bytes: 10_000, distinct: 0 }, { conversationId: 'a-9', principal: 'alice' });
      expect(alice.structuredContent).toEqual({ set: 0, refused: expect.stringMatching(/\(state_total_bytes\)$/) });
      const bob = await registry.execute('state_flood', { count: 5, bytes: 10_000, distinct: 0 }, { conversationId: 'diary', principal: 'bob' });
      expect(bob.structuredContent).toEqual({ set: 5 });
    } finally {
      await registry.close();
    }
  });
});
