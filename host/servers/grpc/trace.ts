/**
 * gRPC server spans, per OpenTelemetry's RPC conventions: one SERVER span per RPC named
 * `sw4rm.tool.ToolService/<Method>`, with `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`,
 * continuing the caller's trace from the request metadata's `traceparent` (and `tracestate`, `baggage`).
 * A failed RPC's `error.type` is toolhost's code when the status carries one, else the gRPC status name.
 */
import type { Metadata, ServiceError } from '@grpc/grpc-js';
import { carrierOf, type CallTracer, type TraceSpan } from '../../core/tracing.js';

const SERVICE = 'sw4rm.tool.ToolService';

/** The RPC's span, or undefined when the host does not trace. */
export function openGrpcSpan(tracer: CallTracer | undefined, method: 'Call' | 'CallStream' | 'Cancel', metadata: Metadata): TraceSpan | undefined {
  if (tracer === undefined) return undefined;
  const parent = carrierOf({
    traceparent: first(metadata, 'traceparent'),
    tracestate: first(metadata, 'tracestate'),
    baggage: first(metadata, 'baggage'),
  });
  return tracer.startSpan(`${SERVICE}/${method}`, {
    kind: 'server',
    ...(parent === undefined ? {} : { parent }),
    attributes: { 'rpc.system': 'grpc', 'rpc.service': SERVICE, 'rpc.method': method, 'network.transport': 'tcp' },
  });
}

/** End the RPC's span with its status (`error` absent or null: OK). */
export function endGrpcSpan(span: TraceSpan | undefined, error: Partial<Pick<ServiceError, 'code' | 'metadata'>> | null | undefined): void {
  if (span === undefined) return;
  const code = error?.code ?? 0;
  span.setAttributes({ 'rpc.grpc.status_code': code });
  if (code !== 0) {
    const toolhostCode = error?.metadata === undefined ? undefined : first(error.metadata, 'toolhost-error-code');
    span.fail(toolhostCode ?? `grpc_status_${code}`);
  }
  span.end();
}

function first(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}
