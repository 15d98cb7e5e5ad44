/**
 * The narrow tracer the call path sees (ARCHITECTURE.md: "core sees a narrow tracer interface, never the SDK").
 * `telemetry/` implements it over OpenTelemetry's SDK, loaded only when tracing is configured; without a
 * tracer every hook below is one `undefined` check, so a host that traces nothing pays nothing.
 *
 * What crosses this interface is chosen by the caller of `startSpan`, so this file also says what may: span
 * names and attributes are tool names, codes, counts, sizes, durations and labels, never argument values,
 * results, state values, tokens or worktree paths (`TraceRecording`, `telemetry.record`, decides the optional
 * extras: argument sizes, principals hashed or plain, resource URIs).
 */

/** W3C trace context as it travels: the `traceparent`, `tracestate` and `baggage` header values. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
  baggage?: string;
}

export type SpanAttributeValue = string | number | boolean;
export type SpanAttributes = Record<string, SpanAttributeValue | undefined>;
export type TraceSpanKind = 'server' | 'client' | 'internal';

export interface TraceSpanOptions {
  kind?: TraceSpanKind;
  attributes?: SpanAttributes;
  /** When the span started (epoch ms, fractions allowed); default now. */
  startTime?: number;
  /** A span of this host, or a remote caller's context; absent: a new trace. */
  parent?: TraceSpan | TraceCarrier;
}

/** One span while it is open. */
export interface TraceSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Whether the sampler kept it (an unsampled span still carries its context on). */
  readonly sampled: boolean;
  setAttributes(attributes: SpanAttributes): void;
  /** The span failed: `error.type` is toolhost's error code (or another stable name), the status an error. */
  fail(code: string, message?: string): void;
  /** End it (at `endTime`, epoch ms, when given). Only the first call counts. */
  end(endTime?: number): void;
  /** A child of this span, open from `startTime` (default now). */
  child(name: string, options?: Omit<TraceSpanOptions, 'parent'>): TraceSpan;
  /** This span's context as headers or `_meta` keys, for a request made on its behalf. */
  carrier(): TraceCarrier;
}

/** What may go into spans beyond the defaults (telemetry.record in toolhost.yaml). */
export interface TraceRecording {
  /** `toolhost.arguments.size` (bytes of the args' JSON) on call spans. */
  argumentSizes: boolean;
  /** `enduser.id`: absent (`none`), a SHA-256 prefix of the principal (`hashed`), or the principal (`plain`). */
  principal: 'none' | 'hashed' | 'plain';
  /** `mcp.resource.uri` on MCP server spans (a URI can name a worktree path or carry a token: off by default). */
  resourceUris: boolean;
}

export interface CallTracer {
  startSpan(name: string, options?: TraceSpanOptions): TraceSpan;
  readonly recording: TraceRecording;
  /** The principal as `recording.principal` allows it (undefined: leave it out). */
  principalAttribute(principal: string | undefined): string | undefined;
  /** Be told of each span dropped because `max_queue_spans` were waiting for export; returns the unsubscribe. */
  onDropped?(listener: () => void): () => void;
  /** Export what is buffered (tests, a shutdown). */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The wall clock in epoch ms with sub-millisecond precision (span times). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** `performance.now()` taken earlier, as epoch ms. */
export function epochOf(performanceNow: number): number {
  return performance.timeOrigin + performanceNow;
}

/** Whether `parent` is a span of this host rather than a remote context. */
export function isTraceSpan(parent: TraceSpan | TraceCarrier | undefined): parent is TraceSpan {
  return parent !== undefined && typeof (parent as TraceSpan).child === 'function';
}

/** A carrier read from an MCP `_meta` object (or any record): the three W3C keys when they are strings. */
export function carrierOf(source: Record<string, unknown> | undefined): TraceCarrier | undefined {
  if (source === undefined) return undefined;
  const traceparent = source.traceparent;
  // Client-shaped text: a value past W3C's own bounds is dropped before anything parses it.
  if (typeof traceparent !== 'string' || traceparent.length > MAX_TRACEPARENT) return undefined;
  const carrier: TraceCarrier = { traceparent };
  if (typeof source.tracestate === 'string' && source.tracestate.length <= MAX_TRACESTATE) carrier.tracestate = source.tracestate;
  if (typeof source.baggage === 'string' && source.baggage.length <= MAX_BAGGAGE) carrier.baggage = source.baggage;
  return carrier;
}

/** Longest values read (W3C: a version-00 traceparent is 55 characters, tracestate at most 512, baggage 8192 bytes). */
const MAX_TRACEPARENT = 256;
const MAX_TRACESTATE = 512;
const MAX_BAGGAGE = 8192;

/** The fields that join a log line or an audit entry to its span (OpenTelemetry's JSON log names). */
export function traceFields(span: TraceSpan | undefined): { trace_id?: string; span_id?: string } {
  return span === undefined ? {} : { trace_id: span.traceId, span_id: span.spanId };
}
