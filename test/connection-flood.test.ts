/**
 * Connections fair beyond one address (issue 35, T11): 20 loopback addresses
 * x 256 sockets that never sent a byte held all 4,096 gRPC slots, an honest
 * client got ECONNRESET for the whole hold, and the silent sockets lived
 * 300 s. Now (connection-gate.ts) a connection that has not sent its first
 * bytes (gRPC: the HTTP/2 preface) within `firstByteTimeoutMs` is closed,
 * silent and then idle connections make room when the server is full, and
 * each network (IPv4 /24) has a cap of its own. Small caps keep it quick.
 * Every address under 127.0.0.0/8 is loopback on Linux: the flood binds its
 * sockets to 127.0.0.x and 127.0.1.x with `localAddress`.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { networkOf } from '../host/servers/connection-gate.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { makeRegistry, root } from './helpers.js';

/** What a gRPC client sends first: the HTTP/2 preface and an empty SETTINGS frame. */
const HTTP2_HELLO = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** A raw TCP connection from `localAddress`; resolves once connected (or closed at once by the server). */
function socketFrom(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
    socket.on('error', () => undefined);
  });
}

/** `count` silent sockets from each address of `addresses`. */
async function flood(port: number, addresses: string[], count: number, into: Socket[]): Promise<void> {
  for (const address of addresses) for (let i = 0; i < count; i++) into.push(await socketFrom(port, address));
}

/** Send `bytes` and let the server read them (the gate counts bytes read). */
async function say(socket: Socket, bytes: Buffer | string): Promise<void> {
  await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Whether the server closes `socket` within `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    socket.once('end', done);
    socket.once('close', done);
    socket.resume();
  });
}

function healthz(port: number, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', localAddress, headers: { host: `127.0.0.1:${port}` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('no answer')));
    req.end();
  });
}

const addresses = (prefix: string, from: number, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}.${from + i}`);

/** One honest ToolService Call (grpc-js connects from 127.0.0.1). */
async function honestGrpcCall(address: string): Promise<unknown> {
  const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, defaults: true })) as unknown as {
    sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
  };
  const client = new toolPackage.sw4rm.tool.ToolService(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    Call(request: Record<string, unknown>, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, value?: { data: Buffer }) => void): void;
  };
  try {
    const answer = await new Promise<{ data: Buffer }>((resolve, reject) => {
      client.Call({ call_id: `honest-${Date.now()}`, tool_name: 'echo', args: Buffer.from('{"hi":1}') }, { deadline: Date.now() + 10_000 }, (error, value) => (error ? reject(error) : resolve(value!)));
    });
    return JSON.parse(answer.data.toString('utf8')) as unknown;
  } finally {
    client.close();
  }
}

