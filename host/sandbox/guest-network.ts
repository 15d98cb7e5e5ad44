/**
 * A guest's outgoing HTTP, sent from the main thread through the egress
 * checker under the call's network label, connecting to the address the
 * checker approved. Failures reach the guest as wasi:http error codes;
 * refusals are counted for the call's accounting, and only the first few
 * kept (a guest refused in a loop must not grow the host's memory).
 */
import type { ToolContext } from '../core/context.js';
import type { TraceSpan } from '../core/tracing.js';
import { checkerFor, type EgressChecker } from '../net/egress-checker.js';
import { EgressError } from '../net/errors.js';
import { wasiHttpErrorCodeOf } from './wasi/http-error-code.js';
import type { GuestHttpRequest, GuestHttpResult } from './wasi/http.js';

/** Refused requests kept per call (the rest are only counted). */
export const DENIED_REQUESTS_KEPT = 8;
/** Characters of a refused request's URL kept in the accounting. */
const DENIED_URL_CHARS = 512;

export class GuestNetwork {
  /** The first {@link DENIED_REQUESTS_KEPT} refused requests. */
  readonly denied: Array<{ url: string; reason: string }> = [];
  /** Refused requests in all. */
  deniedCount = 0;
  readonly #ctx: ToolContext;
  /** The call's hard signal, read only when a request is made (making it costs every call otherwise). */
  readonly #signal: () => AbortSignal;
  #checker: EgressChecker | undefined;

  constructor(ctx: ToolContext, signal: () => AbortSignal) {
    this.#ctx = ctx;
    this.#signal = signal;
  }

  /**
   * Send the guest's request. `span` (a traced call's host-call span) gets the destination's host and port,
   * the egress decision and the status, never the path or query (they can carry tokens). The call's trace
   * context is added to the request's headers only when the tool's grant says so (`propagate_trace`): a
   * guest's destination is a third party, and by default it learns nothing of the caller's trace.
   */
  async send(request: GuestHttpRequest, span?: TraceSpan): Promise<GuestHttpResult> {
    const url = `${request.scheme}://${request.authority}${request.pathWithQuery.startsWith('/') ? '' : '/'}${request.pathWithQuery}`;
    this.#checker ??= checkerFor(this.#ctx.capabilities.network, this.#ctx.capabilities.egressAllow);
    const decoder = new TextDecoder();
    if (span !== undefined) span.setAttributes(destinationAttributes(request.scheme, request.authority));
    const headers = request.headers.map(([name, value]): [string, string] => [name, decoder.decode(value)]);
    if (span !== undefined && this.#ctx.capabilities.propagateTrace === true && !headers.some(([name]) => name.toLowerCase() === 'traceparent')) {
      const { traceparent, tracestate } = span.carrier();
      if (traceparent !== undefined) headers.push(['traceparent', traceparent]);
      if (tracestate !== undefined) headers.push(['tracestate', tracestate]);
    }
    try {
      // The HTTP client (undici) loads with a guest's first request, not with every host.
      const { egressFetch } = await import('../net/pinned-client.js');
      const response = await egressFetch(
        {
          method: request.method,
          url,
          headers,
          ...(request.body.length > 0 ? { body: request.body } : {}),
          ...(request.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: request.connectTimeoutMs }),
          ...(request.firstByteTimeoutMs === undefined ? {} : { firstByteTimeoutMs: request.firstByteTimeoutMs }),
          ...(request.betweenBytesTimeoutMs === undefined ? {} : { betweenBytesTimeoutMs: request.betweenBytesTimeoutMs }),
          signal: this.#signal(),
        },
        this.#checker,
      );
      const encoder = new TextEncoder();
      span?.setAttributes({ 'toolhost.egress.decision': 'allowed', 'http.response.status_code': response.status });
      return { ok: true, status: response.status, headers: response.headers.map(([name, value]): [string, Uint8Array] => [name, encoder.encode(value)]), body: response.body };
    } catch (error) {
      if (error instanceof EgressError) {
        span?.setAttributes({ 'toolhost.egress.decision': error.toolhostCode === 'NETWORK_DENIED' ? 'denied' : 'failed' });
        span?.fail(error.toolhostCode);
        if (error.toolhostCode === 'NETWORK_DENIED') {
          this.deniedCount += 1;
          if (this.denied.length < DENIED_REQUESTS_KEPT) {
            this.denied.push({ url: url.length > DENIED_URL_CHARS ? `${url.slice(0, DENIED_URL_CHARS)}…` : url, reason: error.message.slice(0, DENIED_URL_CHARS) });
          }
        }
        return { ok: false, error: wasiHttpErrorCodeOf(error) };
      }
      return { ok: false, error: { tag: 'internal-error', val: error instanceof Error ? error.message : String(error) } };
    }
  }
}

/** `server.address` and `server.port` of a guest's request (its authority), for its span. */
function destinationAttributes(scheme: string, authority: string): Record<string, string | number> {
  const at = authority.lastIndexOf('@');
  const hostPort = at === -1 ? authority : authority.slice(at + 1);
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(hostPort);
  const host = match?.[1] ?? hostPort;
  const port = match?.[2] === undefined ? (scheme === 'https' ? 443 : 80) : Number(match[2]);
  return { 'server.address': host.slice(0, 255), 'server.port': port, 'url.scheme': scheme };
}
