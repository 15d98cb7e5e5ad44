/**
 * The HTTP streaming tool: a native tool configured with a URL that sends its
 * call's arguments there and streams the response back as `delta` events.
 * (Over 400 lines: one call's stages share its abort, timeout and error state; the spec and its checks are in
 * http-tool-spec.ts, the parsers beside this file.)
 *
 * What a call does:
 * 1. Takes the egress checker of the call's capabilities (`checkerFor`: its
 *    network label and the grant's egress allowlist) and sends the request
 *    through it: a refused destination ends the call with `NETWORK_DENIED`
 *    before any connection; redirects are followed hop by hop, each hop
 *    checked again ({@link followRedirectsStream}).
 * 2. POST, PUT and PATCH send the arguments as JSON (`content-type:
 *    application/json`); GET and DELETE send no body and put the top-level
 *    arguments in the query string (strings, numbers and booleans as they
 *    are, arrays as repeated parameters, objects as JSON text).
 * 3. Streams the response by its media type:
 *    - `text/event-stream`: one delta per complete event, carrying its data
 *      (multi-line data joined with `\n`), parsed as JSON when it is JSON,
 *      otherwise the text. `event`, `id`, `retry` and comments are dropped.
 *    - `application/x-ndjson`, `application/jsonl` (and their spelling
 *      variants): one delta per non-empty line, parsed as JSON when it is
 *      JSON, otherwise the line's text (see ndjson-parser.ts).
 *    - anything else: one delta with the whole body (none when the body is
 *      empty): parsed JSON for JSON media types (and for a body without a
 *      content type that parses), text for textual ones, and
 *      `{ contentType, bytes, base64 }` for binary ones.
 * 4. Ends with the result. For a stream: `{ status, url, contentType, events,
 *    data }` where `events` counts the deltas and `data` repeats their data in
 *    order, so a caller that only collects the result (MCP `tools/call`, the
 *    library's `execute`) loses nothing. For a plain body: the body itself
 *    (the parsed JSON; text as a text block; an image as an image block).
 *
 * Failures all end the call with one structured error (a `TOOL_ERROR` whose
 * `details.code` says which; `details.details` has the URL, method, phase and
 * more): `HTTP_BAD_URL`, `HTTP_CONNECT` (DNS, refused, unreachable, TLS, a
 * connection closed before the response), `HTTP_TIMEOUT` (the tool's
 * `timeoutMs`, or a connect / first byte / idle timeout), `HTTP_STATUS` (a
 * non-2xx answer, with its status and a body excerpt), `HTTP_REDIRECT` (too
 * many redirects), `HTTP_PROTOCOL` (a malformed response or redirect),
 * `HTTP_TOO_LARGE` (past `maxBodyBytes`), `HTTP_STREAM_BROKEN` (the body
 * failed after the response started) and `HTTP_TRUNCATED_EVENT` (the stream
 * ended inside an SSE event or an NDJSON line). A stream is never passed off
 * as complete when it was cut. Policy refusals end with `NETWORK_DENIED`
 * itself.
 *
 * Cancellation: the call's cooperative signal (`ctx.signal`) and the hard
 * signal both abort the request; the connection is closed at once (or at the
 * next chunk boundary when a chunk is being handled) and the abort's reason is
 * rethrown, so the call path ends the call with `CANCELLED` (or the budget's
 * code), `partial` saying whether deltas went out.
 *
 * URLs in messages and details are shown without their query string and
 * fragment (they may carry keys); headers are never shown.
 */
import { STATUS_CODES } from 'node:http';
import { ToolhostError, toolError } from '../base/errors.js';
import type { RunnerSink } from '../core/events.js';
import type { ToolContext } from '../core/context.js';
import { richResult } from '../core/result.js';
import type { Tool, ToolOutput, ToolRun } from '../core/tool.js';
import type { TraceSpan } from '../core/tracing.js';
import { checkerFor } from '../net/egress-checker.js';
import { EgressError, type EgressFailureKind } from '../net/errors.js';
import {
  DEFAULT_BETWEEN_BYTES_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FIRST_BYTE_TIMEOUT_MS,
  type EgressRequest,
  type EgressStreamResponse,
} from '../net/pinned-client.js';
import { followRedirectsStream } from '../net/redirects.js';
import { BODY_METHODS, checkSpec, type CheckedSpec, type HttpStreamingToolSpec } from './http-tool-spec.js';
import { NdjsonParser, parseJson } from './ndjson-parser.js';
import { SseParser } from './sse-parser.js';

