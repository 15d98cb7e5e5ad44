/**
 * A 2026-07-28 retry relayed across a fleet is one trace (host/servers/mcp-resume-relay.ts): two
 * traced MCP HTTP hosts share a real redis-server and export to one OTLP receiver; a call parks on
 * host A, its retry (carrying the client's traceparent) lands on host B and is relayed to A. The
 * retry's `tools/call` server span on B, B's CLIENT span `fleet.mcp.resume.relay` and A's SERVER span
 * `fleet.mcp.resume` share the caller's trace, each the parent of the next; the client's answer
 * appears in no exported byte.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, type ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { OtlpReceiver } from './otlp-receiver.js';
import { hasRedis, RedisServer } from './redis-server.js';

const TOKENS = [{ principal: 'alice', token: 'alice-token-0123456789' }];
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
};

interface TracedHost {
  registry: ToolRegistry;
  tracer: CallTracer;
  fleet: Fleet;
  server: McpHttpServer;
}

describe.runIf(hasRedis && hasCGuests)('a relayed 2026-07-28 retry, traced', () => {
  const redis = new RedisServer();
  const receiver = new OtlpReceiver();
  const hosts: TracedHost[] = [];
  const prefix = `mcpresumetrace${process.pid}:`;

  beforeAll(async () => {
    await redis.start();
    await receiver.start();
    for (const name of ['host-a', 'host-b']) {
      const tracer = await createTracer(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: name })!, 'test');
      const registry = makeRegistry({ tracer, defaults: { wallMs: 60_000 } });
      await registry.registerWasmTools(fixture('mcp_rich'), { grant: { elicitation: { maxRequests: 2 } } });
      const fleet = openFleet({ redis: redis.url, keyPrefix: prefix }, silentLogger);
      await fleet.link.ready();
      const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, tokens: TOKENS, sessionDirectory: fleet.sessions, fleetRelay: { link: fleet.link, prefix: fleet.prefix } });
      hosts.push({ registry, tracer, fleet, server });
    }
  });
  afterAll(async () => {
    for (const host of hosts) {
      await host.server.close();
      await host.fleet.close();
      await host.registry.close();
      await host.tracer.shutdown();
    }
    await receiver.stop();
    await redis.stop();
  });

  const call = async (host: TracedHost, params: Record<string, unknown>, traceparent: string): Promise<Record<string, unknown>> => {
    const response = await fetch(host.server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ask_user', authorization: `Bearer ${TOKENS[0]!.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_user', arguments: {}, ...params, _meta: { ...META, traceparent } } }),
    });
    const text = await response.text();
    const line = text.split('\n').reverse().find((entry) => entry.startsWith('data: '));
    return (JSON.parse(line === undefined ? text : line.slice(6)) as { result: Record<string, unknown> }).result;
  };

  it('continues the retry\'s trace from the host it landed on to the host holding the call', async () => {
    const first = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const parked = await call(hosts[0]!, {}, first);
    expect(parked.resultType).toBe('input_required');
    const key = Object.keys(parked.inputRequests as object)[0]!;
    const secret = `answer-${randomBytes(6).toString('hex')}`;
    const retryTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const answered = await call(hosts[1]!, { inputResponses: { [key]: { action: 'accept', content: { name: secret } } }, requestState: parked.requestState }, `00-${retryTrace}-${callerSpan}-01`);
    expect(answered.structuredContent).toEqual({ action: 'accept', content: { name: secret } });

    await Promise.all(hosts.map((host) => host.tracer.forceFlush()));
    const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'fleet.mcp.resume' && span.traceId === retryTrace));
    const inTrace = spans.filter((span) => span.traceId === retryTrace);
    const server = inTrace.find((span) => span.parentSpanId === callerSpan && span.kind === 2);
    expect(server?.service).toBe('host-b');
    const relay = inTrace.find((span) => span.name === 'fleet.mcp.resume.relay');
    expect(relay).toMatchObject({ kind: 3, service: 'host-b', parentSpanId: server!.spanId });
    const resumed = inTrace.find((span) => span.name === 'fleet.mcp.resume');
    expect(resumed).toMatchObject({ kind: 2, service: 'host-a', parentSpanId: relay!.spanId });
    expect(resumed!.statusCode).not.toBe(2);
    // How much each side carried (the call's result, and no further question), never what.
    expect(relay!.attributes).toMatchObject({ 'toolhost.fleet.events': expect.any(Number), 'toolhost.mcp.input_required': false });
    expect(relay!.attributes['toolhost.fleet.events']).toBeGreaterThanOrEqual(1);
    expect(resumed!.attributes).toMatchObject({ 'toolhost.fleet.events': relay!.attributes['toolhost.fleet.events'], 'toolhost.mcp.input_required': false });
    // The answer went through both hosts and Redis, and into no span.
    for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(secret);
  });

  it('marks the relay failed when the state names a host nobody runs, still in the caller\'s trace', async () => {
    const traceId = randomBytes(16).toString('hex');
    const refused = await call(hosts[1]!, { inputResponses: {}, requestState: `nohost.${'A'.repeat(22)}` }, `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    expect(refused).toBeUndefined();
    await hosts[1]!.tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'fleet.mcp.resume.relay' && span.traceId === traceId));
    expect(spans.find((span) => span.name === 'fleet.mcp.resume.relay' && span.traceId === traceId)).toMatchObject({ statusCode: 2, attributes: expect.objectContaining({ 'error.type': 'INVALID_INPUT' }) as unknown });
  });
});
