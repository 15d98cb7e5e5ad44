/**
 * Every MCP request a traced server handles is a SERVER span named and attributed per OpenTelemetry's MCP
 * conventions, not only `tools/call`: `initialize`, `ping`, `tools/list`, `prompts/list`, `prompts/get`,
 * `resources/list`, `resources/templates/list`, `resources/read`, `resources/subscribe` / `unsubscribe`,
 * `completion/complete`, `logging/setLevel` on 2025-11-25 sessions, and the 2026-07-28 leg's (`server/discover`
 * included), over Streamable HTTP and stdio, each continuing its `params._meta.traceparent` (else the HTTP
 * header). A failure carries toolhost's code (or the JSON-RPC code) as `error.type`; a surface request's calls
 * hang under its span. No argument value, result or resource URI reaches a span unless
 * `telemetry.record.resource_uris` asks for URIs. Component: test/fixtures/guests/c-v0.2-mcp/mcp_surface.c.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { EmptyResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import type { ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { serveMcpStdio } from '../host/servers/mcp-stdio.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { StreamPairTransport } from './mcp-stdio-pair.js';
import { startTracedMcpHost, type TracedMcpHost } from './traced-mcp-host.js';
import { OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const wasm = fixture('mcp_surface');
const SECRET = `secret-${randomBytes(6).toString('hex')}`;

/** A fresh caller span of one trace: each request is its child, found by its parent span id. */
class Caller {
  readonly traceId = randomBytes(16).toString('hex');
  /** `_meta` continuing a new caller span; the span's id is remembered under `label`. */
  readonly parents = new Map<string, string>();
  meta(label: string): { traceparent: string } {
    const spanId = randomBytes(8).toString('hex');
    this.parents.set(label, spanId);
    return { traceparent: `00-${this.traceId}-${spanId}-01` };
  }
}

/** A 2026-07-28 client transport over the other ends of serveMcpStdio's stdin and stdout. */
class ModernPairTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  readonly #buffer = new ReadBuffer();
  constructor(private readonly input: Readable, private readonly output: Writable) {}
  async start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message; message = this.#buffer.readMessage()) this.onmessage?.(message as Parameters<NonNullable<Transport['onmessage']>>[0]);
    });
  }
  async send(message: unknown): Promise<void> {
    this.output.write(serializeMessage(message as JSONRPCMessage));
  }
  async close(): Promise<void> {
    this.output.end();
    this.onclose?.();
  }
}