export type { HttpStreamingToolSpec, HttpToolMethod } from './http-tool-spec.js';

/** The result of a streamed response. */
export interface HttpStreamSummary {
  status: number;
  /** The final URL (after redirects), without its query string. */
  url: string;
  contentType: string;
  /** Deltas emitted. */
  events: number;
  /** Each delta's data, in order. */
  data: unknown[];
}

const SSE_TYPES: ReadonlySet<string> = new Set(['text/event-stream']);
const NDJSON_TYPES: ReadonlySet<string> = new Set([
  'application/x-ndjson',
  'application/ndjson',
  'application/jsonl',
  'application/x-jsonl',
  'application/jsonlines',
  'application/x-jsonlines',
]);
/** How much of an error response's body is read for its excerpt. */
const EXCERPT_BYTES = 2048;
/** How much of the excerpt goes into the error message. */
const MESSAGE_EXCERPT_CHARS = 200;

/**
 * Make an HTTP streaming tool. The spec is checked here: a bad URL, method,
 * header, limit or allowlist entry throws `INVALID_INPUT` at once, not at the
 * first call.
 */
export function createHttpStreamingTool(spec: HttpStreamingToolSpec): Tool {
  const config = checkSpec(spec);
  const tool: Tool = {
    name: spec.name,
    description: spec.description,
    inputSchema: spec.inputSchema ?? { type: 'object' },
    ...(spec.outputSchema === undefined ? {} : { outputSchema: spec.outputSchema }),
    executionMode: 'native',
    idempotent: spec.idempotent ?? false,
    streaming: true,
    ...(spec.readOnly === undefined ? {} : { readOnly: spec.readOnly }),
    source: 'native',
    ...(spec.grant === undefined ? {} : { grant: spec.grant }),
    ...(spec.defaultPolicy === undefined ? {} : { defaultPolicy: spec.defaultPolicy }),
    invoke: (args, ctx, events) => events.span === undefined ? runCall(config, args, ctx, events, undefined) : tracedCall(config, args, ctx, events, events.span),
  };
  return tool;
}

/** A URL as shown in messages: no query string, no fragment. */
export function displayUrl(url: string | URL): string {
  try {
    const parsed = typeof url === 'string' ? new URL(url) : url;
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return String(url).replace(/[?#].*$/s, '');
  }
}

/** Remove query strings and fragments from the URLs in a message. */
function redactMessage(message: string): string {
  return message.replace(/(https?:\/\/[^\s?#)"']*)[?#][^\s)"']*/g, '$1');
}

/** The lower-cased media type of a content-type header, without parameters (`''` when absent). */
function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

function isJsonMedia(media: string): boolean {
  return media === 'application/json' || media.endsWith('+json');
}

function isTextMedia(media: string): boolean {
  return (
    media.startsWith('text/') ||
    media.endsWith('+xml') ||
    media === 'application/xml' ||
    media === 'application/javascript' ||
    media === 'application/ecmascript' ||
    media === 'application/x-www-form-urlencoded' ||
    media === 'application/graphql' ||
    media === 'application/yaml' ||
    media === 'application/x-yaml' ||
    media === 'application/toml'
  );
}

function requestUrl(config: CheckedSpec, args: unknown): string {
  if (BODY_METHODS.has(config.method)) return config.url.href;
  const url = new URL(config.url.href);
  if (args === undefined || args === null) return url.href;
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolhostError('INVALID_INPUT', `a ${config.method} tool takes an object of arguments (they become query parameters)`);
  }
  const scalar = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value) ?? '');
  for (const [key, value] of Object.entries(args as Record<string, unknown>)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) url.searchParams.append(key, scalar(item));
    } else {
      url.searchParams.append(key, scalar(value));
    }
  }
  return url.href;
}

