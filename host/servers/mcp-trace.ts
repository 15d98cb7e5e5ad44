/**
 * MCP server spans, per OpenTelemetry's semantic conventions for MCP: one SERVER span for every request a
 * server handles (`initialize`, `ping`, `tools/list`, `tools/call`, `prompts/*`, `resources/*`,
 * `completion/complete`, `logging/setLevel`, `server/discover`), named `{mcp.method.name} {target}`
 * (`tools/call echo`, `prompts/get greeting`; the method alone when there is no low-cardinality target), with
 * `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version`, `network.transport`,
 * `gen_ai.tool.name` (tools/call), `gen_ai.prompt.name` (prompts/get, a prompt's completion). Both protocol legs
 * (2025-11-25 sessions, 2026-07-28 stateless) and both transports (stdio, Streamable HTTP) trace through
 * {@link traceMcpRequests}: one wrapper around the SDK server's handler table, so every method is traced the
 * same way and none has a copy of it. A method the server does not serve gets no span (the SDK answers -32601).
 *
 * The parent is the caller's: `params._meta.traceparent` / `tracestate` / `baggage` (SEP-414, any transport),
 * else the HTTP request's `traceparent` header. Values past W3C's sizes are dropped before parsing
 * (core/tracing.ts `carrierOf`); an invalid one starts a new trace. A failure carries toolhost's code (the
 * `data.code` of a JSON-RPC error, the `toolhost/error` of an isError result) or else the JSON-RPC code as
 * `error.type`.
 *
 * What never goes in: arguments (a tool's, a prompt's, a completion's value), results, and resource URIs (a
 * `file:` URI can name a worktree path, an `https:` one a token in its query) unless
 * `telemetry.record.resource_uris` asks for them (then `mcp.resource.uri`, never in the span name). Names and
 * ids the client chose are cut at {@link MAX_NAME_LENGTH} characters, so a client cannot make spans that wait
 * for export large.
 */
import type { CallTracer, SpanAttributes, TraceCarrier, TraceSpan } from '../core/tracing.js';
import { carrierOf } from '../core/tracing.js';
import { MCP_META_KEYS } from './mcp-meta.js';

/** Longest tool or prompt name, and request id, put in a span as the client sent it (longer ones are cut). */
export const MAX_NAME_LENGTH = 256;
/** Longest resource URI recorded when `record.resource_uris` allows it (the surfaces refuse longer ones). */
const MAX_URI_LENGTH = 4096;
/** JSON-RPC's Internal error: what both SDKs answer for a handler's error without a code. */
const INTERNAL_ERROR = -32603;

/** What the era's server knows of a request besides its message: the transport, the session, the version. */
export interface McpTransportFacts {
  /** Reads an HTTP request header (absent over stdio). */
  header?: (name: string) => string | undefined;
  sessionId?: string;
  protocolVersion?: string;
  /** `tcp` (Streamable HTTP) or `pipe` (stdio). */
  transport: 'tcp' | 'pipe';
}

export interface McpRequestFacts extends McpTransportFacts {
  method: string;
  /** The tool or prompt the request names (low cardinality: never a URI). */
  target?: string;
  meta?: Record<string, unknown>;
  requestId?: string | number;
  /** Attributes of the method (`gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`). */
  attributes?: SpanAttributes;
}

/** The request's SERVER span, child of the caller's context. */
export function openMcpServerSpan(tracer: CallTracer, facts: McpRequestFacts): TraceSpan {
  const parent = carrierOf(facts.meta) ?? headerCarrier(facts.header);
  return tracer.startSpan(facts.target === undefined ? facts.method : `${facts.method} ${facts.target}`, {
    kind: 'server',
    ...(parent === undefined ? {} : { parent }),
    attributes: {
      'mcp.method.name': facts.method,
      ...facts.attributes,
      'jsonrpc.request.id': facts.requestId === undefined ? undefined : clip(String(facts.requestId)),
      'jsonrpc.protocol.version': '2.0',
      'mcp.session.id': facts.sessionId,
      'mcp.protocol.version': facts.protocolVersion,
      'network.transport': facts.transport,
      'network.protocol.name': facts.transport === 'tcp' ? 'http' : undefined,
    },
  });
}

/** End the span with what the request answered: a JSON-RPC error, or an isError tool result (toolhost's code either way when it has one). */
export function endMcpServerSpan(span: TraceSpan, result: { isError?: boolean; _meta?: Record<string, unknown> } | undefined, thrown?: { code?: unknown; data?: unknown }): void {
  if (thrown !== undefined) {
    const data = thrown.data as { code?: unknown } | undefined;
    // What the SDK answers: the error's own code, or Internal error (-32603) for one without.
    const rpcCode = String(Number.isSafeInteger(thrown.code) ? thrown.code : INTERNAL_ERROR);
    span.setAttributes({ 'rpc.response.status_code': rpcCode });
    span.fail(typeof data?.code === 'string' ? data.code : rpcCode);
  } else if (result?.isError === true) {
    const error = result._meta?.[MCP_META_KEYS.error] as { code?: unknown } | undefined;
    span.fail(typeof error?.code === 'string' ? error.code : 'tool_error');
  }
  span.end();
}

