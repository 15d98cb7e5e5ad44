/**
 * `toolhost serve` with only OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans (OTLP/HTTP protobuf, the
 * default) to a receiver in the test: an MCP `tools/call` with `_meta.traceparent` (2025-11-25 over Streamable
 * HTTP, 2026-07-28 over Streamable HTTP, 2025-11-25 over stdio) produces a `tools/call echo` SERVER span whose
 * parent is the caller's span, with a `sandbox.run` child; a gRPC Call with `traceparent` metadata continues
 * its trace; no argument value appears in any span. Processes are stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath } from './cli-runner.js';
import { example, hasCGuests, root } from './helpers.js';
import { OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
import { until } from './redis-server.js';

const SECRET = `argument-value-${randomBytes(6).toString('hex')}`;

interface ToolFrame { call_id: string; final: boolean; data: Buffer }
interface ToolServiceClient extends grpc.Client {
  Call(request: object, metadata: grpc.Metadata, callback: (error: grpc.ServiceError | null, value?: ToolFrame) => void): void;
}
const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;

/** The CLI's test environment with no OTEL_* of the machine's, and only the endpoint. */
function otelEnv(endpoint: string): Record<string, string> {
  const env = Object.fromEntries(Object.entries(cliEnv()).filter(([key]) => !key.startsWith('OTEL_')));
  return { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint };
}

function caller(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The caller's `tools/call echo` server span and its `sandbox.run` child, checked. */
function expectServerSpan(spans: ReceivedSpan[], parent: { traceId: string; spanId: string }, version: string, transport: string): void {
  const server = spans.find((span) => span.traceId === parent.traceId && span.name === 'tools/call echo');
  expect(server, `a tools/call echo span in trace ${parent.traceId}`).toBeDefined();
  expect(server).toMatchObject({ parentSpanId: parent.spanId, kind: 2, service: 'toolhost', encoding: 'protobuf' });
  expect(server!.attributes).toMatchObject({
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'echo',
    'mcp.protocol.version': version,
    'network.transport': transport,
  });
  expect(server!.attributes['jsonrpc.request.id']).toEqual(expect.any(String));
  const run = spans.find((span) => span.traceId === parent.traceId && span.name === 'sandbox.run');
  expect(run?.parentSpanId).toBe(server!.spanId);
  expect(run!.attributes['toolhost.sandbox.containment']).toBe('process');
}

describe.runIf(hasCGuests)('toolhost serve with only OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  const receiver = new OtlpReceiver();
  let config = '';
  let child: ChildProcess;
  let output = '';

  beforeAll(async () => {
    await receiver.start();
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-otel-'));
    config = join(dir, 'toolhost.yaml');
    writeFileSync(config, `tools:\n  - path: ${example('ctools')}\n`);
    child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--mcp', 'http', '--port', '0', '--grpc-port', '0'], { cwd: root, env: otelEnv(receiver.url), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(output) || child.exitCode !== null, 60_000, 'toolhost serve to start');
    if (child.exitCode !== null) throw new Error(`toolhost serve exited: ${output}`);
  });
  afterAll(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await receiver.stop();
  });

  it('exports MCP (both protocol versions) and gRPC spans that continue the callers\' traces, without argument values', async () => {
    const mcpUrl = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(output)![0];
    const grpcAddress = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(output)![1]!;

    const legacyParent = caller();
    const legacy = new LegacyClient({ name: 'otel-test', version: '1.0.0' });
    await legacy.connect(new LegacyTransport(new URL(mcpUrl)));
    const legacyResult = await legacy.callTool({ name: 'echo', arguments: { text: SECRET }, _meta: { traceparent: legacyParent.traceparent, tracestate: 'vendor=1' } });
    expect(legacyResult.isError).toBeFalsy();
    await legacy.close();

    const modernParent = caller();
    const modern = new Client({ name: 'otel-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const modernResult = await modern.callTool({ name: 'echo', arguments: { text: SECRET }, _meta: { traceparent: modernParent.traceparent } });
    expect(modernResult.isError).toBeFalsy();
    await modern.close();

    const grpcParent = caller();
    const client = new ToolService(grpcAddress, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', grpcParent.traceparent);
    const frame = await new Promise<ToolFrame>((resolve, reject) => client.Call({ tool_name: 'echo', content_type: 'application/json', args: Buffer.from(JSON.stringify({ text: SECRET })) }, metadata, (error, value) => (error ? reject(error) : resolve(value!))));
    expect(frame.final).toBe(true);
    client.close();

    // A shutdown exports what the batch processor holds.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    const spans = await receiver.waitFor((all) => [legacyParent, modernParent, grpcParent].every((parent) => all.some((span) => span.traceId === parent.traceId && span.name === 'sandbox.run')));

    expectServerSpan(spans, legacyParent, '2025-11-25', 'tcp');
    expectServerSpan(spans, modernParent, '2026-07-28', 'tcp');
    const rpc = spans.find((span) => span.traceId === grpcParent.traceId && span.name === 'sw4rm.tool.ToolService/Call');
    expect(rpc).toMatchObject({ parentSpanId: grpcParent.spanId, kind: 2 });
    expect(rpc!.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'sw4rm.tool.ToolService', 'rpc.method': 'Call', 'rpc.grpc.status_code': 0 });
    const grpcRun = spans.find((span) => span.traceId === grpcParent.traceId && span.name === 'sandbox.run');
    expect(grpcRun?.parentSpanId).toBe(rpc!.spanId);

    for (const body of receiver.bodies) expect(body.includes(SECRET)).toBe(false);
  });

  it('traces MCP over stdio the same way (network.transport pipe)', async () => {
    const parent = caller();
    const transport = new StdioClientTransport({ command: process.execPath, args: [cliPath, 'serve', '--config', config, '--mcp', 'stdio'], cwd: root, env: otelEnv(receiver.url), stderr: 'pipe' });
    const client = new LegacyClient({ name: 'otel-stdio', version: '1.0.0' });
    await client.connect(transport);
    const result = await client.callTool({ name: 'echo', arguments: { text: SECRET }, _meta: { traceparent: parent.traceparent } });
    expect(result.isError).toBeFalsy();
    // stdin closed: the server drains, closes the host and exports.
    await client.close();
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === parent.traceId && span.name === 'sandbox.run'));
    const server = spans.find((span) => span.traceId === parent.traceId && span.name === 'tools/call echo');
    expect(server).toMatchObject({ parentSpanId: parent.spanId, kind: 2 });
    expect(server!.attributes).toMatchObject({ 'network.transport': 'pipe', 'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) as string });
    for (const body of receiver.bodies) expect(body.includes(SECRET)).toBe(false);
  });
});