function statusLine(status: number): string {
  const reason = STATUS_CODES[status];
  return reason === undefined ? String(status) : `${status} ${reason}`;
}

type Phase = 'request' | 'body';

/**
 * The tool's own code for an egress failure, by its kind and when it happened.
 * Policy refusals (`denied`, `prohibited-address`) never get here: they end
 * the call as NETWORK_DENIED.
 */
function codeOfEgress(kind: EgressFailureKind, phase: Phase): string {
  switch (kind) {
    case 'invalid-url':
      return 'HTTP_BAD_URL';
    case 'dns-timeout':
    case 'connection-timeout':
    case 'response-timeout':
    case 'read-timeout':
      return 'HTTP_TIMEOUT';
    case 'body-too-large':
      return 'HTTP_TOO_LARGE';
    case 'too-many-redirects':
      return 'HTTP_REDIRECT';
    case 'protocol-error':
    case 'headers-too-large':
    case 'response-incomplete':
      return phase === 'body' ? 'HTTP_STREAM_BROKEN' : 'HTTP_PROTOCOL';
    case 'denied':
    case 'prohibited-address':
    case 'invalid-method':
    case 'dns-error':
    case 'connection-refused':
    case 'destination-unreachable':
    case 'connection-terminated':
    case 'tls-certificate-error':
    case 'tls-error':
    case 'aborted':
    case 'internal':
      return phase === 'body' ? 'HTTP_STREAM_BROKEN' : 'HTTP_CONNECT';
  }
}

/** One call. */
/**
 * A traced call: the request is a CLIENT span (method, the configured host and port, the status; never the
 * path, query or body), whose context the request carries only when the tool's `propagateTrace` says so.
 */
async function tracedCall(config: CheckedSpec, args: unknown, ctx: ToolContext, events: RunnerSink, parent: TraceSpan): Promise<ToolRun> {
  const span = parent.child(config.method, {
    kind: 'client',
    attributes: {
      'http.request.method': config.method,
      'server.address': config.url.hostname,
      'server.port': config.url.port === '' ? (config.url.protocol === 'https:' ? 443 : 80) : Number(config.url.port),
      'url.scheme': config.url.protocol.replace(/:$/, ''),
    },
  });
  try {
    return await runCall(config, args, ctx, events, span);
  } catch (error) {
    span.fail(error instanceof ToolhostError ? error.code : 'INTERNAL');
    throw error;
  } finally {
    span.end();
  }
}

