/**
 * The fleet's structures on a real 6-node Redis Cluster, in process (issue
 * 40): the hardening a single Redis has holds on a cluster too (per-principal
 * state shares, fleet-wide call caps, session caps), whose scripts each keep
 * their keys in one slot; and a state write succeeds only once
 * `wait_replicas` replicas acknowledged it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, ToolhostError } from '../../host/index.js';
import { ClusterRedisLink, RedisCallDirectory, RedisSessionDirectory, RedisStateStore } from '../../host/fleet/index.js';
import { conversationScope } from '../../host/core/principal-scope.js';
import { hasRedisCluster, RedisCluster } from '../redis-cluster.js';

describe.runIf(hasRedisCluster)('the fleet store on a Redis Cluster', () => {
  const cluster = new RedisCluster();
  let a: ClusterRedisLink;
  let b: ClusterRedisLink;

  beforeAll(async () => {
    await cluster.start();
    a = new ClusterRedisLink({ nodes: cluster.urls.slice(0, 1) }, silentLogger);
    b = new ClusterRedisLink({ nodes: cluster.urls.slice(5) }, silentLogger);
    a.start();
    b.start();
    await Promise.all([a.ready(10_000), b.ready(10_000)]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.close(), b?.close()]);
    await cluster.stop();
  });

  it('waits for one replica by default on a cluster with replicas, and a write no replica can acknowledge fails FLEET_UNAVAILABLE', async () => {
    const store = new RedisStateStore(a, { prefix: 'ack:' });
    expect(store.waitReplicas).toBe(1);
    await store.set('conv-ack', 'k', '"v"');
    expect(await new RedisStateStore(b, { prefix: 'ack:' }).get('conv-ack', 'k')).toBe('"v"');
    // Each master has one replica: two can never acknowledge.
    const demanding = new RedisStateStore(a, { prefix: 'ack:', waitReplicas: 2 });
    const refused = await demanding.set('conv-ack', 'k2', '"v2"').then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(ToolhostError);
    expect(refused).toMatchObject({ code: 'FLEET_UNAVAILABLE', details: { reason: 'wait_replicas', acknowledged: 1, required: 2 } });
    // wait_replicas 0: acknowledged by the master alone, as on one Redis.
    await new RedisStateStore(a, { prefix: 'ack:', waitReplicas: 0 }).set('conv-ack', 'k3', '"v3"');
  });

  it('keeps one principal within its share of the state while another principal still writes, across the buckets', async () => {
    // 16 buckets: each holds a 1/16 share of the per-principal cap (here 16 KiB: 1 KiB a bucket).
    const store = new RedisStateStore(a, { prefix: 'shares:', maxBytesPerPrincipal: 16 * 1024 });
    const other = new RedisStateStore(b, { prefix: 'shares:', maxBytesPerPrincipal: 16 * 1024 });
    const value = JSON.stringify('x'.repeat(200));
    let refused: unknown;
    for (let i = 0; i < 400 && refused === undefined; i += 1) {
      refused = await store.set(conversationScope('mallory', `c${i}`), 'k', value).then(() => undefined, (error: unknown) => error);
    }
    expect(refused).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { limit: 'state_total_bytes', principalShare: true } });
    // Mallory holds at most the cap in all (each bucket at most its share).
    expect(await store.totalBytes()).toBeLessThanOrEqual(16 * 1024 + 16 * 1024);
    for (let i = 0; i < 5; i += 1) await other.set(conversationScope('alice', `c${i}`), 'k', value);
    expect(await other.get(conversationScope('alice', 'c0'), 'k')).toBe(value);
  });

  it('keeps every namespace of one conversation in one slot', async () => {
    const store = new RedisStateStore(a, { prefix: 'ns:' });
    const conversation = conversationScope('alice', 'one-conversation');
    await store.set(`${conversation}\u0000component:x`, 'k', '1');
    await store.set(`${conversation}\u0000component:y`, 'k', '2');
    await store.set(conversation, 'k', '3');
    const all = cluster.masters().flatMap((node) => node.cli(['--raw', 'EVAL', "return redis.call('KEYS', 'ns:*')", '0']).split('\n').filter((key) => key !== ''));
    const keySlots = new Set(await Promise.all(all.map((key) => a.command<number>(['CLUSTER', 'KEYSLOT', key], undefined))));
    expect(all.filter((key) => key.includes('state:')).length).toBe(3);
    // The conversation's three hashes and its bucket's sizes, expiry and total.
    expect(keySlots.size).toBe(1);
  });

  it('enforces a fleet-wide tool cap across two hosts, and frees the place when the call leaves', async () => {
    const limits = { perTool: { slow: 1 } };
    const one = new RedisCallDirectory(a, silentLogger, { prefix: 'caps:', limits, hostId: 'one' });
    const two = new RedisCallDirectory(b, silentLogger, { prefix: 'caps:', limits, hostId: 'two' });
    await one.enter({ callId: 'c1', tool: 'slow', tenant: 'alice', principal: 'alice' });
    await expect(two.enter({ callId: 'c2', tool: 'slow', tenant: 'bob', principal: 'bob' })).rejects.toMatchObject({ code: 'OVERLOADED', details: { cap: 'tool' } });
    // The refused call gave back its record: its id is free again.
    expect(await b.command(['EXISTS', 'caps:call:bob c2'])).toBe(0);
    await expect(two.enter({ callId: 'c1', tool: 'other', tenant: 'alice', principal: 'alice' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    one.leave('c1', 'alice');
    await new Promise((resolve) => setTimeout(resolve, 200));
    await two.enter({ callId: 'c2', tool: 'slow', tenant: 'bob', principal: 'bob' });
    two.leave('c2', 'bob');
    await Promise.all([one.close(), two.close()]);
  });

  it('caps one principal\'s MCP sessions across two hosts, and a deleted session frees its place', async () => {
    const one = new RedisSessionDirectory(a, silentLogger, { prefix: 'sess:', maxPerPrincipal: 2 });
    const two = new RedisSessionDirectory(b, silentLogger, { prefix: 'sess:', maxPerPrincipal: 2 });
    expect(await one.create({ id: 's1', principal: 'alice', state: '{}' })).toEqual({ ok: true });
    expect(await two.create({ id: 's2', principal: 'alice', state: '{}' })).toEqual({ ok: true });
    expect(await two.create({ id: 's3', principal: 'alice', state: '{}' })).toMatchObject({ ok: false, reason: 'principal_sessions_full' });
    expect(await one.create({ id: 's4', principal: 'bob', state: '{}' })).toEqual({ ok: true });
    expect(await two.get('s1')).toEqual({ id: 's1', principal: 'alice', state: '{}' });
    await one.delete('s1');
    expect(await two.get('s1')).toBeUndefined();
    expect(await two.create({ id: 's1', principal: 'alice', state: '{}' })).toMatchObject({ ok: false, reason: 'session_exists' });
    expect(await two.create({ id: 's5', principal: 'alice', state: '{}' })).toEqual({ ok: true });
  });
});
