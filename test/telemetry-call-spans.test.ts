/**
 * The library's calls traced to an OTLP/HTTP receiver (JSON bodies here; the served test reads protobuf):
 * `CallOptions.trace` continues the caller's trace with an `execute_tool <tool>` span, its children
 * (admission, the sandbox's queue and run) are drawn on the main thread, a refused call carries toolhost's
 * code as `error.type`, log lines and audit entries carry the trace and span ids, and no argument value
 * reaches any span. Without a tracer nothing is exported.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditLog, type Logger, type ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';
import { OtlpReceiver } from './otlp-receiver.js';

const SECRET = `argument-value-${randomBytes(6).toString('hex')}`;

/** A logger keeping every line, bindings included (pino's shape). */
function capturingLogger(lines: Array<Record<string, unknown>>, bindings: Record<string, unknown> = {}): Logger {
  const at = (level: string) => (obj: Record<string, unknown>, msg?: string): void => {
    lines.push({ level, ...bindings, ...obj, msg });
  };
  return {
    trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'),
    child: (more) => capturingLogger(lines, { ...bindings, ...more }),
    isLevelEnabled: () => true,
  };
}

function caller(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

describe.runIf(hasCGuests)('library calls traced to an OTLP/HTTP receiver', () => {
  const receiver = new OtlpReceiver();
  let tracer: CallTracer;
  let registry: ToolRegistry;
  const lines: Array<Record<string, unknown>> = [];
  const audit = new MemoryAuditLog();

  beforeAll(async () => {
    await receiver.start();
    const settings = telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'library-test' });
    tracer = await createTracer(settings!, 'test');
    registry = makeRegistry({ tracer, logger: capturingLogger(lines), audit });
    await registry.registerWasmTools(example('ctools'));
  });
  afterAll(async () => {
    await registry?.close();
    await tracer?.shutdown();
    await receiver.stop();
  });

  it('continues the caller\'s trace: execute_tool under its span, admission and the sandbox run under that', async () => {
    const parent = caller();
    const result = await registry.execute('echo', { text: SECRET }, { trace: { traceparent: parent.traceparent } });
    expect(result.isError).toBeFalsy();
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === parent.traceId && span.name === 'sandbox.run'));
    const call = spans.find((span) => span.traceId === parent.traceId && span.name === 'execute_tool echo')!;
    expect(call).toMatchObject({ parentSpanId: parent.spanId, kind: 1, service: 'library-test', encoding: 'json' });
    expect(call.attributes).toMatchObject({ 'gen_ai.tool.name': 'echo', 'gen_ai.operation.name': 'execute_tool' });
    const children = spans.filter((span) => span.parentSpanId === call.spanId).map((span) => span.name);
    expect(children).toEqual(expect.arrayContaining(['admission', 'sandbox.queue', 'sandbox.run']));
    const run = spans.find((span) => span.parentSpanId === call.spanId && span.name === 'sandbox.run')!;
    expect(run.attributes).toMatchObject({ 'toolhost.sandbox.containment': 'thread', 'toolhost.sandbox.isolation': expect.any(String) as string, 'toolhost.sandbox.instance': expect.stringMatching(/fresh|prewarmed|restored|reused/) as string });
    expect(typeof run.attributes['toolhost.sandbox.cpu_ms']).toBe('number');
  });

  it('puts no argument value in any span, and no argument size unless asked', async () => {
    await tracer.forceFlush();
    expect(receiver.bodies.length).toBeGreaterThan(0);
    for (const body of receiver.bodies) expect(body.toString('utf8')).not.toContain(SECRET);
    expect(receiver.spans.some((span) => 'toolhost.arguments.size' in span.attributes)).toBe(false);
  });

  it('ends a refused call\'s span with toolhost\'s code as error.type', async () => {
    const parent = caller();
    await expect(registry.execute('no-such-tool', {}, { trace: { traceparent: parent.traceparent } })).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    await tracer.forceFlush();
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === parent.traceId && span.name === 'execute_tool no-such-tool'));
    const call = spans.find((span) => span.traceId === parent.traceId && span.name === 'execute_tool no-such-tool')!;
    expect(call).toMatchObject({ statusCode: 2, parentSpanId: parent.spanId });
    expect(call.attributes['error.type']).toBe('TOOL_NOT_FOUND');
  });

  it('joins the call\'s log lines and its audit entry to its span', async () => {
    const parent = caller();
    // Asking above the grant is a policy denial: audited.
    await expect(registry.execute('echo', { text: SECRET }, { trace: { traceparent: parent.traceparent }, policy: { privilege_level: 'ELEVATED' } })).rejects.toMatchObject({ code: 'TOOL_PRIVILEGE_ESCALATION' });
    const entry = audit.entries.at(-1)!;
    expect(entry.trace_id).toBe(parent.traceId);
    expect(entry.span_id).toMatch(/^[0-9a-f]{16}$/);
    await registry.execute('echo', { text: 'x' }, { trace: { traceparent: parent.traceparent } });
    const finished = lines.filter((line) => line.msg === 'call finished' && line.trace_id === parent.traceId);
    expect(finished).toHaveLength(1);
    expect(finished[0]!.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('starts a new trace for a malformed or oversized traceparent, and the call still runs (hostile)', async () => {
    const long = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01${' '.repeat(10_000)}`;
    for (const traceparent of ['not-a-traceparent', long, '00-00000000000000000000000000000000-0000000000000000-01']) {
      const result = await registry.execute('echo', { text: 'ok' }, { trace: { traceparent, tracestate: 'x'.repeat(100_000) } });
      expect(result.isError).toBeFalsy();
    }
    await tracer.forceFlush();
    expect(receiver.spans.some((span) => span.traceId === 'a'.repeat(32) || span.traceId === '0'.repeat(32))).toBe(false);
  });
});

describe.runIf(hasCGuests)('a registry without a tracer', () => {
  it('exports nothing and gives runners no span (control)', async () => {
    const receiver = new OtlpReceiver();
    await receiver.start();
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(example('ctools'));
      expect(registry.tracer).toBeUndefined();
      const result = await registry.execute('echo', { text: 'x' }, { trace: { traceparent: caller().traceparent } });
      expect(result.isError).toBeFalsy();
      expect(receiver.bodies).toHaveLength(0);
    } finally {
      await registry.close();
      await receiver.stop();
    }
  });
});