async function runCall(config: CheckedSpec, args: unknown, ctx: ToolContext, events: RunnerSink, span: TraceSpan | undefined): Promise<ToolRun> {
  const url = requestUrl(config, args);
  const method = config.method;
  const shown = displayUrl(url);
  const checker = checkerFor(ctx.capabilities.network, ctx.capabilities.egressAllow, config.egress);

  // One signal for the request: the call's cooperative and hard signals, and the tool's own time limit.
  const controller = new AbortController();
  let timedOut = false;
  const stop = (reason: unknown): void => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const onSoft = (): void => stop(ctx.signal.reason);
  const onHard = (): void => stop(events.hardSignal.reason);
  ctx.signal.addEventListener('abort', onSoft, { once: true });
  events.hardSignal.addEventListener('abort', onHard, { once: true });
  if (ctx.signal.aborted) onSoft();
  if (events.hardSignal.aborted) onHard();
  const timer =
    config.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          stop(new Error('timed out'));
        }, config.timeoutMs);

  const within = (fallback: number): number => Math.min(fallback, config.timeoutMs ?? fallback);
  let headers = config.headers;
  if (span !== undefined && config.propagateTrace && !headers.some(([name]) => name.toLowerCase() === 'traceparent')) {
    const { traceparent, tracestate } = span.carrier();
    headers = [...headers, ...(traceparent === undefined ? [] : [['traceparent', traceparent] as [string, string]]), ...(tracestate === undefined ? [] : [['tracestate', tracestate] as [string, string]])];
  }
  const request: EgressRequest = {
    method,
    url,
    headers,
    signal: controller.signal,
    connectTimeoutMs: within(DEFAULT_CONNECT_TIMEOUT_MS),
    firstByteTimeoutMs: within(DEFAULT_FIRST_BYTE_TIMEOUT_MS),
    betweenBytesTimeoutMs: config.idleTimeoutMs ?? within(DEFAULT_BETWEEN_BYTES_TIMEOUT_MS),
    maxBodyBytes: config.maxBodyBytes,
    ...(BODY_METHODS.has(method) ? { body: new TextEncoder().encode(JSON.stringify(args ?? null)) } : {}),
    ...(config.ca === undefined ? {} : { ca: config.ca }),
  };

  let delivered = 0;
  let response: EgressStreamResponse | undefined;
  /** What a failure becomes: an abort's reason first, then the tool's timeout, then the failure itself. */
  const failure = (error: unknown, phase: Phase): unknown => {
    if (ctx.signal.aborted) return ctx.signal.reason;
    if (events.hardSignal.aborted) return events.hardSignal.reason;
    const details: Record<string, unknown> = { url: shown, method, phase };
    if (response) details.status = response.status;
    if (phase === 'body') details.events = delivered;
    if (timedOut) {
      return toolError('HTTP_TIMEOUT', `${method} ${shown} did not finish within its time limit of ${config.timeoutMs} ms`, { ...details, timeoutMs: config.timeoutMs });
    }
    if (error instanceof EgressError) {
      if (error.toolhostCode === 'NETWORK_DENIED') {
        // The refusal itself (code NETWORK_DENIED), with the URL shown without its query.
        const deniedUrl = displayUrl(error.url);
        const reason = redactMessage(error.message);
        events.account({ networkDenied: [{ url: deniedUrl, reason }] });
        const address = (error.details as { address?: unknown } | undefined)?.address;
        return new EgressError(error.failure, reason, {
          url: deniedUrl,
          ...(error.decision === undefined ? {} : { decision: error.decision }),
          ...(typeof address === 'string' ? { address } : {}),
        });
      }
      const code = codeOfEgress(error.kind, phase);
      const what = phase === 'body' ? `the response body of ${method} ${shown} failed` : `${method} ${shown} failed`;
      return toolError(code, `${what}: ${redactMessage(error.message)}`, { ...details, egress: error.kind });
    }
    if (error instanceof ToolhostError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return toolError(phase === 'body' ? 'HTTP_STREAM_BROKEN' : 'HTTP_CONNECT', `${method} ${shown} failed: ${redactMessage(message)}`, details);
  };
  const throwIfStopped = (): void => {
    if (controller.signal.aborted) throw failure(controller.signal.reason, 'body');
  };

  try {
    try {
      response = await followRedirectsStream(request, checker, config.maxRedirects);
    } catch (error) {
      throw failure(error, 'request');
    }
    const finalUrl = displayUrl(response.url);
    const contentType = response.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
    const media = mediaTypeOf(contentType);

    try {
      if (response.status < 200 || response.status > 299) {
        const excerpt = await readExcerpt(response, throwIfStopped);
        const oneLine = excerpt.replace(/\s+/g, ' ').trim();
        const shownExcerpt = oneLine.length > MESSAGE_EXCERPT_CHARS ? `${oneLine.slice(0, MESSAGE_EXCERPT_CHARS)}…` : oneLine;
        throw toolError(
          'HTTP_STATUS',
          `${method} ${finalUrl} answered ${statusLine(response.status)}${shownExcerpt === '' ? '' : `: ${shownExcerpt}`}`,
          { url: finalUrl, method, phase: 'request', status: response.status, contentType, bodyExcerpt: excerpt },
        );
      }

      if (SSE_TYPES.has(media) || NDJSON_TYPES.has(media)) {
        const data: unknown[] = [];
        const emit = (value: unknown): void => {
          throwIfStopped();
          events.delta(value);
          data.push(value);
          delivered += 1;
        };
        let truncated: { partial: string } | undefined;
        if (SSE_TYPES.has(media)) {
          const parser = new SseParser();
          for await (const chunk of response.body) {
            throwIfStopped();
            for (const event of parser.push(chunk)) emit(eventData(event.data));
          }
          throwIfStopped();
          const end = parser.end();
          for (const event of end.events) emit(eventData(event.data));
          if (end.end.truncated) truncated = end.end;
        } else {
          const parser = new NdjsonParser();
          for await (const chunk of response.body) {
            throwIfStopped();
            for (const line of parser.push(chunk)) emit(line.value);
          }
          throwIfStopped();
          const end = parser.end();
          for (const line of end.lines) emit(line.value);
          if (end.end.truncated) truncated = end.end;
        }
        if (truncated) {
          const what = SSE_TYPES.has(media) ? 'inside an event (no blank line after it)' : 'inside a line that is not complete JSON';
          const partial = truncated.partial.length > EXCERPT_BYTES ? `${truncated.partial.slice(0, EXCERPT_BYTES)}…` : truncated.partial;
          throw toolError('HTTP_TRUNCATED_EVENT', `the response stream of ${method} ${finalUrl} ended ${what}`, {
            url: finalUrl,
            method,
            phase: 'body',
            status: response.status,
            contentType,
            events: delivered,
            partial,
          });
        }
        const summary: HttpStreamSummary = { status: response.status, url: finalUrl, contentType, events: delivered, data };
        return { output: summary };
      }

      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of response.body) {
        // The egress client enforces maxBodyBytes (HTTP_TOO_LARGE) while we read.
        throwIfStopped();
        total += chunk.byteLength;
        chunks.push(chunk);
      }
      throwIfStopped();
      const body = Buffer.concat(chunks, total);
      if (total === 0) return { output: null };
      const { delta, output } = decodeBody(body, media, contentType);
      throwIfStopped();
      events.delta(delta);
      delivered += 1;
      return { output };
    } catch (error) {
      throw failure(error, 'body');
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onSoft);
    events.hardSignal.removeEventListener('abort', onHard);
    await response?.body.close().catch(() => undefined);
  }
}

