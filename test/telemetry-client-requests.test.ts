/**
 * A traced call's requests to its client (sampling, elicitation) are spans under the call, the same for a native
 * (TypeScript) tool as for a guest: `sampling/createMessage` and `elicitation/create`, `toolhost.host_call`
 * `sample` / `elicit`, the request's size, and a refusal's code as `error.type` (core/call/client-gate.ts opens
 * them for both). Neither the request's text nor the client's answer reaches a span.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import type { CallClient } from '../host/core/client-requests.js';
import type { CallTracer } from '../host/core/tracing.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const SECRET = `secret-${randomBytes(6).toString('hex')}`;

function caller(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** A client that answers with the secret (which must never reach a span). */
const client: CallClient = {
  sample: async () => ({ role: 'assistant', content: { type: 'text', text: SECRET }, model: 'test-model' }),
  elicit: async () => ({ action: 'accept', content: { answer: SECRET } }),
};

describe.runIf(hasCGuests)('spans of a call\'s sampling and elicitation round trips', () => {
  const receiver = new OtlpReceiver();
  let tracer: CallTracer;
  let registry: ToolRegistry;

  /** The spans of the call traced under `parent` (its execute_tool span and what hangs under it). */
  async function callSpans(parent: { traceId: string; spanId: string }, tool: string, count: number, name: string): Promise<{ call: ReceivedSpan; children: ReceivedSpan[] }> {
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.filter((span) => span.traceId === parent.traceId && span.name === name).length >= count);
    const call = spans.find((span) => span.traceId === parent.traceId && span.name === `execute_tool ${tool}`)!;
    expect(call.parentSpanId).toBe(parent.spanId);
    return { call, children: spans.filter((span) => span.parentSpanId === call.spanId) };
  }

  beforeAll(async () => {
    await receiver.start();
    tracer = await createTracer(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })!, 'test');
    registry = makeRegistry({ tracer });
    registry.register(defineNativeTool({
      name: 'native_asker',
      description: 'Asks its caller\'s model, then its user, then its user again (past its grant).',
      inputSchema: { type: 'object' },
      grant: { sampling: { maxRequests: 1, maxTokens: 100 }, elicitation: { maxRequests: 1 } },
      run: async (_args, ctx) => {
        const reply = await ctx.client.sample({ messages: [{ role: 'user', content: { type: 'text', text: SECRET } }], maxTokens: 50 });
        const answer = await ctx.client.elicit({ message: SECRET, requestedSchema: { type: 'object', properties: { answer: { type: 'string' } } } });
        const refused = await ctx.client.elicit({ message: 'again', requestedSchema: { type: 'object', properties: { answer: { type: 'string' } } } }).then(() => 'answered', (error: { code?: string }) => error.code);
        return { model: reply.model, action: answer.action, refused };
      },
    }));
    await registry.registerWasmTools(fixture('mcp_rich'), { grant: { sampling: { maxRequests: 2, maxTokens: 1000 }, elicitation: { maxRequests: 1 } } });
  });
  afterAll(async () => {
    await registry?.close();
    await tracer?.shutdown();
    await receiver.stop();
  });

  it('gives a native tool\'s sampling and elicitation spans under its call, a refusal with its code (hostile: fails where only guests had them)', async () => {
    const parent = caller();
    const result = await registry.execute('native_asker', {}, { trace: { traceparent: parent.traceparent }, client });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ model: 'test-model', action: 'accept', refused: 'PERMISSION_DENIED' });
    const { children } = await callSpans(parent, 'native_asker', 2, 'elicitation/create');
    const sampling = children.filter((span) => span.name === 'sampling/createMessage');
    const elicitation = children.filter((span) => span.name === 'elicitation/create');
    expect(sampling).toHaveLength(1);
    expect(sampling[0]!.attributes).toMatchObject({ 'toolhost.host_call': 'sample', 'toolhost.client_request.size': expect.any(Number) as number });
    expect(sampling[0]!.statusCode).not.toBe(2);
    expect(elicitation).toHaveLength(2);
    expect(elicitation.map((span) => span.attributes['error.type'] ?? 'ok').sort()).toEqual(['PERMISSION_DENIED', 'ok']);
    expect(elicitation.every((span) => span.attributes['toolhost.host_call'] === 'elicit')).toBe(true);
  });

  it('gives a guest\'s the same spans, once each (control)', async () => {
    const parent = caller();
    const result = await registry.execute('ask_model', { n: 1, max_tokens: 64 }, { trace: { traceparent: parent.traceparent }, client });
    expect(result.isError).toBeFalsy();
    const { children } = await callSpans(parent, 'ask_model', 1, 'sampling/createMessage');
    const sampling = children.filter((span) => span.name === 'sampling/createMessage');
    expect(sampling).toHaveLength(1);
    expect(sampling[0]!.attributes).toMatchObject({ 'toolhost.host_call': 'sample', 'toolhost.client_request.size': expect.any(Number) as number });
    expect(children.map((span) => span.name)).toEqual(expect.arrayContaining(['sandbox.run']));
  });

  it('puts neither the request\'s text nor the client\'s answer in any span (hostile)', async () => {
    await tracer.forceFlush();
    expect(receiver.bodies.length).toBeGreaterThan(0);
    for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(SECRET);
  });

  it('a call without a trace context still gets a root span, with its round trips under it (control)', async () => {
    const result = await registry.execute('native_asker', {}, { client });
    expect(result.isError).toBeFalsy();
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.name === 'execute_tool native_asker' && span.parentSpanId === ''));
    const root = spans.find((span) => span.name === 'execute_tool native_asker' && span.parentSpanId === '')!;
    await receiver.waitFor((all) => all.some((span) => span.parentSpanId === root.spanId && span.name === 'sampling/createMessage'));
  });
});
