/**
 * A 2025-11-25 session's relayed messages continue their caller's trace on the host holding the call: two real
 * `toolhost serve --redis` processes on one redis-server, exporting to one OTLP receiver (as host-a and host-b).
 * The client's `tools/call` requests go to A; its answer to the guest's sampling request, and its cancel of a
 * call, go to B (with the caller's `traceparent` header), which relays them over Redis to A. B's
 * `fleet.mcp.relay` CLIENT span is a child of the caller's span, and A's `fleet.mcp.deliver` SERVER span a child
 * of B's. The sampling answer's text never reaches a span. Stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cliEnv, cliPath } from '../cli-runner.js';
import { fixture, hasCGuests, root } from '../helpers.js';
import { OtlpReceiver, type ReceivedSpan } from '../otlp-receiver.js';
import { hasRedis, RedisServer, until } from '../redis-server.js';

const SECRET = `answer-${randomBytes(6).toString('hex')}`;

class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  mcpUrl = '';

  constructor(config: string, redisUrl: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--redis', redisUrl, '--mcp', 'http', '--port', '0', '--grpc-port', '0'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  async started(): Promise<void> {
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(this.output) || this.child.exitCode !== null, 90_000, 'toolhost serve to start');
    if (this.child.exitCode !== null) throw new Error(`toolhost serve exited: ${this.output}`);
    this.mcpUrl = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(this.output)![0];
  }

  /** SIGTERM (the host exports what it holds), then wait for the exit. */
  async stop(): Promise<void> {
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

describe.runIf(hasRedis && hasCGuests)('a 2025 session\'s relayed answer and cancel, traced across two toolhost serve processes', () => {
  const redis = new RedisServer();
  const receiver = new OtlpReceiver();
  let a: ServeProcess;
  let b: ServeProcess;
  const traceId = randomBytes(16).toString('hex');
  /** The caller's span each kind of relayed message is sent under (the HTTP request's traceparent). */
  const parents = { response: randomBytes(8).toString('hex'), cancel: randomBytes(8).toString('hex') };

  /** tools/call to A; the client's answers and cancels to B, under the caller's spans; the rest to A. */
  const routed: typeof fetch = async (input, init) => {
    const text = typeof init?.body === 'string' ? init.body : '';
    let message: { method?: unknown; result?: unknown; error?: unknown } = {};
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      // a GET: no body
    }
    const kind = message.method === 'notifications/cancelled' ? 'cancel' : message.method === undefined && (message.result !== undefined || message.error !== undefined) ? 'response' : undefined;
    const host = kind === undefined ? a : b;
    const headers = new Headers(init?.headers);
    if (kind !== undefined) headers.set('traceparent', `00-${traceId}-${parents[kind]}-01`);
    const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
    url.port = new URL(host.mcpUrl).port;
    return fetch(url, { ...init, headers });
  };

  beforeAll(async () => {
    await Promise.all([redis.start(), receiver.start()]);
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-fleet-relay-otel-'));
    const config = join(dir, 'toolhost.yaml');
    writeFileSync(config, [
      'tools:',
      `  - path: ${fixture('counter')}`,
      `  - path: ${fixture('mcp_rich')}`,
      '    grant: { sampling: { max_requests: 2, max_tokens: 1000 } }',
      'cluster:',
      '  redis: redis://127.0.0.1:1',
      '',
    ].join('\n'));
    a = new ServeProcess(config, redis.url, otelEnv(receiver.url, 'host-a'));
    b = new ServeProcess(config, redis.url, otelEnv(receiver.url, 'host-b'));
    await Promise.all([a.started(), b.started()]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await redis.stop();
    await receiver.stop();
  });

  it('continues the caller\'s trace on the host holding the call: B relays, A delivers (hostile: fails where relays carried no context)', async () => {
    const client = new Client({ name: 'relay-trace', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: SECRET }, model: 'test-model' }));
    await client.connect(new StreamableHTTPClientTransport(new URL(a.mcpUrl), { fetch: routed }));

    // The guest asks the client's model; the answer lands on B and is relayed to A (control: the round trip works).
    const asked = (await client.callTool({ name: 'ask_model', arguments: { n: 1, max_tokens: 64 } })) as CallToolResult;
    expect(asked.isError).toBeFalsy();
    expect(JSON.stringify(asked.structuredContent)).toContain(SECRET);

    // A long call on A, cancelled through B.
    const controller = new AbortController();
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const pending = client.callTool({ name: 'stream_then_wait', arguments: {} }, undefined, { signal: controller.signal, onprogress: () => running() });
    await started;
    controller.abort();
    await expect(pending).rejects.toThrow();
    // The cancel travels after the client gave up: wait until A delivered it (its batch exports within seconds).
    await receiver.waitFor((all) => all.filter((span) => span.traceId === traceId && span.name === 'fleet.mcp.deliver').length === 2, 60_000);
    await client.close().catch(() => undefined);
    await Promise.all([a.stop(), b.stop()]);

    const spans = await receiver.waitFor((all) => all.filter((span) => span.traceId === traceId && span.name.startsWith('fleet.mcp.')).length === 4);
    const inTrace = spans.filter((span) => span.traceId === traceId);
    for (const kind of ['response', 'cancel'] as const) {
      const relay = inTrace.find((span) => span.name === 'fleet.mcp.relay' && span.attributes['toolhost.relay.kind'] === kind) as ReceivedSpan;
      expect(relay, kind).toMatchObject({ service: 'host-b', kind: 3, parentSpanId: parents[kind] });
      const deliver = inTrace.find((span) => span.name === 'fleet.mcp.deliver' && span.attributes['toolhost.relay.kind'] === kind) as ReceivedSpan;
      expect(deliver, kind).toMatchObject({ service: 'host-a', kind: 2, parentSpanId: relay.spanId });
      expect(deliver.attributes['mcp.session.id'], kind).toBe(relay.attributes['mcp.session.id']);
      expect(deliver.attributes['jsonrpc.request.id'], kind).toEqual(expect.any(String));
    }
    for (const body of receiver.bodies) expect(body.includes(SECRET)).toBe(false);
  });
});
