/**
 * A 2026-07-28 `subscriptions/listen` stream gets a SERVER span (host/servers/mcp-listen-span.ts):
 * the SDK serves listen outside the handler table every other request is traced through, so the
 * HTTP server opens the span itself. An SDK v2 client pinned to 2026-07-28 listens (with a
 * traceparent header), hears a change, closes: the span is the caller's child, ends with the
 * stream, counts what was asked, and never names the URI it listened to.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import type { McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests } from './helpers.js';
import { startTracedMcpHost, type TracedMcpHost } from './traced-mcp-host.js';
import { OtlpReceiver } from './otlp-receiver.js';

const wasm = fixture('mcp_surface');

describe.skipIf(!hasCGuests)('a traced subscriptions/listen stream', () => {
  const receiver = new OtlpReceiver();
  let tracer: CallTracer;
  let registry: ToolRegistry;
  let server: McpHttpServer;

  let host: TracedMcpHost | undefined;

  beforeAll(async () => {
    host = await startTracedMcpHost(receiver, wasm);
    ({ tracer, registry, server } = host);
  });
  afterAll(async () => {
    await host?.stop();
  });

  it('spans the stream from the request to its close, as the caller\'s child, with counts and no URI', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parent = randomBytes(8).toString('hex');
    const client = new Client({ name: 'v2-pinned', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { traceparent: `00-${traceId}-${parent}-01` } } }));
    try {
      const heard: string[] = [];
      client.setNotificationHandler('notifications/prompts/list_changed', () => { heard.push('prompts'); });
      const uri = 'test://static/text';
      const subscription = await client.listen({ promptsListChanged: true, resourceSubscriptions: [uri] });
      registry.unloadComponent('mcp_surface');
      await registry.registerWasmTools(wasm);
      await expect.poll(() => heard.length, { timeout: 5000 }).toBeGreaterThan(0);
      // Still open: no span ended for it yet.
      await tracer.forceFlush();
      expect(receiver.spans.some((span) => span.name === 'subscriptions/listen')).toBe(false);
      await subscription.close();
      await expect.poll(async () => {
        await tracer.forceFlush();
        return receiver.spans.filter((span) => span.name === 'subscriptions/listen').length;
      }, { timeout: 10_000 }).toBe(1);
      const listen = receiver.spans.find((span) => span.name === 'subscriptions/listen')!;
      expect(listen).toMatchObject({ kind: 2, traceId, parentSpanId: parent });
      expect(listen.attributes).toMatchObject({ 'mcp.method.name': 'subscriptions/listen', 'toolhost.listen.resource_subscriptions': 1, 'toolhost.listen.end': 'closed' });
      for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(uri);
    } finally {
      await client.close();
    }
  });
});
