/**
 * Where a traced call's context goes out, and where it does not: a guest's own outgoing HTTP and an HTTP tool's
 * request carry `traceparent` only when the grant (`propagateTrace`) or the tool (`propagate_trace`) says so
 * (a destination is a third party by default), and a call to an imported MCP server carries it in `_meta`, so
 * the remote host's `tools/call` server span continues the caller's trace under the importing host's client span.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpStreamingTool, type ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { importMcpServer, type McpImport } from '../host/tools/mcp-import.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';
import { OtlpReceiver } from './otlp-receiver.js';

function caller(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

describe.runIf(hasCGuests)('a traced call\'s context on its way out', () => {
  const receiver = new OtlpReceiver();
  let tracer: CallTracer;
  let destination: Server;
  let port = 0;
  const seen: IncomingHttpHeaders[] = [];
  const registries: ToolRegistry[] = [];

  /** A traced registry with the `net` example (http_get) and an HTTP tool, both allowed to reach the destination. */
  async function traced(propagate: boolean): Promise<ToolRegistry> {
    const registry = makeRegistry({ tracer });
    registries.push(registry);
    const grant = { network: 'EGRESS_RESTRICTED' as const, egressAllow: [`127.0.0.1:${port}`], ...(propagate ? { propagateTrace: true } : {}) };
    await registry.registerWasmTools(example('net'), { grant });
    registry.register(createHttpStreamingTool({ name: 'post_it', description: 'posts', url: `http://127.0.0.1:${port}/tool`, grant, ...(propagate ? { propagateTrace: true } : {}) }));
    return registry;
  }

  beforeAll(async () => {
    await receiver.start();
    tracer = await createTracer(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })!, 'test');
    destination = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
    });
    await new Promise<void>((resolve) => destination.listen(0, '127.0.0.1', resolve));
    port = (destination.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await Promise.allSettled(registries.map((registry) => registry.close()));
    await tracer?.shutdown();
    destination?.close();
    await receiver.stop();
  });

  it('keeps the trace context from a guest\'s and an HTTP tool\'s destinations by default (hostile)', async () => {
    const registry = await traced(false);
    const parent = caller();
    seen.length = 0;
    const guest = await registry.execute('http_get', { url: `http://127.0.0.1:${port}/guest` }, { trace: { traceparent: parent.traceparent, tracestate: 'vendor=secret' }, policy: { network_policy: 'EGRESS_RESTRICTED' } });
    expect(guest.isError).toBeFalsy();
    const tool = await registry.execute('post_it', { q: 1 }, { trace: { traceparent: parent.traceparent }, policy: { network_policy: 'EGRESS_RESTRICTED' } });
    expect(tool.isError).toBeFalsy();
    expect(seen).toHaveLength(2);
    for (const headers of seen) {
      expect(headers.traceparent).toBeUndefined();
      expect(headers.tracestate).toBeUndefined();
      expect(headers.baggage).toBeUndefined();
    }
    // The guest's request is still traced on the host: its span says where it went and what the egress checker decided.
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === parent.traceId && span.name === 'http.client'));
    const http = spans.find((span) => span.traceId === parent.traceId && span.name === 'http.client')!;
    expect(http.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'server.port': port, 'toolhost.egress.decision': 'allowed', 'http.response.status_code': 200 });
    expect(JSON.stringify(http.attributes)).not.toContain('/guest');
  });

  it('sends it when the grant and the tool say propagate_trace (control)', async () => {
    const registry = await traced(true);
    const parent = caller();
    seen.length = 0;
    await registry.execute('http_get', { url: `http://127.0.0.1:${port}/guest` }, { trace: { traceparent: parent.traceparent }, policy: { network_policy: 'EGRESS_RESTRICTED' } });
    await registry.execute('post_it', { q: 1 }, { trace: { traceparent: parent.traceparent }, policy: { network_policy: 'EGRESS_RESTRICTED' } });
    expect(seen).toHaveLength(2);
    for (const headers of seen) expect(headers.traceparent).toMatch(new RegExp(`^00-${parent.traceId}-[0-9a-f]{16}-01$`));
  });

  describe('an imported MCP server', () => {
    let remote: ToolRegistry;
    let server: McpHttpServer;
    let imported: McpImport;
    let importer: ToolRegistry;

    beforeAll(async () => {
      remote = makeRegistry({ tracer });
      registries.push(remote);
      await remote.registerWasmTools(example('ctools'));
      server = await startMcpHttpServer(remote, { port: 0 });
      importer = makeRegistry({ tracer });
      registries.push(importer);
      imported = await importMcpServer(importer, { name: 'remote', url: server.url });
    });
    afterAll(async () => {
      await imported?.close();
      await server?.close();
    });

    it('gets the caller\'s trace in _meta: its tools/call span is a child of the importer\'s client span', async () => {
      const parent = caller();
      const result = await importer.execute('remote.echo', { text: 'hi' }, { trace: { traceparent: parent.traceparent } });
      expect(result.isError).toBeFalsy();
      await tracer.forceFlush();
      const spans = await receiver.waitFor((all) => all.filter((span) => span.traceId === parent.traceId && span.name === 'tools/call echo').length === 2);
      const client = spans.find((span) => span.traceId === parent.traceId && span.name === 'tools/call echo' && span.kind === 3)!;
      const served = spans.find((span) => span.traceId === parent.traceId && span.name === 'tools/call echo' && span.kind === 2)!;
      expect(served.parentSpanId).toBe(client.spanId);
      const call = spans.find((span) => span.spanId === client.parentSpanId)!;
      expect(call).toMatchObject({ name: 'execute_tool remote.echo', parentSpanId: parent.spanId });
    });
  });
});
