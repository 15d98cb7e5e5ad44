/**
 * One trace across two hosts: two real `toolhost serve --redis` processes on one redis-server, each exporting
 * to the same OTLP receiver (as host-a and host-b). A call runs on A under the caller's trace (gRPC CallStream
 * with `traceparent` metadata); the caller cancels it through B (gRPC Cancel, same trace): B relays the cancel
 * over Redis to A, and A's `fleet.cancel` span continues the trace from B's relay span. Stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../host/index.js';
import { RedisLink } from '../../host/fleet/index.js';
import { cliEnv, cliPath } from '../cli-runner.js';
import { fixture, hasCGuests, root } from '../helpers.js';
import { OtlpReceiver } from '../otlp-receiver.js';
import { hasRedis, RedisServer, until } from '../redis-server.js';

interface ToolFrame { call_id: string; final: boolean; summary: Buffer }
interface ToolError { call_id: string; error_code: string; message: string }
interface ToolServiceClient extends grpc.Client {
  CallStream(request: object, metadata: grpc.Metadata): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: object, metadata: grpc.Metadata, callback: (error: grpc.ServiceError | null, value?: ToolError) => void): void;
}
const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;

class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  grpcAddress = '';
  #grpc: ToolServiceClient | undefined;

  constructor(config: string, redisUrl: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--redis', redisUrl, '--mcp', 'none', '--grpc', '--grpc-port', '0'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  async started(): Promise<void> {
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(this.output) || this.child.exitCode !== null, 60_000, 'toolhost serve to start');
    if (this.child.exitCode !== null) throw new Error(`toolhost serve exited: ${this.output}`);
    this.grpcAddress = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(this.output)![1]!;
  }

  grpc(): ToolServiceClient {
    this.#grpc ??= new ToolService(this.grpcAddress, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    return this.#grpc;
  }

  /** SIGTERM (the host exports what it holds), then wait for the exit. */
  async stop(): Promise<void> {
    this.#grpc?.close();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
}

function otelEnv(endpoint: string, service: string): Record<string, string> {
  const env = Object.fromEntries(Object.entries(cliEnv()).filter(([key]) => !key.startsWith('OTEL_')));
  return { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: service };
}

describe.runIf(hasRedis && hasCGuests)('a traced cancel relayed between two toolhost serve processes', () => {
  const redis = new RedisServer();
  const receiver = new OtlpReceiver();
  let a: ServeProcess;
  let b: ServeProcess;
  let link: RedisLink;

  beforeAll(async () => {
    await Promise.all([redis.start(), receiver.start()]);
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-fleet-otel-'));
    const config = join(dir, 'toolhost.yaml');
    writeFileSync(config, `tools:\n  - path: ${fixture('counter')}\ncluster:\n  redis: redis://127.0.0.1:1\n`);
    a = new ServeProcess(config, redis.url, otelEnv(receiver.url, 'host-a'));
    b = new ServeProcess(config, redis.url, otelEnv(receiver.url, 'host-b'));
    link = new RedisLink({ url: redis.url }, silentLogger);
    link.start();
    await Promise.all([a.started(), b.started(), link.ready()]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await link?.close();
    await redis.stop();
    await receiver.stop();
  });

  it('shows one trace across both hosts: the call on A, the cancel on B, and its relay back to A', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const cancelSpan = randomBytes(8).toString('hex');
    const metadata = (span: string): grpc.Metadata => {
      const m = new grpc.Metadata();
      m.set('traceparent', `00-${traceId}-${span}-01`);
      return m;
    };
    const call = a.grpc().CallStream({ call_id: 'traced-spin', tool_name: 'spin', args: Buffer.from('{}'), stream: true }, metadata(callerSpan));
    const ended = new Promise<void>((resolve, reject) => {
      call.on('data', () => undefined);
      call.on('error', reject);
      call.on('end', resolve);
    });
    await until(async () => (await link.command<number>(['EXISTS', 'toolhost:call:traced-spin'])) === 1, 5000, 'the call to be registered');
    const answer = await new Promise<ToolError>((resolve, reject) => b.grpc().Cancel({ call_id: 'traced-spin' }, metadata(cancelSpan), (error, value) => (error ? reject(error) : resolve(value!))));
    expect(answer.error_code).toBe('CANCELLED');
    await ended;
    await Promise.all([a.stop(), b.stop()]);

    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === traceId && span.name === 'fleet.cancel') && all.some((span) => span.traceId === traceId && span.name === 'sandbox.run'));
    const inTrace = spans.filter((span) => span.traceId === traceId);
    // Both hosts exported spans of the caller's trace.
    expect(new Set(inTrace.map((span) => span.service))).toEqual(new Set(['host-a', 'host-b']));
    const stream = inTrace.find((span) => span.name === 'sw4rm.tool.ToolService/CallStream')!;
    expect(stream).toMatchObject({ service: 'host-a', parentSpanId: callerSpan });
    const cancel = inTrace.find((span) => span.name === 'sw4rm.tool.ToolService/Cancel')!;
    expect(cancel).toMatchObject({ service: 'host-b', parentSpanId: cancelSpan });
    const relay = inTrace.find((span) => span.name === 'fleet.cancel.relay')!;
    expect(relay).toMatchObject({ service: 'host-b', parentSpanId: cancel.spanId, kind: 3 });
    const remote = inTrace.find((span) => span.name === 'fleet.cancel')!;
    expect(remote).toMatchObject({ service: 'host-a', parentSpanId: relay.spanId });
    expect(remote.attributes['toolhost.cancel.outcome']).toBe('CANCELLED');
    // The call ended CANCELLED on A, in the same trace.
    const callSpan = inTrace.find((span) => span.service === 'host-a' && span.name === 'sandbox.run')!;
    expect(callSpan.parentSpanId).toBe(stream.spanId);
    expect(stream.attributes['error.type'] ?? 'CANCELLED').toBe('CANCELLED');
  });
});
