/**
 * The tracer over OpenTelemetry's JS SDK, imported only when `settings.ts` says tracing is on (compose/host.ts
 * loads this file lazily): a host that traces nothing never loads the SDK, and cold start does not pay for it.
 *
 * Nothing is registered globally (no global tracer provider, propagator or context manager): an embedding
 * application's own OpenTelemetry setup is left alone, and parents travel explicitly (a span object, or a
 * W3C carrier from a request), so no AsyncLocalStorage is paid for on the call path.
 *
 * What it guarantees: spans carry only what their callers put in (see core/tracing.ts: no argument values,
 * results, state values, tokens or paths), a failure's status carries toolhost's error code and not its
 * message (messages can quote a guest's or a client's text), the principal only as `recording.principal`
 * allows. Spans wait for export in a bounded queue (`telemetry.max_queue_spans`, default 2048): past it the
 * batch processor drops them, and a collector that is down costs the host no more than that.
 */
import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { CallTracer, SpanAttributes, TraceCarrier, TraceRecording, TraceSpan, TraceSpanKind, TraceSpanOptions } from '../core/tracing.js';
import { isTraceSpan } from '../core/tracing.js';
import type { SamplerName, TelemetrySettings } from './settings.js';

const propagator = new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] });
const KINDS: Record<TraceSpanKind, SpanKind> = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL };

/** The tracer the settings describe, with its exporter and batch processor started. */
export async function createTracer(settings: TelemetrySettings, version: string): Promise<CallTracer> {
  const queue = new QueueWatch(settings.maxQueueSpans);
  const exporter = queue.watchExporter(await exporterFor(settings));
  const batch = new BatchSpanProcessor(exporter, { maxQueueSize: settings.maxQueueSpans, maxExportBatchSize: Math.min(512, settings.maxQueueSpans) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: version }),
    sampler: samplerFor(settings.sampler, settings.samplerArg),
    spanProcessors: [queue.watchProcessor(batch)],
  });
  return new OtlpTracer(provider, provider.getTracer('toolhost', version), settings.recording, queue);
}

/**
 * Counts the spans waiting for export, to tell when the batch processor drops one (`max_queue_spans` full: it
 * says so to nobody). A span that ends while the count is at the cap is a drop; each drop goes to the
 * listeners (the registry counts it as a `max_queue_spans` limit hit: `toolhost_limit_hits_total`).
 */
class QueueWatch {
  readonly #max: number;
  #waiting = 0;
  readonly listeners = new Set<() => void>();

  constructor(max: number) {
    this.#max = max;
  }

  watchProcessor(processor: SpanProcessor): SpanProcessor {
    return {
      onStart: (span, context) => processor.onStart(span, context),
      onEnd: (span) => {
        if ((span.spanContext().traceFlags & 1) === 1) {
          if (this.#waiting >= this.#max) {
            for (const listener of this.listeners) listener();
          } else {
            this.#waiting += 1;
          }
        }
        processor.onEnd(span);
      },
      forceFlush: () => processor.forceFlush(),
      shutdown: () => processor.shutdown(),
    };
  }

  watchExporter(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans, done) => {
        this.#waiting = Math.max(0, this.#waiting - spans.length);
        exporter.export(spans, done);
      },
      shutdown: () => exporter.shutdown(),
      ...(exporter.forceFlush === undefined ? {} : { forceFlush: () => exporter.forceFlush!() }),
    };
  }
}

async function exporterFor(settings: TelemetrySettings): Promise<SpanExporter> {
  const config = { url: settings.url, headers: settings.headers };
  if (settings.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(config);
}

function samplerFor(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

class OtlpTracer implements CallTracer {
  readonly recording: TraceRecording;
  readonly #provider: BasicTracerProvider;
  readonly #tracer: Tracer;
  readonly #queue: QueueWatch;

  constructor(provider: BasicTracerProvider, tracer: Tracer, recording: TraceRecording, queue: QueueWatch) {
    this.#provider = provider;
    this.#tracer = tracer;
    this.recording = recording;
    this.#queue = queue;
  }

  onDropped(listener: () => void): () => void {
    this.#queue.listeners.add(listener);
    return () => this.#queue.listeners.delete(listener);
  }

  startSpan(name: string, options: TraceSpanOptions = {}): TraceSpan {
    const { parent } = options;
    const context = parent === undefined ? ROOT_CONTEXT : isTraceSpan(parent) ? (parent as OtelSpan).context : extract(parent);
    return this.open(name, options, context);
  }

  open(name: string, options: Omit<TraceSpanOptions, 'parent'>, parent: Context): OtelSpan {
    const span = this.#tracer.startSpan(name, {
      kind: KINDS[options.kind ?? 'internal'],
      ...(options.attributes === undefined ? {} : { attributes: defined(options.attributes) }),
      ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
    }, parent);
    return new OtelSpan(this, span, trace.setSpan(parent, span));
  }

  principalAttribute(principal: string | undefined): string | undefined {
    if (principal === undefined) return undefined;
    switch (this.recording.principal) {
      case 'plain': return principal;
      case 'hashed': return `sha256:${createHash('sha256').update(principal).digest('hex').slice(0, 16)}`;
      default: return undefined;
    }
  }

  forceFlush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#provider.shutdown();
  }
}

class OtelSpan implements TraceSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
  readonly context: Context;
  readonly #tracer: OtlpTracer;
  readonly #span: Span;

  constructor(tracer: OtlpTracer, span: Span, context: Context) {
    const spanContext = span.spanContext();
    this.traceId = spanContext.traceId;
    this.spanId = spanContext.spanId;
    this.sampled = (spanContext.traceFlags & 1) === 1;
    this.context = context;
    this.#tracer = tracer;
    this.#span = span;
  }

  setAttributes(attributes: SpanAttributes): void {
    this.#span.setAttributes(defined(attributes));
  }

  fail(code: string): void {
    this.#span.setAttribute('error.type', code);
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  }

  end(endTime?: number): void {
    this.#span.end(endTime);
  }

  child(name: string, options: Omit<TraceSpanOptions, 'parent'> = {}): TraceSpan {
    return this.#tracer.open(name, options, this.context);
  }

  carrier(): TraceCarrier {
    const carrier: Record<string, string> = {};
    propagator.inject(this.context, carrier, defaultTextMapSetter);
    return carrier;
  }
}

/** A remote caller's context (W3C trace context and baggage); an invalid one starts a new trace. */
function extract(carrier: TraceCarrier): Context {
  return propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
