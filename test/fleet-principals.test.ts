/**
 * Principals everywhere in the fleet (issue 30, "Found" 5 and 7): two hosts in
 * one process on one real redis-server, each with a gRPC server holding the
 * same named tokens. Hostile clients try to cancel another principal's call
 * through the other host, to learn whether another's id exists, to squat
 * another's call id, to escape their tenant cap with a fresh agent name (or
 * fill another's by naming it), and to reach another's conversation by naming
 * its scoped key without a principal; a malformed host record in Redis must
 * not hide the fleet from readFleet (and from `toolhost fleet`, in a process of
 * its own: test/e2e/fleet-cli.test.ts).
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, silentLogger, ToolRegistry, type ToolEvent } from '../host/index.js';
import { registerFleetTools } from '../host/tools/fleet-tools.js';
import { openFleet, readFleet, type Fleet } from '../host/fleet/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { root } from './helpers.js';
import { hasRedis, RedisServer, until } from './redis-server.js';

const PREFIX = 'prin:';
const TOKENS = [{ principal: 'alice', token: 'alice-token' }, { principal: 'bob', token: 'bob-token' }, { principal: 'mallory', token: 'mallory-token' }];

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  CallStream(request: Record<string, unknown>, metadata: grpc.Metadata): grpc.ClientReadableStream<{ final: boolean; summary: Buffer }>;
  Cancel(request: Record<string, unknown>, metadata: grpc.Metadata, callback: Callback<{ error_code: string }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};
const bearer = (token: string): grpc.Metadata => {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return metadata;
};

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

interface TestHost {
  fleet: Fleet;
  registry: ToolRegistry;
  server: GrpcServerHandle;
  client: ToolServiceClient;
}

async function openHost(redis: string): Promise<TestHost> {
  const fleet = openFleet({ redis, keyPrefix: PREFIX, commandTimeoutMs: 500, leaseMs: 2000, limits: { perTenant: { '*': 1 } }, state: { ttlSeconds: 60 } }, silentLogger);
  const registry = new ToolRegistry({ logger: silentLogger, stateStore: fleet.stateStore, fleet: fleet.directory, cancelGraceMs: 100 });
  registry.register(waiter);
  registry.register(stateTool);
  registerFleetTools(registry);
  const server = await startGrpcServer(registry, { port: 0, tokens: TOKENS, shutdownTimeoutMs: 200 });
  const client = new toolPackage.sw4rm.tool.ToolService(server.address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  return { fleet, registry, server, client };
}

async function terminal(events: AsyncIterable<ToolEvent>): Promise<ToolEvent> {
  let last: ToolEvent | undefined;
  for await (const event of events) last = event;
  return last!;
}

describe.runIf(hasRedis)('principals across a fleet', () => {
  const redis = new RedisServer();
  let a: TestHost;
  let b: TestHost;
  /** Whether a call of this id is registered fleet-wide (under whatever key the host files it). */
  const registered = async (callId: string): Promise<boolean> => (await a.fleet.link.command<string[]>(['KEYS', `${PREFIX}call:*${callId}`])).length > 0;
  const grpcCancel = (host: TestHost, callId: string, token: string): Promise<string> => new Promise((resolve, reject) => {
    host.client.Cancel({ call_id: callId }, bearer(token), (error, value) => (error ? reject(error) : resolve(value!.error_code)));
  });
  /** A gRPC CallStream of `wait` as `token`'s principal; resolves with the final frame's summary. */
  const grpcWait = (host: TestHost, callId: string, token: string): Promise<Record<string, unknown>> => new Promise((resolve, reject) => {
    const call = host.client.CallStream({ call_id: callId, tool_name: 'wait', args: Buffer.from('{}'), stream: true }, bearer(token));
    let last: { final: boolean; summary: Buffer } | undefined;
    call.on('data', (frame: { final: boolean; summary: Buffer }) => (last = frame));
    call.on('error', reject);
    call.on('end', () => resolve(last?.final ? (JSON.parse(last.summary.toString()) as Record<string, unknown>) : {}));
  });

  beforeAll(async () => {
    await redis.start();
    [a, b] = await Promise.all([openHost(redis.url), openHost(redis.url)]);
    await Promise.all([a.fleet.link.ready(), b.fleet.link.ready()]);
  });
  afterAll(async () => {
    for (const host of [a, b]) {
      host?.client.close();
      await host?.server.close();
      await host?.registry.close();
      await host?.fleet.close();
    }
    await redis.stop();
  });

  it('gRPC Cancel on B does not reach another principal\'s call on A, and answers NOT_FOUND while it runs and after it ends', async () => {
    const ended = grpcWait(a, 'victim-1', 'alice-token');
    await until(() => registered('victim-1'), 3000, 'Alice\'s call to be registered');
    expect(await grpcCancel(b, 'victim-1', 'mallory-token')).toBe('NOT_FOUND');
    // Still running on A: Mallory's cancel reached nothing.
    expect(a.registry.callState('victim-1', 'alice')).toBe('in_flight');
    expect(await grpcCancel(b, 'victim-1', 'alice-token')).toBe('CANCELLED');
    expect(await ended).toMatchObject({ status: 'cancelled' });
    await until(async () => (await grpcCancel(b, 'victim-1', 'alice-token')) === 'ALREADY_COMPLETED', 3000, 'Alice to see her call done');
    // Whether another principal's id ever existed is not told.
    expect(await grpcCancel(b, 'victim-1', 'mallory-token')).toBe('NOT_FOUND');
    expect(await grpcCancel(a, 'victim-1', 'mallory-token')).toBe('NOT_FOUND');
  });

  it('keeps call ids per principal: another principal\'s id in flight on either host can be neither squatted nor cancelled', async () => {
    const alices = a.registry.stream('wait', {}, { callId: 'squat-1', principal: 'alice' });
    const alicesEnd = terminal(alices);
    await until(() => registered('squat-1'), 3000, 'Alice\'s call to be registered');
    // Bob's call of the same id runs, on the other host and on Alice's host alike.
    const onB = b.registry.stream('wait', { ms: 1 }, { callId: 'squat-1', principal: 'bob' });
    expect(await terminal(onB)).toMatchObject({ type: 'result' });
    const onA = a.registry.stream('wait', { ms: 1 }, { callId: 'squat-1', principal: 'bob' });
    expect(await terminal(onA)).toMatchObject({ type: 'result' });
    // Neither Bob's cancel nor a caller without a principal reaches Alice's call, on either host.
    expect(await b.registry.cancelAnywhere('squat-1', 'bob')).toBe('ALREADY_COMPLETED');
    expect(await b.registry.cancelAnywhere('squat-1')).toBe('NOT_FOUND');
    expect(a.registry.cancel('squat-1')).toBe('NOT_FOUND');
    // Nor naming her key itself (not a call id: it holds a space), through the MCP cancel tool.
    await expect(b.registry.execute('toolhost_cancel', { call_id: 'alice squat-1' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await b.registry.cancelAnywhere('alice squat-1')).toBe('NOT_FOUND');
    expect(a.registry.callState('squat-1', 'alice')).toBe('in_flight');
    expect(await b.registry.cancelAnywhere('squat-1', 'alice')).toBe('CANCELLED');
    expect(await alicesEnd).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it('counts a tenant cap against the principal: a fresh agent name escapes nothing, and naming another tenant fills nothing of it', async () => {
    // perTenant `*`: 1. Mallory holds one call, naming herself "bob" as agent.
    const mallorys = a.registry.stream('wait', {}, { callId: 'cap-m', principal: 'mallory', agentName: 'bob' });
    const mallorysEnd = terminal(mallorys);
    await until(() => registered('cap-m'), 3000, 'Mallory\'s call to be registered');
    // A second call of Mallory's under a fresh agent name, through the other host: her cap is full.
    const evading = await terminal(b.registry.stream('wait', { ms: 1 }, { principal: 'mallory', agentName: `fresh-${Date.now()}` }));
    expect(evading).toMatchObject({ type: 'error', code: 'OVERLOADED', stage: 'rejected', details: { cap: 'tenant', tenant: 'mallory' } });
    // Bob's own call, agent "bob", runs: Mallory's naming did not take his slot.
    expect(await terminal(b.registry.stream('wait', { ms: 1 }, { principal: 'bob', agentName: 'bob' }))).toMatchObject({ type: 'result' });
    expect(a.registry.cancel('cap-m', 'mallory')).toBe('CANCELLED');
    await mallorysEnd;
  });

  it('gives a finished call\'s places back before its terminal: with a tenant cap of 1, calls alternating between hosts never meet a full cap', async () => {
    for (let round = 0; round < 20; round += 1) {
      const host = round % 2 === 0 ? a : b;
      expect(await terminal(host.registry.stream('wait', { ms: 0 }, { principal: 'carol' }))).toMatchObject({ type: 'result' });
    }
  });

  it('gives the places back before the terminal even when Redis is slow to take them (hostile: a give-back sent without waiting loses this race)', async () => {
    // A's writes reach Redis 150 ms late, as on a loaded host or network: its call's end must still find the places free.
    const link = a.fleet.link;
    const batch = link.batch.bind(link);
    link.batch = async (commands) => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      return batch(commands);
    };
    try {
      expect(await terminal(a.registry.stream('wait', { ms: 0 }, { principal: 'dave' }))).toMatchObject({ type: 'result' });
      expect(await terminal(b.registry.stream('wait', { ms: 0 }, { principal: 'dave' }))).toMatchObject({ type: 'result' });
    } finally {
      link.batch = batch;
    }
  });

  it('never lets a caller without a principal name a principal\'s conversation key', async () => {
    expect((await a.registry.execute('state', { op: 'set', key: 'secret', value: 'alice-only' }, { conversationId: 'diary', principal: 'alice' })).isError).toBeFalsy();
    expect((await b.registry.execute('state', { op: 'get', key: 'secret' }, { conversationId: 'diary', principal: 'alice' })).structuredContent).toEqual({ value: 'alice-only' });
    // The scoped form of Alice's conversation, named without a principal (as an MCP stdio client could in _meta).
    const forged = '\u0000principal:alice\u0000diary';
    const read = b.registry.execute('state', { op: 'get', key: 'secret' }, { conversationId: forged });
    await expect(read).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'conversation_id' } });
    // A principal cannot reach another's by it either.
    await expect(b.registry.execute('state', { op: 'get', key: 'secret' }, { conversationId: forged, principal: 'mallory' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    // Unauthenticated conversations keep their own space.
    await b.registry.execute('state', { op: 'set', key: 'secret', value: 'anyone' }, { conversationId: 'diary' });
    expect((await a.registry.execute('state', { op: 'get', key: 'secret' }, { conversationId: 'diary', principal: 'alice' })).structuredContent).toEqual({ value: 'alice-only' });
  });

  it('skips a malformed host record, says so, and still shows the other hosts (readFleet and `toolhost fleet`)', async () => {
    await until(async () => (await readFleet(a.fleet.link, PREFIX)).length === 2, 3000, 'both hosts\' records');
    const far = String(Date.now() + 60_000);
    await a.fleet.link.transaction([
      ['SET', `${PREFIX}host:garbage`, '{not json', 'PX', '60000'],
      ['ZADD', `${PREFIX}hosts`, far, 'garbage'],
      ['SET', `${PREFIX}host:wrong-shape`, JSON.stringify({ hostId: 'wrong-shape', pid: 1, hostname: 'h', startedAt: 'x', heartbeatAt: 'x', inFlight: 1, calls: 'none' }), 'PX', '60000'],
      ['ZADD', `${PREFIX}hosts`, far, 'wrong-shape'],
    ]);
    try {
      const skipped: string[] = [];
      const hosts = await readFleet(a.fleet.link, PREFIX, (hostId, problem) => skipped.push(`${hostId}: ${problem}`));
      expect(hosts.map((host) => host.hostId).sort()).toEqual([a.fleet.directory.hostId, b.fleet.directory.hostId].sort());
      expect(skipped.sort()).toEqual([expect.stringMatching(/^garbage: not JSON/), 'wrong-shape: calls is not an array']);
    } finally {
      await a.fleet.link.transaction([['DEL', `${PREFIX}host:garbage`, `${PREFIX}host:wrong-shape`], ['ZREM', `${PREFIX}hosts`, 'garbage', 'wrong-shape']]);
    }
  });

});