/** A request as both SDK lines hand it to a handler. */
interface HandledRequest {
  method: string;
  id?: string | number;
  params?: Record<string, unknown>;
}
type Handler = (request: HandledRequest, context: object) => Promise<unknown>;

/** Each traced request's span, by the handler context (2025: `extra`; 2026: `ctx`) the SDK made for it. */
const spans = new WeakMap<object, TraceSpan>();

/** The server span of the request whose handler context this is (undefined when the host does not trace). */
export function requestSpan(context: object): TraceSpan | undefined {
  return spans.get(context);
}

/**
 * Trace every request `server` handles: each handler the SDK looks up runs inside a server span of its
 * request, found by handlers with {@link requestSpan} (tools/call hands it to the call; surface operations hang
 * their calls under it). `transportOf` says what the era knows of the request's transport.
 *
 * It reads the SDK server's handler table (`_requestHandlers`, a Map in both SDK lines, 1.x and 2.x), so
 * handlers registered at any time, the SDK's own `initialize`, `ping` and `server/discover` included, are
 * traced; test/telemetry-mcp-requests.test.ts fails if an SDK release moves it.
 */
export function traceMcpRequests(server: object, tracer: CallTracer, transportOf: (context: object) => McpTransportFacts): void {
  const table = (server as { _requestHandlers?: unknown })._requestHandlers;
  if (!(table instanceof Map)) throw new Error('traceMcpRequests: this MCP SDK keeps its request handlers elsewhere');
  const handlers = table as Map<string, Handler>;
  const lookup = handlers.get.bind(handlers);
  handlers.get = (method: string): Handler | undefined => {
    const handler = lookup(method);
    if (handler === undefined) return undefined;
    return async (request, context) => {
      const span = openMcpServerSpan(tracer, { ...transportOf(context), ...requestFacts(request, tracer) });
      spans.set(context, span);
      let result: unknown;
      try {
        result = await handler(request, context);
      } catch (error) {
        endMcpServerSpan(span, undefined, error as { code?: unknown; data?: unknown });
        throw error;
      }
      // initialize: the version negotiated is the answer's (no header says it yet).
      if (method === 'initialize') span.setAttributes({ 'mcp.protocol.version': stringOf((result as { protocolVersion?: unknown } | undefined)?.protocolVersion) });
      endMcpServerSpan(span, result as { isError?: boolean; _meta?: Record<string, unknown> } | undefined);
      return result;
    };
  };
}

/** What a request's method and params put in its span: the target of its name, and its method's attributes. */
function requestFacts(request: HandledRequest, tracer: CallTracer): Omit<McpRequestFacts, keyof McpTransportFacts> {
  const { method } = request;
  const params = (typeof request.params === 'object' && request.params !== null ? request.params : {}) as Record<string, unknown>;
  const meta = typeof params._meta === 'object' && params._meta !== null ? params._meta as Record<string, unknown> : undefined;
  const facts: Omit<McpRequestFacts, keyof McpTransportFacts> = { method, ...(meta === undefined ? {} : { meta }), ...(request.id === undefined ? {} : { requestId: request.id }) };
  const name = typeof params.name === 'string' ? clip(params.name) : undefined;
  switch (method) {
    case 'tools/call':
      if (name !== undefined) facts.target = name;
      facts.attributes = { 'gen_ai.tool.name': name, 'gen_ai.operation.name': 'execute_tool' };
      break;
    case 'prompts/get':
      if (name !== undefined) facts.target = name;
      facts.attributes = { 'gen_ai.prompt.name': name };
      break;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      facts.attributes = { 'mcp.resource.uri': resourceUri(params.uri, tracer) };
      break;
    case 'completion/complete': {
      const ref = (typeof params.ref === 'object' && params.ref !== null ? params.ref : {}) as Record<string, unknown>;
      if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
        facts.target = clip(ref.name);
        facts.attributes = { 'gen_ai.prompt.name': facts.target };
      } else if (ref.type === 'ref/resource') {
        facts.attributes = { 'mcp.resource.uri': resourceUri(ref.uri, tracer) };
      }
      break;
    }
    default:
      break;
  }
  return facts;
}

/** A resource URI when `record.resource_uris` lets it in (and it is not past the length the surfaces serve). */
function resourceUri(uri: unknown, tracer: CallTracer): string | undefined {
  return tracer.recording.resourceUris === true && typeof uri === 'string' && uri.length <= MAX_URI_LENGTH ? uri : undefined;
}

/** A client-chosen name or id as a span may carry it: cut at {@link MAX_NAME_LENGTH} characters. */
export function clip(text: string): string {
  return text.length <= MAX_NAME_LENGTH ? text : `${text.slice(0, MAX_NAME_LENGTH)}…`;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? clip(value) : undefined;
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

/** The W3C context of an HTTP request's headers (capped as `carrierOf` caps it), if it has one. */
export function headerCarrier(header: ((name: string) => string | undefined) | undefined): TraceCarrier | undefined {
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
