/**
 * A fleet as it is deployed: one real redis-server and two real
 * `toolhost serve --redis` processes (MCP over Streamable HTTP and gRPC, on
 * ephemeral loopback ports). State written through host A is read through
 * host B; a cancel sent to B ends a call running on A (gRPC Cancel, and the
 * `toolhost_cancel` tool over MCP); Redis killed and restarted mid-run; host A
 * killed mid-call leaves its call NOT_FOUND, and unregistered after its lease.
 * Every process is stopped by pid at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../host/index.js';
import { RedisLink } from '../../host/fleet/index.js';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { fixture, hasCGuests, root } from '../helpers.js';
import { hasRedis, RedisServer, until } from '../redis-server.js';

const LEASE_MS = 900;

interface ToolFrame { call_id: string; final: boolean; summary: Buffer }
interface ToolError { call_id: string; error_code: string; message: string }
interface ToolServiceClient extends grpc.Client {
  CallStream(request: object): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: object, callback: (error: grpc.ServiceError | null, value?: ToolError) => void): void;
}
const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;

class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  mcpUrl = '';
  grpcAddress = '';
  #grpc: ToolServiceClient | undefined;
  #mcp: Client | undefined;

  constructor(config: string, redisUrl: string) {
    this.child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--redis', redisUrl, '--mcp', 'http', '--port', '0', '--grpc-port', '0'], {
      cwd: root, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  async started(): Promise<void> {
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(this.output) || this.child.exitCode !== null, 60_000, 'toolhost serve to start');
    if (this.child.exitCode !== null) throw new Error(`toolhost serve exited: ${this.output}`);
    this.mcpUrl = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(this.output)![0];
    this.grpcAddress = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(this.output)![1]!;
  }

  grpc(): ToolServiceClient {
    this.#grpc ??= new ToolService(this.grpcAddress, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    return this.#grpc;
  }

  async mcp(): Promise<Client> {
    if (!this.#mcp) {
      this.#mcp = new Client({ name: 'fleet-test', version: '1.0.0' });
      await this.#mcp.connect(new StreamableHTTPClientTransport(new URL(this.mcpUrl)));
    }
    return this.#mcp;
  }

  cancel(callId: string): Promise<ToolError> {
    return new Promise((resolve, reject) => this.grpc().Cancel({ call_id: callId }, (error, answer) => (error ? reject(error) : resolve(answer!))));
  }

  async stop(): Promise<void> {
    this.#grpc?.close();
    await this.#mcp?.close().catch(() => undefined);
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}

/** A gRPC CallStream of the counter's `spin` (loops until cancelled); resolves with its last frame's summary. */
function spin(host: ServeProcess, callId: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const call = host.grpc().CallStream({ call_id: callId, tool_name: 'spin', args: Buffer.from('{}'), stream: true });
    let last: ToolFrame | undefined;
    call.on('data', (frame: ToolFrame) => (last = frame));
    call.on('error', reject);
    call.on('end', () => resolve(last?.final ? (JSON.parse(last.summary.toString()) as Record<string, unknown>) : {}));
  });
}

