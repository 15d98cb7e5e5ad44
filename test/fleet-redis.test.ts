/**
 * Two hosts in one process against one real redis-server: shared conversation
 * state, cancel from the other host, fleet-wide caps, a dead host's lease, and
 * Redis going away and coming back. (The same through real `toolhost serve`
 * processes is in test/fleet/, `npm run test:fleet`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, silentLogger, ToolRegistry, type ToolEvent } from '../host/index.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { hasRedis, RedisServer, until } from './redis-server.js';

interface TestHost {
  fleet: Fleet;
  registry: ToolRegistry;
}

/** Waits until cancelled (cooperatively), or `ms`. */
const waiter = defineNativeTool({
  name: 'wait',
  description: 'waits until cancelled',
  inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
  async run(args, ctx) {
    const ms = (args as { ms?: number }).ms ?? 30_000;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    if (ctx.signal.aborted) throw ctx.signal.reason;
    return { waited: ms };
  },
});

const stateTool = defineNativeTool({
  name: 'state',
  description: 'get or set a state key',
  inputSchema: { type: 'object', properties: { op: { enum: ['get', 'set'] }, key: { type: 'string' }, value: {} }, required: ['op', 'key'] },
  async run(args, ctx) {
    const { op, key, value } = args as { op: 'get' | 'set'; key: string; value?: unknown };
    if (op === 'set') {
      await ctx.setState(key, value);
      return { ok: true };
    }
    return { value: await ctx.getState(key, null) };
  },
});

function openHost(redis: string, options: { leaseMs?: number; limits?: Parameters<typeof openFleet>[0]['limits'] } = {}): TestHost {
  const fleet = openFleet({ redis, keyPrefix: 'test:', commandTimeoutMs: 500, ...options, state: { ttlSeconds: 60, maxValueBytes: 1024 } }, silentLogger);
  const registry = new ToolRegistry({ logger: silentLogger, stateStore: fleet.stateStore, fleet: fleet.directory, cancelGraceMs: 100 });
  registry.register(waiter);
  registry.register(stateTool);
  return { fleet, registry };
}

async function terminal(events: AsyncIterable<ToolEvent>): Promise<ToolEvent> {
  let last: ToolEvent | undefined;
  for await (const event of events) last = event;
  return last!;
}

