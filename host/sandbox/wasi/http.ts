/**
 * Synchronous wasi:http 0.2 (`wasi:http/types` and `wasi:http/outgoing-handler`)
 * for guests that run without JSPI: the factory and the outgoing handler. The
 * resources live in http-fields.ts, http-outgoing.ts and http-incoming.ts.
 *
 * preview2-shim's browser http.js sits on `fetch`, which is asynchronous: a
 * guest blocked in `poll` could never see the response. Here a request is
 * handed to a synchronous `send` callback instead (in toolhost, a blocking
 * round trip to the main thread), so by the time the guest looks at the
 * future-incoming-response it is already resolved, and every pollable this
 * layer hands out is ready (save a future whose request body the guest has
 * not finished yet: waiting on that one traps in capabilities.ts's poll).
 *
 * - Bodies are buffered (see http-outgoing.ts): the request is sent when both
 *   `handle` was called and the body was finished, whichever comes last; an
 *   incoming body is an input stream over the bytes `send` returned.
 * - Streams and pollables come from preview2-shim's browser io.js, the same
 *   module instance capabilities.ts uses (loaded once, in shim.ts), because
 *   jco's glue checks `instanceof` against the classes in the `wasi:io/*`
 *   imports.
 * - Errors follow jco's conventions (see http-wit.ts): a plain thrown value is
 *   the result's `err`; a thrown Error traps the instance.
 * - Server-side resources (incoming-request, outgoing-response,
 *   response-outparam) exist so the interface is complete, but a tool is a
 *   client: using them traps.
 * - The resource classes are shared by every instance; what differs per
 *   instance (the limits, the io errors its bodies raised) is an
 *   {@link OutgoingContext}, bound into that instance's `outgoing-request`
 *   constructor. `handle` accepts only requests made by its own instance.
 */
import type { GuestHttpRequest, GuestHttpResult } from './guest-http.js';
import type { WasiHttpErrorCode } from './http-error-code.js';
import { FORBIDDEN_HEADERS, Fields, TOKEN, isFieldValue, lockedFields, type FieldEntry } from './http-fields.js';
import {
  FutureIncomingResponse,
  FutureTrailers,
  IncomingBody,
  IncomingRequest,
  IncomingResponse,
  OutgoingResponse,
  ResponseOutparam,
  newFutureResponse,
  newIncomingResponse,
  resolveFuture,
} from './http-incoming.js';
import { OutgoingBody, OutgoingRequest, RequestOptions, takeRequest, whenBodyComplete, type OutgoingContext } from './http-outgoing.js';
import { trap, type WitResult } from './http-wit.js';

export { FORBIDDEN_HEADERS };

export type { GuestHttpRequest, GuestHttpResult } from './guest-http.js';
export type { WasiHttpErrorCode };

export interface SyncHttpOptions {
  /** Largest outgoing body a guest may write, in bytes (default 16 MiB). */
  maxRequestBodyBytes?: number;
  /** Largest outgoing header section (names + values), in bytes (default 64 KiB). */
  maxRequestHeaderBytes?: number;
}

export interface SyncHttp {
  /** The `wasi:http/types` namespace (resource classes and `httpErrorCode`). */
  types: Record<string, unknown>;
  /** The `wasi:http/outgoing-handler` namespace. */
  outgoingHandler: { handle(request: unknown, options: unknown): unknown };
}

export const DEFAULT_MAX_REQUEST_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_REQUEST_HEADER_BYTES = 64 * 1024;

const NS_PER_MS = 1_000_000n;

function isErrorCode(value: unknown): value is WasiHttpErrorCode {
  return typeof value === 'object' && value !== null && typeof (value as { tag?: unknown }).tag === 'string';
}

/** A wasi duration (ns, u64) as whole milliseconds, rounded up. */
const durationMs = (ns: bigint | undefined): number | undefined => (ns === undefined ? undefined : Number((ns + NS_PER_MS - 1n) / NS_PER_MS));

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Build one instance's `wasi:http/types` and `wasi:http/outgoing-handler`.
 * `send` is called synchronously, once per request, when the request is
 * complete; whatever it throws reaches the guest as `internal-error`.
 */