describe.runIf(hasRedis && hasCGuests)('two toolhost serve processes on one Redis', () => {
  const redis = new RedisServer();
  let a: ServeProcess;
  let b: ServeProcess;
  let link: RedisLink;
  const registered = async (callId: string): Promise<boolean> => (await link.command<number>(['EXISTS', `toolhost:call:${callId}`])) === 1;

  beforeAll(async () => {
    await redis.start();
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-fleet-'));
    const config = join(dir, 'toolhost.yaml');
    writeFileSync(config, `tools:\n  - path: ${fixture('counter')}\ncluster:\n  redis: redis://127.0.0.1:1\n  lease_ms: ${LEASE_MS}\n`);
    a = new ServeProcess(config, redis.url);
    b = new ServeProcess(config, redis.url);
    link = new RedisLink({ url: redis.url }, silentLogger);
    link.start();
    await Promise.all([a.started(), b.started(), link.ready()]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await link?.close();
    await redis.stop();
  });

  it('a call\'s set-state through A is seen by the next call of the conversation through B', async () => {
    const meta = { 'toolhost/conversationId': 'fleet-conv' };
    const setResult = (await (await a.mcp()).callTool({ name: 'state', arguments: { op: 'set', key: 'greeting', value: '"hello from A"' }, _meta: meta })) as CallToolResult;
    expect(setResult.isError).toBeFalsy();
    const got = (await (await b.mcp()).callTool({ name: 'state', arguments: { op: 'get', key: 'greeting' }, _meta: meta })) as CallToolResult;
    expect(got.structuredContent).toEqual({ value: '"hello from A"' });
  });

  it('gRPC Cancel on B ends a call running on A with CANCELLED', async () => {
    const ended = spin(a, 'grpc-spin-1');
    await until(() => registered('grpc-spin-1'), 5000, 'the call to be registered');
    expect(await b.cancel('grpc-spin-1')).toMatchObject({ error_code: 'CANCELLED' });
    expect(await ended).toMatchObject({ status: 'cancelled' });
    await until(async () => (await b.cancel('grpc-spin-1')).error_code === 'ALREADY_COMPLETED', 3000, 'ALREADY_COMPLETED');
    expect((await b.cancel('never-ran')).error_code).toBe('NOT_FOUND');
  });

  it('toolhost_cancel over MCP on B ends a call running on A (the client chose the call id)', async () => {
    const running = (await a.mcp()).callTool({ name: 'spin', arguments: {}, _meta: { 'toolhost/callId': 'mcp-spin-1' } });
    await until(() => registered('mcp-spin-1'), 5000, 'the call to be registered');
    const answer = (await (await b.mcp()).callTool({ name: 'toolhost_cancel', arguments: { call_id: 'mcp-spin-1' } })) as CallToolResult;
    expect(answer.structuredContent).toEqual({ call_id: 'mcp-spin-1', outcome: 'CANCELLED' });
    const result = (await running) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result._meta?.['toolhost/error']).toMatchObject({ code: 'CANCELLED' });
  });

  it('no sticky sessions: a 1.x MCP client whose requests alternate between A and B keeps its session, and its cancel reaches A through B; a 2026-07-28 client alternates too', async () => {
    const hits = [0, 0];
    /** Calls of `spin` go to A, every other request alternates: its cancel and the ping answers land on B half the time or more. */
    const routed: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      const n = body.includes('"spin"') ? 0 : (hits[0]! + hits[1]!) % 2;
      hits[n]! += 1;
      const url = new URL([a.mcpUrl, b.mcpUrl][n]!);
      return fetch(url, init);
    };
    const client = new Client({ name: 'alternating', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { fetch: routed }));
    try {
      for (let i = 0; i < 4; i += 1) {
        const result = (await client.callTool({ name: 'counter', arguments: {} })) as CallToolResult;
        expect(result.isError).toBeFalsy();
      }
      expect(hits[0]).toBeGreaterThan(2);
      expect(hits[1]).toBeGreaterThan(2);
      const controller = new AbortController();
      const running = client.callTool({ name: 'spin', arguments: {}, _meta: { 'toolhost/callId': 'alternating-spin' } }, undefined, { signal: controller.signal });
      await until(() => registered('alternating-spin'), 5000, 'the call to be registered');
      const before = hits[1]!;
      controller.abort();
      await expect(running).rejects.toThrow();
      // The cancel went to B (or A, by turn); either way the call on A ends.
      await until(async () => !(await registered('alternating-spin')), 5000, 'the call on A to end');
      expect(hits[1]! + hits[0]!).toBeGreaterThan(before);
    } finally {
      await client.close();
    }
    const { Client: ModernClient, StreamableHTTPClientTransport: ModernTransport } = await import('@modelcontextprotocol/client');
    const modern = new ModernClient({ name: 'v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(new ModernTransport(new URL(a.mcpUrl), { fetch: routed }));
    try {
      expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      for (let i = 0; i < 4; i += 1) expect((await modern.callTool({ name: 'counter', arguments: {} })).isError).toBeFalsy();
    } finally {
      await modern.close();
    }
  });

  it('toolhost fleet lists both hosts, their load and running calls', async () => {
    const ended = spin(b, 'listed-1');
    await until(() => registered('listed-1'), 5000, 'the call to be registered');
    // The listing comes from the hosts' heartbeats (every lease / 3).
    let hosts: Array<{ inFlight: number; calls: Array<{ callId: string }>; servers: { grpc: string } }> = [];
    await until(async () => {
      const run = await runCli(['fleet', '--redis', redis.url, '--json']);
      hosts = (JSON.parse(run.stdout) as { hosts: typeof hosts }).hosts;
      return hosts.some((host) => host.calls.some((call) => call.callId === 'listed-1'));
    }, 10_000, 'the fleet view to show the call');
    expect(hosts.map((host) => host.servers.grpc).sort()).toEqual([a.grpcAddress, b.grpcAddress].sort());
    await a.cancel('listed-1');
    await ended;
  });

  it('keeps serving while Redis is killed, reports it in /healthz, and reconnects when it is back', async () => {
    const health = async (): Promise<{ fleet?: { store: string } }> => (await fetch(a.mcpUrl.replace(/\/mcp$/, '/healthz'))).json() as Promise<{ fleet?: { store: string } }>;
    expect((await health()).fleet?.store).toBe('up');
    const metrics = async (): Promise<string> => (await fetch(a.mcpUrl.replace(/\/mcp$/, '/metrics'))).text();
    expect(await metrics()).toMatch(/^toolhost_fleet_store_up 1$/m);
    await redis.stop();
    await until(async () => (await health()).fleet?.store === 'down', 5000, '/healthz to say down');
    expect(await metrics()).toMatch(/^toolhost_fleet_store_up 0$/m);
    const client = await a.mcp();
    const local = (await client.callTool({ name: 'counter', arguments: {} })) as CallToolResult;
    expect(local.isError).toBeFalsy();
    const meta = { 'toolhost/conversationId': 'during-outage' };
    const write = (await client.callTool({ name: 'state', arguments: { op: 'set', key: 'k', value: '"v"' }, _meta: meta })) as CallToolResult;
    expect(write.isError).toBe(true);
    // A guest's set-state answers a string (the WIT's result<_, string>): the host's FLEET_UNAVAILABLE message.
    expect(JSON.stringify(write.content)).toContain('Redis is unreachable');
    await redis.start();
    await until(async () => (await health()).fleet?.store === 'up', 10_000, '/healthz to say up again');
    // B reads best effort: until its own link is back it answers from nothing, so wait for it too.
    await until(async () => ((await (await fetch(b.mcpUrl.replace(/\/mcp$/, '/healthz'))).json()) as { fleet?: { store: string } }).fleet?.store === 'up', 10_000, 'B\'s /healthz to say up again');
    await until(() => link.up, 5000, 'the test\'s own link');
    const again = (await client.callTool({ name: 'state', arguments: { op: 'set', key: 'k', value: '"v2"' }, _meta: meta })) as CallToolResult;
    expect(again.isError).toBeFalsy();
    const read = (await (await b.mcp()).callTool({ name: 'state', arguments: { op: 'get', key: 'k' }, _meta: meta })) as CallToolResult;
    expect(read.structuredContent).toEqual({ value: '"v2"' });
  });

  it('host A killed mid-call: its call is NOT_FOUND from B, and unregistered after the lease', async () => {
    const ended = spin(a, 'orphan-1').catch(() => 'gone');
    await until(() => registered('orphan-1'), 5000, 'the call to be registered');
    a.child.kill('SIGKILL');
    await ended;
    const killedAt = Date.now();
    expect((await b.cancel('orphan-1')).error_code).toBe('NOT_FOUND');
    await until(async () => !(await registered('orphan-1')), LEASE_MS * 3, 'the lease to run out');
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 3);
    expect((await b.cancel('orphan-1')).error_code).toBe('NOT_FOUND');
  });
});