describe('a flood of connections from many addresses', () => {
  let registry: ToolRegistry | undefined;
  let metrics: HostMetrics | undefined;
  let http: McpHttpServer | undefined;
  let grpcServer: GrpcServerHandle | undefined;
  const sockets: Socket[] = [];

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    metrics?.close();
    await http?.close();
    await grpcServer?.close();
    await registry?.close();
    registry = metrics = http = grpcServer = undefined;
  });

  const echoRegistry = (): ToolRegistry => {
    const made = makeRegistry();
    made.register(defineNativeTool({ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' }, run: (args) => args }));
    return made;
  };

  it('keys networks by their /24 (IPv4) and /48 (IPv6) by default, and by the prefixes configured', () => {
    const defaults = { networkPrefixV4: 24, networkPrefixV6: 48 };
    expect(networkOf('127.0.0.2', defaults)).toBe(networkOf('127.0.0.250', defaults));
    expect(networkOf('127.0.1.2', defaults)).not.toBe(networkOf('127.0.0.2', defaults));
    expect(networkOf('::ffff:10.1.2.3', defaults)).toBe('10.1.2.0/24');
    expect(networkOf('2001:db8:1:2::1', defaults)).toBe(networkOf('2001:db8:1:ffff::1', defaults));
    expect(networkOf('10.1.2.3', { networkPrefixV4: 16, networkPrefixV6: 64 })).toBe('10.1.0.0/16');
  });

  it('gRPC: silent sockets from 8 addresses fill every slot, and an honest client is still answered', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    grpcServer = await startGrpcServer(registry, { port: 0, maxConnections: 24, maxConnectionsPerClient: 4, limitMetrics: metrics.limits });
    // 8 addresses x 4 = 32 silent sockets for 24 slots: the server is full and stays full.
    await flood(grpcServer.port, addresses('127.0.0', 2, 8), 4, sockets);
    expect(await honestGrpcCall(grpcServer.address)).toEqual({ hi: 1 });
    // Room was made by closing silent sockets, oldest first (none of them had sent a byte).
    expect(await metrics.metrics()).toMatch(/toolhost_server_connections_closed_total\{server="grpc",reason="reaped_silent"\} (9|[1-9]\d)/);
    expect(await closedWithin(sockets[0]!, 1_000)).toBe(true);
  });

  it('MCP HTTP: silent sockets from 8 addresses fill every slot, and an MCP client is still answered', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    http = await startMcpHttpServer(registry, { maxConnections: 24, maxConnectionsPerClient: 4, limitMetrics: metrics.limits });
    await flood(http.port, addresses('127.0.0', 2, 8), 4, sockets);
    const client = new Client({ name: 'honest', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('echo');
    } finally {
      await client.close();
    }
    expect(await metrics.metrics()).toMatch(/toolhost_server_connections_closed_total\{server="mcp",reason="reaped_silent"\} [1-9]/);
  });

  it('closes sockets silent past the first-byte deadline (gRPC: a partial preface too), and keeps one that sent its preface', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    grpcServer = await startGrpcServer(registry, { port: 0, firstByteTimeoutMs: 300, limitMetrics: metrics.limits });
    const silent = await socketFrom(grpcServer.port, '127.0.0.2');
    const partial = await socketFrom(grpcServer.port, '127.0.0.3');
    const spoke = await socketFrom(grpcServer.port, '127.0.0.4');
    sockets.push(silent, partial, spoke);
    await say(partial, HTTP2_HELLO.subarray(0, 10));
    await say(spoke, HTTP2_HELLO);
    expect(await Promise.all([closedWithin(silent, 3_000), closedWithin(partial, 3_000)])).toEqual([true, true]);
    expect(await closedWithin(spoke, 1_000)).toBe(false);
    expect(await metrics.metrics()).toContain('toolhost_server_connections_closed_total{server="grpc",reason="first_byte_timeout"} 2');

    http = await startMcpHttpServer(registry, { firstByteTimeoutMs: 300, headersTimeoutMs: 60_000, limitMetrics: metrics.limits });
    const quiet = await socketFrom(http.port, '127.0.0.2');
    sockets.push(quiet);
    expect(await closedWithin(quiet, 3_000)).toBe(true);
    expect(await metrics.metrics()).toContain('toolhost_server_connections_closed_total{server="mcp",reason="first_byte_timeout"} 1');
  });

  it('refuses a /24 past its cap once its connections have spoken, and still serves another /24', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    http = await startMcpHttpServer(registry, { maxConnectionsPerClient: 4, maxConnectionsPerNetwork: 6, limitMetrics: metrics.limits });
    // 127.0.0.2 holds 4, 127.0.0.3 holds 2: the /24 holds its 6, each having sent the start of a request.
    await flood(http.port, ['127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3'], 1, sockets);
    for (const socket of sockets) await say(socket, 'G');
    const beyond = await socketFrom(http.port, '127.0.0.4');
    sockets.push(beyond);
    expect(await closedWithin(beyond, 1_000)).toBe(true);
    expect(await metrics.metrics()).toContain('toolhost_server_refused_total{server="mcp",reason="network_connections_full"} 1');
    expect(await healthz(http.port, '127.0.1.2')).toBe(200);
    // The six that spoke are still held.
    expect(await Promise.all(sockets.slice(0, 6).map((socket) => closedWithin(socket, 200)))).toEqual([false, false, false, false, false, false]);
  });

  it('a silent flood from one /24 holds no more than its cap: its own oldest silent sockets make room', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    grpcServer = await startGrpcServer(registry, { port: 0, maxConnectionsPerClient: 4, maxConnectionsPerNetwork: 6, limitMetrics: metrics.limits });
    await flood(grpcServer.port, addresses('127.0.1', 2, 3), 4, sockets);
    const closed = await Promise.all(sockets.map((socket) => closedWithin(socket, 1_000)));
    expect(closed.filter((was) => !was)).toHaveLength(6);
    expect(closed.slice(0, 6)).toEqual([true, true, true, true, true, true]);
    expect(await metrics.metrics()).toContain('toolhost_server_connections_closed_total{server="grpc",reason="reaped_silent"} 6');
    // Another /24 (the honest client's 127.0.0.1) is not touched by it.
    expect(await honestGrpcCall(grpcServer.address)).toEqual({ hi: 1 });
  });

  it('when full of connections that spoke and then went idle, closes the one idle longest for a new client', async () => {
    registry = echoRegistry();
    metrics = createMetrics(registry);
    http = await startMcpHttpServer(registry, { maxConnections: 3, firstByteTimeoutMs: 300, headersTimeoutMs: 60_000, limitMetrics: metrics.limits });
    for (const address of addresses('127.0.0', 2, 3)) {
      const socket = await socketFrom(http.port, address);
      sockets.push(socket);
      await say(socket, 'G');
    }
    // Past the first-byte deadline the gate has looked at them once; then idle for longer than that.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await healthz(http.port, '127.0.0.9')).toBe(200);
    expect(await closedWithin(sockets[0]!, 1_000)).toBe(true);
    expect(await metrics.metrics()).toMatch(/toolhost_server_connections_closed_total\{server="mcp",reason="reaped_idle"\} [12]/);
  });
});
