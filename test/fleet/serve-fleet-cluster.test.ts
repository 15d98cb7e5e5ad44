/**
 * A fleet on a Redis Cluster as it is deployed (issue 40): six real Debian
 * redis-server processes (three masters, three replicas, made by `redis-cli
 * --cluster create`) and two real `toolhost serve` processes, A from
 * `cluster.redis_cluster` in its toolhost.yaml, B from `--redis-cluster` over a
 * config that names a single Redis. State written through A in 50
 * conversations is read through B; a long call on A is cancelled through B; a
 * master is SIGKILLed mid-load, and afterwards every acknowledged state write
 * is still there, every call issued meanwhile ended with a terminal answer
 * within its wall budget (a state write: success, or FLEET_UNAVAILABLE), and
 * new calls, cancels and state writes succeed on both hosts. Every process is
 * stopped by its pid.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../host/index.js';
import { ClusterRedisLink } from '../../host/fleet/index.js';
import { runCli } from '../cli-runner.js';
import { fixture, hasCGuests } from '../helpers.js';
import { hasRedisCluster, RedisCluster, until } from '../redis-cluster.js';
import { ServeProcess, type CallOutcome } from './serve-process.js';

const LEASE_MS = 900;
const WALL_MS = 30_000;

describe.runIf(hasRedisCluster && hasCGuests)('two toolhost serve processes on a 6-node Redis Cluster', () => {
  const cluster = new RedisCluster();
  let a: ServeProcess;
  let b: ServeProcess;
  let link: ClusterRedisLink;
  const registered = async (callId: string): Promise<boolean> => Number(await link.command(['EXISTS', `toolhost:call:${callId}`]).catch(() => 0)) === 1;

  beforeAll(async () => {
    await cluster.start();
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-fleet-cluster-'));
    const tools = `tools:\n  - path: ${fixture('counter')}\nhost:\n  defaults: { wall_ms: ${WALL_MS} }\n`;
    const fromFile = join(dir, 'cluster.yaml');
    writeFileSync(fromFile, `${tools}cluster:\n  redis_cluster:\n    nodes: [${cluster.urls.slice(0, 2).join(', ')}]\n  lease_ms: ${LEASE_MS}\n`);
    const overridden = join(dir, 'single.yaml');
    writeFileSync(overridden, `${tools}cluster:\n  redis: redis://127.0.0.1:1\n  lease_ms: ${LEASE_MS}\n`);
    a = new ServeProcess(['--config', fromFile]);
    b = new ServeProcess(['--config', overridden, '--redis-cluster', cluster.urls.slice(3).join(',')]);
    link = new ClusterRedisLink({ nodes: cluster.urls }, silentLogger);
    link.start();
    await Promise.all([a.started(), b.started(), link.ready(10_000)]);
    expect(a.output).toContain('on the Redis Cluster');
    expect(b.output).toContain('on the Redis Cluster');
  });
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await link?.close();
    await cluster.stop();
  });

  it('state written through A in 50 conversations reads back through B, the conversations spread over the three masters', async () => {
    for (let i = 0; i < 50; i += 1) {
      expect(await a.call('state', { op: 'set', key: 'greeting', value: JSON.stringify(`hello ${i} from A`) }, { conversation: `cluster-conv-${i}` })).toMatchObject({ ok: true });
    }
    for (let i = 0; i < 50; i += 1) {
      expect(await b.call('state', { op: 'get', key: 'greeting' }, { conversation: `cluster-conv-${i}` })).toEqual({ ok: true, data: { value: JSON.stringify(`hello ${i} from A`) } });
    }
    const holding = cluster.masters().filter((node) => Number(node.cli(['EVAL', "return #redis.call('KEYS', 'toolhost:{st*}state:*')", '0']).trim()) > 0);
    expect(holding.length).toBe(3);
  });

  it('a long call on A is cancelled through B: gRPC Cancel, and toolhost_cancel over MCP', async () => {
    const ended = a.spin('cluster-spin-1');
    await until(() => registered('cluster-spin-1'), 5000, 'the call to be registered');
    expect(await b.cancel('cluster-spin-1')).toMatchObject({ error_code: 'CANCELLED' });
    expect(await ended).toMatchObject({ status: 'cancelled' });
    await until(async () => (await b.cancel('cluster-spin-1')).error_code === 'ALREADY_COMPLETED', 3000, 'ALREADY_COMPLETED');
    expect((await b.cancel('never-ran')).error_code).toBe('NOT_FOUND');

    const running = (await a.mcp()).callTool({ name: 'spin', arguments: {}, _meta: { 'toolhost/callId': 'cluster-mcp-spin' } });
    await until(() => registered('cluster-mcp-spin'), 5000, 'the call to be registered');
    const answer = (await (await b.mcp()).callTool({ name: 'toolhost_cancel', arguments: { call_id: 'cluster-mcp-spin' } })) as CallToolResult;
    expect(answer.structuredContent).toEqual({ call_id: 'cluster-mcp-spin', outcome: 'CANCELLED' });
    expect(((await running) as CallToolResult)._meta?.['toolhost/error']).toMatchObject({ code: 'CANCELLED' });
  });

  it('toolhost fleet --redis-cluster lists both hosts', async () => {
    let hosts: Array<{ servers: { grpc: string } }> = [];
    await until(async () => {
      const run = await runCli(['fleet', '--redis-cluster', cluster.urls.join(','), '--json']);
      hosts = (JSON.parse(run.stdout) as { hosts: typeof hosts }).hosts;
      return hosts.length === 2;
    }, 10_000, 'the fleet view to show both hosts');
    expect(hosts.map((host) => host.servers.grpc).sort()).toEqual([a.grpcAddress, b.grpcAddress].sort());
  });

  it('a master SIGKILLed mid-load: every acknowledged write survives, every call ends in its wall budget, and both hosts serve, cancel and write afterwards', async () => {
    interface Issued { host: 'a' | 'b'; kind: 'set' | 'counter'; conversation: string; key: string; value: string; ms: number; outcome: CallOutcome | { ok: false; code: 'TRANSPORT'; message: string } }
    const issued: Issued[] = [];
    let n = 0;
    let stop = false;
    const worker = async (slot: number): Promise<void> => {
      while (!stop) {
        const i = n++;
        const host = i % 2 === 0 ? a : b;
        const kind = i % 3 === 2 ? 'counter' : 'set';
        const conversation = `failover-${i % 30}`;
        const key = `k${i}`;
        const value = JSON.stringify(`v${i}`);
        const started = Date.now();
        let outcome: Issued['outcome'];
        try {
          outcome = kind === 'set' ? await host.call('state', { op: 'set', key, value }, { conversation, deadlineMs: WALL_MS + 5000 }) : await host.call('counter', {}, { deadlineMs: WALL_MS + 5000 });
        } catch (error) {
          outcome = { ok: false, code: 'TRANSPORT', message: String(error) };
        }
        issued.push({ host: host === a ? 'a' : 'b', kind, conversation, key, value, ms: Date.now() - started, outcome });
        void slot;
      }
    };
    // A 2025-era MCP session whose requests alternate between the hosts (kept in the cluster), used before and after the failover.
    let turn = 0;
    const alternating: typeof fetch = async (input, init) => fetch(new URL([a.mcpUrl, b.mcpUrl][turn++ % 2]!), init);
    const session = new Client({ name: 'alternating', version: '1.0.0' });
    await session.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { fetch: alternating }));
    for (let i = 0; i < 2; i += 1) expect(((await session.callTool({ name: 'counter', arguments: {} })) as CallToolResult).isError).toBeFalsy();
    // A call in flight through the failover, cancelled through the other host afterwards.
    const inflight = a.spin('cluster-inflight');
    await until(() => registered('cluster-inflight'), 5000, 'the in-flight call to be registered');
    const load = Promise.all([0, 1, 2, 3].map(worker));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const victim = cluster.masters()[0]!;
    const killedAt = Date.now();
    await victim.kill();
    // The cluster says ok again once a replica took the slots over (cluster-node-timeout 1 s, then the election).
    await cluster.settled(30_000);
    const failoverMs = Date.now() - killedAt;
    const mark = (what: string): void => void process.stderr.write(`failover test: ${what} at +${Date.now() - killedAt} ms\n`);
    mark(`cluster ok again (${failoverMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    stop = true;
    await load;
    // The call in flight through the failover is still running, and is cancelled through B now that the slots have masters again.
    await until(async () => (await b.cancel('cluster-inflight').catch(() => ({ error_code: 'UNAVAILABLE' }))).error_code === 'CANCELLED', 10_000, 'the cancel through B');
    expect(await inflight).toMatchObject({ status: 'cancelled' });

    // Every call ended with a terminal answer within its wall budget: a success, or a clear FLEET_UNAVAILABLE for a state write.
    expect(issued.length).toBeGreaterThan(20);
    for (const call of issued) {
      expect(call.ms, JSON.stringify(call)).toBeLessThan(WALL_MS);
      if (call.outcome.ok) continue;
      expect(call.kind, JSON.stringify(call)).toBe('set');
      expect(call.outcome.code, JSON.stringify(call)).toBe('TOOL_ERROR');
      expect(call.outcome.message, JSON.stringify(call)).toMatch(/^FLEET_UNAVAILABLE: /);
    }
    const acknowledged = issued.filter((call) => call.kind === 'set' && call.outcome.ok);
    expect(acknowledged.length).toBeGreaterThan(5);
    expect(issued.filter((call) => call.kind === 'counter').every((call) => call.outcome.ok)).toBe(true);

    mark(`load stopped: ${issued.length} calls, ${acknowledged.length} acknowledged writes, ${issued.filter((call) => !call.outcome.ok).length} FLEET_UNAVAILABLE`);
    // The shared MCP session continues on both hosts.
    for (let i = 0; i < 4; i += 1) expect(((await session.callTool({ name: 'counter', arguments: {} })) as CallToolResult).isError).toBeFalsy();
    await session.close();
    // Every acknowledged write is still there, read through either host.
    for (const [i, write] of acknowledged.entries()) {
      const reader = i % 2 === 0 ? b : a;
      let read: CallOutcome = { ok: false };
      await until(async () => {
        read = await reader.call('state', { op: 'get', key: write.key }, { conversation: write.conversation });
        return read.ok && (read.data as { value: unknown }).value !== null;
      }, 10_000, `the acknowledged write ${write.key} to read back`);
      expect(read.data, `${write.key} in ${write.conversation} (failover took ${failoverMs} ms)`).toEqual({ value: write.value });
    }

    mark('acknowledged writes read back; in-flight call cancelled');
    // New calls on both hosts; the killed node comes back as a replica, and state writes in every conversation succeed again.
    for (const host of [a, b]) expect(await host.call('counter', {})).toMatchObject({ ok: true });
    await victim.start();
    await cluster.settled(30_000);
    expect(victim.role()).toBe('slave');
    mark('the killed node is a replica again');
    for (let i = 0; i < 30; i += 1) {
      const host = i % 2 === 0 ? a : b;
      let outcome: CallOutcome = { ok: false };
      await until(async () => (outcome = await host.call('state', { op: 'set', key: 'after', value: `"${i}"` }, { conversation: `failover-${i}` })).ok, 10_000, `a write in failover-${i} after the failover`);
      expect(outcome.ok).toBe(true);
    }
    const after = b.spin('cluster-after');
    await until(() => registered('cluster-after'), 5000, 'the call to be registered');
    expect(await a.cancel('cluster-after')).toMatchObject({ error_code: 'CANCELLED' });
    expect(await after).toMatchObject({ status: 'cancelled' });
    expect(a.alive && b.alive).toBe(true);
  }, 240_000);
});
