/** `toolhost.yaml`'s `telemetry:` section in the host's terms (the OTEL_* environment goes over it later: telemetry/settings.ts). */
import type { ConfigFile } from './types.js';
import type { ResolvedTelemetry } from './resolved-types.js';

export /** `telemetry:` in camelCase, only what the file sets. */
function resolveTelemetry(section: NonNullable<ConfigFile['telemetry']>): ResolvedTelemetry {
  const out: ResolvedTelemetry = {};
  if (section.enabled !== undefined) out.enabled = section.enabled;
  if (section.endpoint !== undefined) out.endpoint = section.endpoint;
  if (section.traces_endpoint !== undefined) out.tracesEndpoint = section.traces_endpoint;
  if (section.protocol !== undefined) out.protocol = section.protocol;
  if (section.headers !== undefined) out.headers = { ...section.headers };
  if (section.service_name !== undefined) out.serviceName = section.service_name;
  if (section.sampler !== undefined) out.sampler = section.sampler;
  if (section.sampler_arg !== undefined) out.samplerArg = section.sampler_arg;
  if (section.max_queue_spans !== undefined) out.maxQueueSpans = section.max_queue_spans;
  if (section.record !== undefined) {
    out.record = {};
    if (section.record.argument_sizes !== undefined) out.record.argumentSizes = section.record.argument_sizes;
    if (section.record.principal !== undefined) out.record.principal = section.record.principal;
    if (section.record.resource_uris !== undefined) out.record.resourceUris = section.record.resource_uris;
  }
  return out;
}
