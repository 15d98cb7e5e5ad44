/**
 * Both servers cap the TCP connections they hold, in total and per client
 * address (issue 30, "Found" 4: ~20,000 idle sockets exhausted the process's
 * descriptors and honest requests got no answer). A connection past a cap is
 * closed at once and counted (`toolhost_server_refused_total`); an honest
 * client on another address is still served while a hostile one holds its
 * per-client maximum; a connection that never sends a request is closed.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { clientOf } from '../host/servers/connection-gate.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { makeRegistry, root } from './helpers.js';

const HOSTILE = '127.0.0.2';
const HONEST = '127.0.0.3';

/** A raw TCP connection from `localAddress` that sends nothing; resolves once connected. */
function idleSocket(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The HTTP/2 client preface and an empty SETTINGS frame: what a gRPC client sends first. */
export const HTTP2_HELLO = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** A raw TCP connection from `localAddress` that sends `bytes` and then nothing; resolves once they are written. */
async function speakingSocket(port: number, localAddress: string, bytes: Buffer | string): Promise<Socket> {
  const socket = await idleSocket(port, localAddress);
  await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  // Let the server read them (it counts bytes read, not bytes sent).
  await new Promise((resolve) => setTimeout(resolve, 100));
  return socket;
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
    socket.once('error', () => undefined);
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

describe('connection caps', () => {
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

  it('keys clients by address, IPv4-mapped addresses as IPv4 and IPv6 by their /64', () => {
    expect(clientOf('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(clientOf('2001:db8:1:2:aaaa::1')).toBe(clientOf('2001:db8:1:2:bbbb::9'));
    expect(clientOf('2001:db8:1:3::1')).not.toBe(clientOf('2001:db8:1:2::1'));
  });

  it('MCP HTTP: closes a client\'s connection past its cap at once, and still serves another client', async () => {
    registry = makeRegistry();
    metrics = createMetrics(registry);
    http = await startMcpHttpServer(registry, { maxConnectionsPerClient: 20, maxConnections: 100, limitMetrics: metrics.limits });
    for (let i = 0; i < 20; i++) sockets.push(await idleSocket(http.port, HOSTILE));
    const extra = await idleSocket(http.port, HOSTILE);
    sockets.push(extra);
    expect(await closedWithin(extra, 1_000)).toBe(true);
    // The hostile client's 20 are still held, and an honest client is answered.
    expect(await healthz(http.port, HONEST)).toBe(200);
    expect(await metrics.metrics()).toContain('toolhost_server_refused_total{server="mcp",reason="client_connections_full"} 1');
  });

  it('MCP HTTP: closes a connection past the total at once, counted, when every connection has spoken lately', async () => {
    registry = makeRegistry();
    metrics = createMetrics(registry);
    http = await startMcpHttpServer(registry, { maxConnectionsPerClient: 20, maxConnections: 5, limitMetrics: metrics.limits });
    // Each has sent the start of a request: none is silent, none idle for the first-byte timeout (5 s), so none is reaped.
    for (let i = 0; i < 5; i++) sockets.push(await speakingSocket(http.port, `127.0.0.${10 + i}`, 'G'));
    const extra = await idleSocket(http.port, HONEST);
    sockets.push(extra);
    expect(await closedWithin(extra, 1_000)).toBe(true);
    expect(await metrics.metrics()).toContain('toolhost_server_refused_total{server="mcp",reason="connections_full"} 1');
    // Once one closes, there is room again.
    sockets[0]!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await healthz(http.port, HONEST)).toBe(200);
  });

  it('MCP HTTP: closes a connection that sends no request headers within headersTimeoutMs', async () => {
    registry = makeRegistry();
    http = await startMcpHttpServer(registry, { headersTimeoutMs: 300 });
    const idle = await idleSocket(http.port, HOSTILE);
    sockets.push(idle);
    expect(await closedWithin(idle, 3_000)).toBe(true);
  });

  it('gRPC: closes a client\'s connection past its cap at once, and still serves another client', async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' }, run: (args) => args }));
    metrics = createMetrics(registry);
    grpcServer = await startGrpcServer(registry, { port: 0, maxConnectionsPerClient: 20, maxConnections: 100, limitMetrics: metrics.limits });
    for (let i = 0; i < 20; i++) sockets.push(await idleSocket(grpcServer.port, HOSTILE));
    const extra = await idleSocket(grpcServer.port, HOSTILE);
    sockets.push(extra);
    expect(await closedWithin(extra, 1_000)).toBe(true);
    // The honest client (grpc-js connects from 127.0.0.1) is served.
    const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, defaults: true })) as unknown as {
      sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
    };
    const client = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Call(request: Record<string, unknown>, callback: (error: grpc.ServiceError | null, value?: { data: Buffer }) => void): void;
    };
    try {
      const answer = await new Promise<{ data: Buffer }>((resolve, reject) => {
        client.Call({ call_id: 'honest-1', tool_name: 'echo', args: Buffer.from('{"hi":1}') }, (error, value) => (error ? reject(error) : resolve(value!)));
      });
      expect(JSON.parse(answer.data.toString('utf8'))).toEqual({ hi: 1 });
    } finally {
      client.close();
    }
    expect(await metrics.metrics()).toContain('toolhost_server_refused_total{server="grpc",reason="client_connections_full"} 1');
  });

  it('gRPC: closes a connection past the total at once, and one that stays idle past idleTimeoutMs', async () => {
    registry = makeRegistry();
    metrics = createMetrics(registry);
    grpcServer = await startGrpcServer(registry, { port: 0, maxConnections: 3, idleTimeoutMs: 300, limitMetrics: metrics.limits });
    // HTTP/2 connections that opened (preface and SETTINGS) and then call nothing.
    for (let i = 0; i < 3; i++) sockets.push(await speakingSocket(grpcServer.port, `127.0.0.${10 + i}`, HTTP2_HELLO));
    const extra = await idleSocket(grpcServer.port, HONEST);
    sockets.push(extra);
    expect(await closedWithin(extra, 1_000)).toBe(true);
    expect(await metrics.metrics()).toContain('toolhost_server_refused_total{server="grpc",reason="connections_full"} 1');
    // The three with no call open are closed by the idle timeout.
    expect(await Promise.all(sockets.slice(0, 3).map((socket) => closedWithin(socket, 3_000)))).toEqual([true, true, true]);
  });
});