describe.runIf(hasRedis)('two hosts on one Redis', () => {
  const redis = new RedisServer();
  let a: TestHost;
  let b: TestHost;

  beforeAll(async () => {
    await redis.start();
    a = openHost(redis.url, { leaseMs: 600, limits: { perTool: { wait: 2 }, perTenant: { capped: 1 } } });
    b = openHost(redis.url, { leaseMs: 600, limits: { perTool: { wait: 2 }, perTenant: { capped: 1 } } });
    await Promise.all([a.fleet.link.ready(), b.fleet.link.ready()]);
  });
  afterAll(async () => {
    for (const host of [a, b]) {
      await host?.registry.close();
      await host?.fleet.close();
    }
    await redis.stop();
  });

  it('share conversation state: set through A is read through B, and only in that conversation', async () => {
    await a.registry.execute('state', { op: 'set', key: 'k', value: { n: 1 } }, { conversationId: 'conv-1' });
    expect((await b.registry.execute('state', { op: 'get', key: 'k' }, { conversationId: 'conv-1' })).structuredContent).toEqual({ value: { n: 1 } });
    expect((await b.registry.execute('state', { op: 'get', key: 'k' }, { conversationId: 'conv-2' })).structuredContent).toEqual({ value: null });
    const ttl = await a.fleet.link.command<number>(['PTTL', 'test:state:conv-1']);
    expect(ttl).toBeGreaterThan(50_000);
  });

  it('refuse a state value past the fleet\'s size limit with INVALID_INPUT', async () => {
    const result = await a.registry.execute('state', { op: 'set', key: 'big', value: 'x'.repeat(2000) }, { conversationId: 'conv-1' });
    expect(result.isError).toBe(true);
    expect(result.error?.code).toBe('INVALID_INPUT');
  });

  it('cancel from B a call running on A: CANCELLED, then ALREADY_COMPLETED; an unknown id is NOT_FOUND', async () => {
    const stream = a.registry.stream('wait', {}, { callId: 'fleet-call-1' });
    const ended = terminal(stream);
    await until(async () => (await a.fleet.link.command<number>(['EXISTS', 'test:call:fleet-call-1'])) === 1, 2000, 'the call to be registered');
    expect(await b.registry.cancelAnywhere('fleet-call-1')).toBe('CANCELLED');
    expect(await ended).toMatchObject({ type: 'error', code: 'CANCELLED' });
    await until(async () => (await b.registry.cancelAnywhere('fleet-call-1')) === 'ALREADY_COMPLETED', 2000, 'the call to be known as done');
    expect(await b.registry.cancelAnywhere('no-such-call')).toBe('NOT_FOUND');
  });

  it('cancel from B reaches only the canceller\'s own calls on A: another principal\'s call is NOT_FOUND and keeps running', async () => {
    const stream = a.registry.stream('wait', {}, { callId: 'fleet-owned-1', principal: 'alice' });
    const ended = terminal(stream);
    await until(async () => (await a.fleet.link.command<number>(['EXISTS', 'test:call:alice fleet-owned-1'])) === 1, 2000, 'the call to be registered');
    expect(await b.registry.cancelAnywhere('fleet-owned-1', 'mallory')).toBe('NOT_FOUND');
    expect(a.registry.callState('fleet-owned-1', 'alice')).toBe('in_flight');
    expect(await b.registry.cancelAnywhere('fleet-owned-1', 'alice')).toBe('CANCELLED');
    expect(await ended).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it('enforce per-tool and per-tenant caps across hosts with OVERLOADED', async () => {
    // The tenant is the principal (an agent name chooses nothing).
    const first = a.registry.stream('wait', {}, { callId: 'cap-1', principal: 'capped' });
    await until(async () => (await a.fleet.link.command<number>(['EXISTS', 'test:call:capped cap-1'])) === 1, 2000, 'the first call');
    const refused = await terminal(b.registry.stream('wait', { ms: 1 }, { principal: 'capped', agentName: 'another-name' }));
    expect(refused).toMatchObject({ type: 'error', code: 'OVERLOADED', stage: 'rejected' });
    const second = b.registry.stream('wait', {}, { callId: 'cap-2' });
    await until(async () => (await a.fleet.link.command<number>(['EXISTS', 'test:call:cap-2'])) === 1, 2000, 'the second call');
    expect(await terminal(a.registry.stream('wait', { ms: 1 }))).toMatchObject({ type: 'error', code: 'OVERLOADED' });
    expect(await a.registry.cancelAnywhere('cap-2')).toBe('CANCELLED');
    a.registry.cancel('cap-1', 'capped');
    await Promise.all([terminal(first), terminal(second)]);
    expect(await terminal(b.registry.stream('wait', { ms: 1 }))).toMatchObject({ type: 'result' });
  });

  it('forget a dead host\'s calls after its lease: NOT_FOUND, and their slots free', async () => {
    const c = openHost(redis.url, { leaseMs: 600, limits: { perTool: { wait: 2 } } });
    await c.fleet.link.ready();
    const stream = c.registry.stream('wait', {}, { callId: 'orphan-1' });
    await until(async () => (await c.fleet.link.command<number>(['EXISTS', 'test:call:orphan-1'])) === 1, 2000, 'the call to be registered');
    // The host "dies": it stops renewing and stops listening, without unregistering anything.
    await c.fleet.link.close();
    // Nobody listens for it any more: NOT_FOUND at once; after the lease it is not registered at all.
    expect(await b.registry.cancelAnywhere('orphan-1')).toBe('NOT_FOUND');
    await until(async () => (await b.fleet.link.command<number>(['EXISTS', 'test:call:orphan-1'])) === 0, 3000, 'the lease to run out');
    expect(await b.fleet.link.command<number>(['ZSCORE', 'test:slots:tool:wait', 'orphan-1'])).not.toBeNull();
    // Its slot is freed by the next admission that looks at the tool's slots.
    expect(await terminal(b.registry.stream('wait', { ms: 1 }))).toMatchObject({ type: 'result' });
    expect(await b.fleet.link.command<number>(['ZSCORE', 'test:slots:tool:wait', 'orphan-1'])).toBeNull();
    c.registry.cancel('orphan-1');
    await terminal(stream);
    await c.registry.close();
    await c.fleet.close();
  });

  it('keep serving local calls while Redis is down, fail shared writes with FLEET_UNAVAILABLE, and reconnect', async () => {
    await redis.stop();
    await until(() => !a.fleet.link.up, 3000, 'A to notice');
    expect(a.registry.fleetStatus()?.store).toBe('down');
    expect((await a.registry.execute('wait', { ms: 1 })).structuredContent).toEqual({ waited: 1 });
    expect((await a.registry.execute('state', { op: 'get', key: 'k' }, { conversationId: 'conv-1' })).structuredContent).toEqual({ value: null });
    const write = await a.registry.execute('state', { op: 'set', key: 'k', value: 2 }, { conversationId: 'conv-1' });
    expect(write.error?.code).toBe('FLEET_UNAVAILABLE');
    await expect(a.registry.cancelAnywhere('elsewhere')).rejects.toMatchObject({ code: 'FLEET_UNAVAILABLE' });

    await redis.start();
    await until(() => a.fleet.link.up && b.fleet.link.up, 5000, 'both hosts to reconnect');
    await a.registry.execute('state', { op: 'set', key: 'k', value: 3 }, { conversationId: 'conv-1' });
    expect((await b.registry.execute('state', { op: 'get', key: 'k' }, { conversationId: 'conv-1' })).structuredContent).toEqual({ value: 3 });
    // Cancel across hosts works again (the subscriptions came back).
    const stream = b.registry.stream('wait', {}, { callId: 'after-restart' });
    await until(async () => (await a.fleet.link.command<number>(['EXISTS', 'test:call:after-restart'])) === 1, 2000, 'the call to be registered');
    expect(await a.registry.cancelAnywhere('after-restart')).toBe('CANCELLED');
    expect(await terminal(stream)).toMatchObject({ code: 'CANCELLED' });
  });
});
