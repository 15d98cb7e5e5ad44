/**
 * MCP server spans, per OpenTelemetry's semantic conventions for MCP: one SERVER span per request, named
 * `{mcp.method.name} {target}` (`tools/call echo`), with `mcp.method.name`, `gen_ai.tool.name`,
 * `gen_ai.operation.name`, `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version` and
 * `network.transport`. Both protocol legs (2025-11-25 sessions, 2026-07-28 stateless) and both transports
 * (stdio, Streamable HTTP) open theirs here, so the same request is traced the same way on each.
 *
 * The parent is the caller's: `params._meta.traceparent` / `tracestate` / `baggage` (SEP-414, any transport),
 * else the HTTP request's `traceparent` header. Values past W3C's sizes are dropped before parsing
 * (core/tracing.ts `carrierOf`); an invalid one starts a new trace. Nothing of the arguments goes in.
 */
import type { CallTracer, TraceCarrier, TraceSpan } from '../core/tracing.js';
import { carrierOf } from '../core/tracing.js';
import { MCP_META_KEYS } from './mcp-meta.js';

export interface McpRequestFacts {
  method: string;
  /** The tool (or prompt, resource) the request names. */
  target?: string;
  meta?: Record<string, unknown>;
  /** Reads an HTTP request header (absent over stdio). */
  header?: (name: string) => string | undefined;
  requestId?: string | number;
  sessionId?: string;
  protocolVersion?: string;
  /** `tcp` (Streamable HTTP) or `pipe` (stdio). */
  transport: 'tcp' | 'pipe';
}

/** The request's SERVER span, child of the caller's context. */
export function openMcpServerSpan(tracer: CallTracer, facts: McpRequestFacts): TraceSpan {
  const parent = carrierOf(facts.meta) ?? headerCarrier(facts.header);
  return tracer.startSpan(facts.target === undefined ? facts.method : `${facts.method} ${facts.target}`, {
    kind: 'server',
    ...(parent === undefined ? {} : { parent }),
    attributes: {
      'mcp.method.name': facts.method,
      'gen_ai.tool.name': facts.method === 'tools/call' ? facts.target : undefined,
      'gen_ai.operation.name': facts.method === 'tools/call' ? 'execute_tool' : undefined,
      'jsonrpc.request.id': facts.requestId === undefined ? undefined : String(facts.requestId),
      'jsonrpc.protocol.version': '2.0',
      'mcp.session.id': facts.sessionId,
      'mcp.protocol.version': facts.protocolVersion,
      'network.transport': facts.transport,
      'network.protocol.name': facts.transport === 'tcp' ? 'http' : undefined,
    },
  });
}

/** End the span with the tool result the request answers (an `isError` result carries toolhost's code). */
export function endMcpServerSpan(span: TraceSpan, result: { isError?: boolean; _meta?: Record<string, unknown> } | undefined, thrown?: { code?: unknown; data?: unknown }): void {
  if (thrown !== undefined) {
    const data = thrown.data as { code?: unknown } | undefined;
    span.setAttributes({ 'rpc.response.status_code': typeof thrown.code === 'number' ? String(thrown.code) : undefined });
    span.fail(typeof data?.code === 'string' ? data.code : typeof thrown.code === 'number' ? String(thrown.code) : 'INTERNAL');
  } else if (result?.isError === true) {
    const error = result._meta?.[MCP_META_KEYS.error] as { code?: unknown } | undefined;
    span.fail(typeof error?.code === 'string' ? error.code : 'tool_error');
  }
  span.end();
}

/** `run` inside a server span opened for `facts` and ended with its result or what it threw (both eras' `tools/call`). */
export async function inMcpServerSpan<R extends { isError?: boolean; _meta?: Record<string, unknown> }>(tracer: CallTracer, facts: McpRequestFacts, run: (span: TraceSpan) => Promise<R>): Promise<R> {
  const span = openMcpServerSpan(tracer, facts);
  try {
    const result = await run(span);
    endMcpServerSpan(span, result);
    return result;
  } catch (error) {
    endMcpServerSpan(span, undefined, error as { code?: unknown; data?: unknown });
    throw error;
  }
}

/**
 * The protocol version a 2025-era session negotiated, as its `initialize` answered it (over stdio nothing else
 * says it; over HTTP the client repeats it in a header): wraps the SDK server's initialize handler once.
 */
export function negotiatedVersion(server: object): () => string | undefined {
  let negotiated: string | undefined;
  const internals = server as { _oninitialize?: (request: unknown) => Promise<{ protocolVersion?: string }> };
  const initialize = internals._oninitialize;
  if (typeof initialize === 'function') {
    internals._oninitialize = async (request) => {
      const result = await initialize.call(server, request);
      negotiated = result.protocolVersion;
      return result;
    };
  }
  return () => negotiated;
}

function headerCarrier(header: ((name: string) => string | undefined) | undefined): TraceCarrier | undefined {
  if (header === undefined) return undefined;
  const traceparent = header('traceparent');
  if (traceparent === undefined) return undefined;
  const carrier: Record<string, unknown> = { traceparent };
  const tracestate = header('tracestate');
  if (tracestate !== undefined) carrier.tracestate = tracestate;
  const baggage = header('baggage');
  if (baggage !== undefined) carrier.baggage = baggage;
  return carrierOf(carrier);
}

/** A header of Node's (or the SDK's isomorphic) header record: the first value of a repeated one. */
export function recordHeader(headers: Record<string, string | string[] | undefined> | undefined): ((name: string) => string | undefined) | undefined {
  if (headers === undefined) return undefined;
  return (name) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
}