function pinned(): Client {
  return new Client({ name: 'trace-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
}

describe.runIf(hasCGuests)('MCP server spans for every request, both eras and both transports', () => {
  const receiver = new OtlpReceiver();
  let tracer: CallTracer;
  let registry: ToolRegistry;
  let server: McpHttpServer;

  /** The server span whose parent is the caller's span `label`. */
  async function spanOf(caller: Caller, label: string): Promise<ReceivedSpan> {
    const parent = caller.parents.get(label)!;
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === caller.traceId && span.parentSpanId === parent && span.kind === 2));
    return spans.find((span) => span.traceId === caller.traceId && span.parentSpanId === parent && span.kind === 2)!;
  }

  let host: TracedMcpHost | undefined;

  beforeAll(async () => {
    host = await startTracedMcpHost(receiver, wasm);
    ({ tracer, registry, server } = host);
  });
  afterAll(async () => {
    await host?.stop();
  });

  it('2025-11-25 over Streamable HTTP: a span per method, named per the conventions and continuing _meta.traceparent (hostile: fails on tools/call-only tracing)', async () => {
    const caller = new Caller();
    const header = caller.meta('initialize');
    const client = new LegacyClient({ name: 'trace-v1', version: '1.0.0' });
    const transport = new LegacyTransport(new URL(server.url), { requestInit: { headers: header } });
    await client.connect(transport);
    try {
      await client.request({ method: 'ping', params: { _meta: caller.meta('ping') } }, EmptyResultSchema);
      await client.listTools({ _meta: caller.meta('tools/list') });
      await client.callTool({ name: 'surface_echo', arguments: { text: SECRET }, _meta: caller.meta('tools/call') });
      await client.listPrompts({ _meta: caller.meta('prompts/list') });
      await client.getPrompt({ name: 'greeting', arguments: { name: SECRET }, _meta: caller.meta('prompts/get') });
      await client.listResources({ _meta: caller.meta('resources/list') });
      await client.listResourceTemplates({ _meta: caller.meta('resources/templates/list') });
      await client.readResource({ uri: `test://items/${SECRET}`, _meta: caller.meta('resources/read') });
      await client.subscribeResource({ uri: 'test://static/text', _meta: caller.meta('resources/subscribe') });
      await client.unsubscribeResource({ uri: 'test://static/text', _meta: caller.meta('resources/unsubscribe') });
      await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: SECRET }, _meta: caller.meta('completion/complete') });
      await client.request({ method: 'logging/setLevel', params: { level: 'info', _meta: caller.meta('logging/setLevel') } }, EmptyResultSchema);
      const sessionId = transport.sessionId!;

      const names: Record<string, string> = {
        initialize: 'initialize', ping: 'ping', 'tools/list': 'tools/list', 'tools/call': 'tools/call surface_echo',
        'prompts/list': 'prompts/list', 'prompts/get': 'prompts/get greeting', 'resources/list': 'resources/list',
        'resources/templates/list': 'resources/templates/list', 'resources/read': 'resources/read',
        'resources/subscribe': 'resources/subscribe', 'resources/unsubscribe': 'resources/unsubscribe',
        'completion/complete': 'completion/complete greeting', 'logging/setLevel': 'logging/setLevel',
      };
      for (const [method, name] of Object.entries(names)) {
        const span = await spanOf(caller, method);
        expect(span.name, method).toBe(name);
        expect(span.attributes, method).toMatchObject({ 'mcp.method.name': method, 'mcp.session.id': sessionId, 'network.transport': 'tcp', 'mcp.protocol.version': '2025-11-25' });
        expect(span.attributes['jsonrpc.request.id'], method).toEqual(expect.any(String));
        expect(span.statusCode, method).not.toBe(2);
      }
      expect((await spanOf(caller, 'prompts/get')).attributes['gen_ai.prompt.name']).toBe('greeting');
      expect((await spanOf(caller, 'completion/complete')).attributes['gen_ai.prompt.name']).toBe('greeting');
      expect((await spanOf(caller, 'tools/call')).attributes['gen_ai.tool.name']).toBe('surface_echo');
      // A surface request's calls hang under its span.
      const get = await spanOf(caller, 'prompts/get');
      await receiver.waitFor((all) => all.some((span) => span.parentSpanId === get.spanId && span.name === 'execute_tool surface:mcp_surface'));
    } finally {
      await client.close();
    }
  });

  it('puts no argument value, result or resource URI in any span by default (hostile)', async () => {
    await tracer.forceFlush();
    expect(receiver.bodies.length).toBeGreaterThan(0);
    for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(SECRET);
    expect(receiver.spans.some((span) => 'mcp.resource.uri' in span.attributes)).toBe(false);
  });

  it('ends a failed request\'s span with toolhost\'s code, else the JSON-RPC code, as error.type', async () => {
    const caller = new Caller();
    const client = new LegacyClient({ name: 'trace-v1-errors', version: '1.0.0' });
    let malformed: number | undefined;
    await client.connect(new LegacyTransport(new URL(server.url)));
    try {
      await expect(client.getPrompt({ name: 'failing', _meta: caller.meta('failing') })).rejects.toMatchObject({ code: -32603 });
      await expect(client.readResource({ uri: 'test://elsewhere', _meta: caller.meta('unknown') })).rejects.toMatchObject({ code: -32002 });
      malformed = await client.request({ method: 'prompts/get', params: { _meta: caller.meta('malformed') } }, EmptyResultSchema).then(() => undefined, (error: { code?: number }) => error.code);
    } finally {
      await client.close();
    }
    expect(malformed).toEqual(expect.any(Number));
    expect(await spanOf(caller, 'failing')).toMatchObject({ name: 'prompts/get failing', statusCode: 2, attributes: { 'error.type': 'TOOL_ERROR', 'rpc.response.status_code': '-32603' } });
    expect(await spanOf(caller, 'unknown')).toMatchObject({ name: 'resources/read', statusCode: 2, attributes: { 'error.type': 'INVALID_INPUT', 'rpc.response.status_code': '-32002' } });
    // No toolhost code (the SDK refused the params): the JSON-RPC code the client got.
    expect(await spanOf(caller, 'malformed')).toMatchObject({ name: 'prompts/get', statusCode: 2, attributes: { 'error.type': String(malformed), 'rpc.response.status_code': String(malformed) } });
  });

  it('a request without any trace context still gets a span: the root of a new trace (control)', async () => {
    const client = new LegacyClient({ name: 'trace-v1-untraced', version: '1.0.0' });
    const transport = new LegacyTransport(new URL(server.url));
    await client.connect(transport);
    try {
      await client.listPrompts();
      const sessionId = transport.sessionId!;
      await tracer.forceFlush();
      const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'prompts/list' && span.attributes['mcp.session.id'] === sessionId));
      const root = spans.find((span) => span.name === 'prompts/list' && span.attributes['mcp.session.id'] === sessionId)!;
      expect(root.parentSpanId).toBe('');
      expect(root.kind).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('cuts a client-chosen name past 256 characters in the span (hostile)', async () => {
    const caller = new Caller();
    const client = new LegacyClient({ name: 'trace-v1-long', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(server.url)));
    try {
      await client.getPrompt({ name: 'p'.repeat(100_000), _meta: caller.meta('long') }).catch(() => undefined);
    } finally {
      await client.close();
    }
    const span = await spanOf(caller, 'long');
    expect(span.name.length).toBeLessThan(300);
    expect(String(span.attributes['gen_ai.prompt.name']).length).toBeLessThan(300);
  });

  it('2026-07-28 over Streamable HTTP: the same spans, server/discover included (hostile: fails on tools/call-only tracing)', async () => {
    const caller = new Caller();
    const client = pinned();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: caller.meta('server/discover') } }));
    try {
      await client.listTools({ _meta: caller.meta('tools/list') });
      await client.listPrompts({ _meta: caller.meta('prompts/list') });
      await client.getPrompt({ name: 'greeting', arguments: { name: SECRET }, _meta: caller.meta('prompts/get') });
      await client.listResourceTemplates({ _meta: caller.meta('resources/templates/list') });
      await client.readResource({ uri: `test://items/${SECRET}`, _meta: caller.meta('resources/read') });
      await client.complete({ ref: { type: 'ref/resource', uri: 'test://items/{id}' }, argument: { name: 'id', value: SECRET }, _meta: caller.meta('completion/complete') });
    } finally {
      await client.close();
    }
    const names: Record<string, string> = {
      'server/discover': 'server/discover', 'tools/list': 'tools/list', 'prompts/list': 'prompts/list', 'prompts/get': 'prompts/get greeting',
      'resources/templates/list': 'resources/templates/list', 'resources/read': 'resources/read', 'completion/complete': 'completion/complete',
    };
    for (const [method, name] of Object.entries(names)) {
      const span = await spanOf(caller, method);
      expect(span.name, method).toBe(name);
      expect(span.attributes, method).toMatchObject({ 'mcp.method.name': method, 'network.transport': 'tcp', 'mcp.protocol.version': '2026-07-28' });
    }
    await tracer.forceFlush();
    for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(SECRET);
  });

  it('over stdio, both eras: network.transport pipe', async () => {
    const legacyCaller = new Caller();
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false });
    const legacy = new LegacyClient({ name: 'trace-stdio-v1', version: '1.0.0' });
    await legacy.connect(new StreamPairTransport(stdout, stdin));
    try {
      await legacy.listResources({ _meta: legacyCaller.meta('resources/list') });
      await legacy.getPrompt({ name: 'greeting', arguments: { name: 'Ada' }, _meta: legacyCaller.meta('prompts/get') });
    } finally {
      await legacy.close();
      await served.close();
    }
    for (const label of ['resources/list', 'prompts/get']) {
      const span = await spanOf(legacyCaller, label);
      expect(span.attributes, label).toMatchObject({ 'mcp.method.name': label, 'network.transport': 'pipe', 'mcp.protocol.version': expect.stringMatching(/^2025-/) as string });
    }

    const modernCaller = new Caller();
    const stdin2 = new PassThrough();
    const stdout2 = new PassThrough();
    const served2 = await serveMcpStdio(registry, { stdin: stdin2, stdout: stdout2, redirectConsole: false });
    const modern = pinned();
    await modern.connect(new ModernPairTransport(stdout2, stdin2));
    try {
      expect(served2.era).toBe('modern');
      await modern.listResources({ _meta: modernCaller.meta('resources/list') });
      await modern.getPrompt({ name: 'greeting', arguments: { name: 'Ada' }, _meta: modernCaller.meta('prompts/get') });
    } finally {
      await modern.close();
      await served2.close();
    }
    for (const label of ['resources/list', 'prompts/get']) {
      const span = await spanOf(modernCaller, label);
      expect(span.attributes, label).toMatchObject({ 'mcp.method.name': label, 'network.transport': 'pipe', 'mcp.protocol.version': '2026-07-28' });
    }
  });
});

describe.runIf(hasCGuests)('telemetry.record.resource_uris', () => {
  it('puts mcp.resource.uri on resources/read when the switch allows it, never in the span name (control)', async () => {
    const receiver = new OtlpReceiver();
    await receiver.start();
    const tracer = await createTracer(telemetrySettings({ record: { resourceUris: true } }, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })!, 'test');
    const registry = makeRegistry({ tracer });
    const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
    const client = new LegacyClient({ name: 'trace-uris', version: '1.0.0' });
    try {
      await registry.registerWasmTools(wasm);
      await client.connect(new LegacyTransport(new URL(server.url)));
      const caller = new Caller();
      await client.readResource({ uri: 'test://items/42', _meta: caller.meta('read') });
      await tracer.forceFlush();
      const spans = await receiver.waitFor((all) => all.some((span) => span.parentSpanId === caller.parents.get('read')));
      const read = spans.find((span) => span.parentSpanId === caller.parents.get('read'))!;
      expect(read).toMatchObject({ name: 'resources/read', attributes: { 'mcp.resource.uri': 'test://items/42' } });
    } finally {
      await client.close();
      await server.close();
      await registry.close();
      await tracer.shutdown();
      await receiver.stop();
    }
  });
});