/** An SSE event's data: parsed JSON when it is JSON, otherwise the text. */
function eventData(data: string): unknown {
  const parsed = parseJson(data);
  return parsed === undefined ? data : parsed.value;
}

/** A whole (non-streamed) body as the delta's data and the call's output. */
function decodeBody(body: Buffer, media: string, contentType: string): { delta: unknown; output: ToolOutput } {
  if (media === '' || isJsonMedia(media) || isTextMedia(media)) {
    const text = new TextDecoder('utf-8', { fatal: false }).decode(body);
    if (media === '' || isJsonMedia(media)) {
      const parsed = parseJson(text);
      if (parsed !== undefined) return { delta: parsed.value, output: parsed.value };
    }
    return { delta: text, output: richResult([{ type: 'text', text }], text) };
  }
  const binary = { contentType, bytes: body.byteLength, base64: body.toString('base64') };
  if (media.startsWith('image/')) return { delta: binary, output: richResult([{ type: 'image', data: binary.base64, mimeType: media }], binary) };
  return { delta: binary, output: binary };
}

/** Up to {@link EXCERPT_BYTES} of an error response's body; a failure while reading just ends the excerpt. */
async function readExcerpt(response: EgressStreamResponse, throwIfStopped: () => void): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of response.body) {
      chunks.push(chunk);
      total += chunk.byteLength;
      if (total >= EXCERPT_BYTES) break;
    }
  } catch {
    // The excerpt is best effort; the status is the error.
  }
  throwIfStopped();
  const text = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks, total).subarray(0, EXCERPT_BYTES));
  // A character cut at the byte limit decodes to U+FFFD at the end: drop it.
  return total > EXCERPT_BYTES ? text.replace(/\uFFFD$/, '') : text;
}