export function createSyncHttp(send: (request: GuestHttpRequest) => GuestHttpResult, options: SyncHttpOptions = {}): SyncHttp {
  const maxBodyBytes = options.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES;
  const maxHeaderBytes = options.maxRequestHeaderBytes ?? DEFAULT_MAX_REQUEST_HEADER_BYTES;
  /** The wasi:http error behind an io error this layer raised (for `http-error-code`). */
  const ioErrorCodes = new WeakMap<object, WasiHttpErrorCode>();
  const context: OutgoingContext = { maxBodyBytes, maxHeaderBytes, ioErrorCodes };
  /** This instance's `outgoing-request`: the guest constructs it with its headers only. */
  class InstanceOutgoingRequest extends OutgoingRequest {
    constructor(headers: Fields) {
      super(headers, context);
    }
  }

  /** `send`, with anything but a well-formed answer turned into `internal-error`. */
  function dispatch(request: GuestHttpRequest): WitResult<IncomingResponse, WasiHttpErrorCode> {
    let result: GuestHttpResult;
    try {
      result = send(request);
    } catch (error) {
      return { tag: 'err', val: { tag: 'internal-error', val: describe(error) } };
    }
    if (result?.ok === false) {
      return isErrorCode(result.error) ? { tag: 'err', val: result.error } : { tag: 'err', val: { tag: 'internal-error', val: 'malformed error from the host' } };
    }
    if (result?.ok !== true || !Number.isInteger(result.status) || result.status < 100 || result.status > 999 || !(result.body instanceof Uint8Array) || !Array.isArray(result.headers)) {
      return { tag: 'err', val: { tag: 'internal-error', val: 'malformed response from the host' } };
    }
    const headers: FieldEntry[] = [];
    for (const entry of result.headers) {
      const [name, value] = entry;
      if (typeof name !== 'string' || !TOKEN.test(name) || FORBIDDEN_HEADERS.has(name.toLowerCase())) continue;
      if (!(value instanceof Uint8Array) || !isFieldValue(value)) continue;
      headers.push([name, value]);
    }
    return { tag: 'ok', val: newIncomingResponse(result.status, lockedFields(headers), result.body) };
  }

  const outgoingHandler = {
    /**
     * Send `request` (own: consumed) with `options` (own, optional). Fails
     * (the result's err, thrown as a plain object) when the request cannot be
     * sent at all; otherwise returns a future that is ready now, or once the
     * body is finished if the guest is still writing it.
     */
    handle(request: unknown, options: unknown): FutureIncomingResponse {
      if (!(request instanceof InstanceOutgoingRequest)) throw trap('handle needs an outgoing-request');
      const { request: head, body } = takeRequest(request);
      if (options instanceof RequestOptions) {
        const connect = durationMs(options.connectTimeout());
        const firstByte = durationMs(options.firstByteTimeout());
        const betweenBytes = durationMs(options.betweenBytesTimeout());
        if (connect !== undefined) head.connectTimeoutMs = connect;
        if (firstByte !== undefined) head.firstByteTimeoutMs = firstByte;
        if (betweenBytes !== undefined) head.betweenBytesTimeoutMs = betweenBytes;
      }
      const future = newFutureResponse();
      const complete = (bytes: WitResult<Uint8Array, WasiHttpErrorCode>): void => {
        resolveFuture(future, bytes.tag === 'err' ? bytes : dispatch({ ...head, body: bytes.val }));
      };
      if (body) whenBodyComplete(body, complete);
      else complete({ tag: 'ok', val: new Uint8Array(0) });
      return future;
    },
  };

  const types: Record<string, unknown> = {
    Fields,
    RequestOptions,
    OutgoingRequest: InstanceOutgoingRequest,
    OutgoingBody,
    FutureIncomingResponse,
    IncomingResponse,
    IncomingBody,
    FutureTrailers,
    IncomingRequest,
    OutgoingResponse,
    ResponseOutparam,
    /** The wasi:http error behind a stream's `last-operation-failed`, when this layer raised it. */
    httpErrorCode(error: unknown): WasiHttpErrorCode | undefined {
      return typeof error === 'object' && error !== null ? ioErrorCodes.get(error) : undefined;
    },
  };
  return { types, outgoingHandler };
}
