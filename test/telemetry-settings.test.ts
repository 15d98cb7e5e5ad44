/**
 * Whether a host traces and how (telemetry/settings.ts): off when nothing names an endpoint, the standard OTEL_*
 * environment over `toolhost.yaml`'s `telemetry:` (the environment wins, as OpenTelemetry specifies), and what
 * the environment asks that toolhost does not do said as a warning instead of failing the host.
 */
import { describe, expect, it } from 'vitest';
import { parseHeaders, telemetrySettings } from '../host/telemetry/settings.js';

describe('telemetry settings', () => {
  it('are off when nothing is configured, and with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none', () => {
    expect(telemetrySettings(undefined, {})).toBeUndefined();
    expect(telemetrySettings({ serviceName: 'x', protocol: 'http/json' }, {})).toBeUndefined();
    expect(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(telemetrySettings({ endpoint: 'http://c:4318' }, { OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(telemetrySettings({ endpoint: 'http://c:4318', enabled: false }, {})).toBeUndefined();
  });

  it('turn on with OTEL_EXPORTER_OTLP_ENDPOINT alone: protobuf, parent-based always-on, service toolhost', () => {
    expect(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      sampler: 'parentbased_always_on',
      samplerArg: 1,
      serviceName: 'toolhost',
      maxQueueSpans: 2048,
      recording: { argumentSizes: false, principal: 'hashed', resourceUris: false },
      warnings: [],
    });
    expect(telemetrySettings({ enabled: true }, {})?.url).toBe('http://localhost:4318/v1/traces');
  });

  it('let the environment win over the file, key by key', () => {
    const file = { endpoint: 'http://file:4318', protocol: 'http/json' as const, serviceName: 'from-file', sampler: 'always_on' as const, headers: { a: 'file', b: 'file' }, maxQueueSpans: 10 };
    expect(telemetrySettings(file, {})).toMatchObject({ url: 'http://file:4318/v1/traces', protocol: 'http/json', serviceName: 'from-file', sampler: 'always_on', headers: { a: 'file', b: 'file' }, maxQueueSpans: 10 });
    expect(telemetrySettings(file, {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://env:4318/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'from-env',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_HEADERS: 'b=env,c=a%20b',
      OTEL_BSP_MAX_QUEUE_SIZE: '99',
    })).toMatchObject({ url: 'http://env:4318/custom', protocol: 'http/protobuf', serviceName: 'from-env', sampler: 'parentbased_traceidratio', samplerArg: 0.25, headers: { a: 'file', b: 'env', c: 'a b' }, maxQueueSpans: 99 });
    // The environment's endpoint turns tracing on over a file that says enabled: false.
    expect(telemetrySettings({ enabled: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318' })?.url).toBe('http://env:4318/v1/traces');
  });

  it('warn about what they cannot do (grpc, an unknown sampler, a bad ratio) and keep the rest', () => {
    const settings = telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_TRACES_SAMPLER_ARG: '7' });
    expect(settings).toMatchObject({ protocol: 'http/protobuf', sampler: 'parentbased_always_on', samplerArg: 1 });
    expect(settings?.warnings).toHaveLength(3);
  });

  it('parse OTEL_EXPORTER_OTLP_HEADERS pairs, skipping malformed ones', () => {
    expect(parseHeaders('api-key=abc%3D%3D, x=1,broken,=nameless')).toEqual({ 'api-key': 'abc==', x: '1' });
  });
});
