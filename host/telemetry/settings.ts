/**
 * Whether this host traces, and how: the standard `OTEL_*` environment over `toolhost.yaml`'s `telemetry:`
 * section (the environment wins, as OpenTelemetry specifies). Pure: nothing of the SDK is loaded here, so a
 * host that traces nothing never loads it (`sdk.ts` is imported only when this answers with settings).
 *
 * Tracing is on when an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`,
 * `telemetry.endpoint`, `telemetry.traces_endpoint`) or `telemetry.enabled: true` says so (OTLP's default
 * endpoint then, `http://localhost:4318`); off with `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` or
 * `telemetry.enabled: false`.
 */
import type { TraceRecording } from '../core/tracing.js';

export type OtlpProtocol = 'http/protobuf' | 'http/json';
export type SamplerName = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
export const SAMPLERS: readonly SamplerName[] = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

/** `toolhost.yaml`'s `telemetry:` section, resolved (camelCase; only what the file says). */
export interface TelemetryFileSettings {
  enabled?: boolean;
  endpoint?: string;
  tracesEndpoint?: string;
  protocol?: OtlpProtocol;
  headers?: Record<string, string>;
  serviceName?: string;
  sampler?: SamplerName;
  samplerArg?: number;
  /** Spans held for export at most (the batch processor drops past it). */
  maxQueueSpans?: number;
  record?: Partial<TraceRecording>;
}

/** What the tracer is built from. */
export interface TelemetrySettings {
  /** Where spans are posted (the full URL, `/v1/traces` included). */
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  serviceName: string;
  sampler: SamplerName;
  samplerArg: number;
  maxQueueSpans: number;
  recording: TraceRecording;
  /** What the environment asked that toolhost does not do (said once as warnings). */
  warnings: string[];
}

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
export const DEFAULT_MAX_QUEUE_SPANS = 2048;
export const DEFAULT_RECORDING: TraceRecording = { argumentSizes: false, principal: 'hashed', resourceUris: false };

/** The settings, or undefined when tracing is off. */
export function telemetrySettings(file: TelemetryFileSettings | undefined, env: NodeJS.ProcessEnv = process.env): TelemetrySettings | undefined {
  const section = file ?? {};
  const warnings: string[] = [];
  if (truthy(env.OTEL_SDK_DISABLED)) return undefined;
  const exporter = nonEmpty(env.OTEL_TRACES_EXPORTER);
  if (exporter !== undefined && exporter.split(',').map((entry) => entry.trim()).includes('none')) return undefined;
  if (exporter !== undefined && !exporter.split(',').map((entry) => entry.trim()).includes('otlp')) warnings.push(`OTEL_TRACES_EXPORTER=${exporter}: toolhost exports traces over OTLP only`);
  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? (nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) === undefined ? section.tracesEndpoint : undefined);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ?? section.endpoint;
  const named = tracesEndpoint !== undefined || endpoint !== undefined;
  if (section.enabled === false && !named) return undefined;
  if (section.enabled === false && nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) === undefined && nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) === undefined) return undefined;
  if (!named && section.enabled !== true) return undefined;
  const url = tracesEndpoint ?? `${(endpoint ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;

  let protocol: OtlpProtocol = section.protocol ?? 'http/protobuf';
  const envProtocol = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL);
  if (envProtocol === 'http/protobuf' || envProtocol === 'http/json') protocol = envProtocol;
  else if (envProtocol !== undefined) warnings.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${envProtocol} is not supported (http/protobuf or http/json); using ${protocol}`);

  const headers: Record<string, string> = { ...section.headers, ...parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };

  let sampler: SamplerName = section.sampler ?? 'parentbased_always_on';
  const envSampler = nonEmpty(env.OTEL_TRACES_SAMPLER);
  if (envSampler !== undefined) {
    if ((SAMPLERS as readonly string[]).includes(envSampler)) sampler = envSampler as SamplerName;
    else warnings.push(`OTEL_TRACES_SAMPLER=${envSampler} is not supported (${SAMPLERS.join(', ')}); using ${sampler}`);
  }
  let samplerArg = section.samplerArg ?? 1;
  const envArg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  if (envArg !== undefined) {
    const value = Number(envArg);
    if (Number.isFinite(value) && value >= 0 && value <= 1) samplerArg = value;
    else warnings.push(`OTEL_TRACES_SAMPLER_ARG=${envArg} is not a ratio from 0 to 1; using ${samplerArg}`);
  }
  let maxQueueSpans = section.maxQueueSpans ?? DEFAULT_MAX_QUEUE_SPANS;
  const envQueue = nonEmpty(env.OTEL_BSP_MAX_QUEUE_SIZE);
  if (envQueue !== undefined) {
    const value = Number(envQueue);
    if (Number.isInteger(value) && value > 0) maxQueueSpans = value;
    else warnings.push(`OTEL_BSP_MAX_QUEUE_SIZE=${envQueue} is not a positive integer; using ${maxQueueSpans}`);
  }
  return {
    url,
    protocol,
    headers,
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? section.serviceName ?? 'toolhost',
    sampler,
    samplerArg,
    maxQueueSpans,
    recording: { ...DEFAULT_RECORDING, ...section.record },
    warnings,
  };
}

/** `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated by commas, values percent-encoded. */
export function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (text === undefined) return headers;
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const name = pair.slice(0, at).trim();
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // kept as written
    }
    if (name !== '') headers[name] = value;
  }
  return headers;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === 'true';
}
