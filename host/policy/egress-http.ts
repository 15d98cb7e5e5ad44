/**
 * The pinned HTTP client: outgoing HTTP for guests (the sandbox's wasi:http
 * bridge, on the main thread) and for native tools, always through an
 * {@link EgressChecker}.
 *
 * - Every request is checked first; the connection then goes to an address
 *   the checker approved, never to a second DNS answer. The TCP (or TLS)
 *   connection is opened to that IP while the `Host` header and the TLS server
 *   name (SNI, certificate check) stay the URL's host name. When a name has
 *   several approved addresses they are tried in order within one connect
 *   timeout.
 * - Redirects are never followed automatically: the caller sees the 3xx.
 *   {@link followRedirects} follows them for native tools, checking every hop
 *   again and dropping credentials when the origin changes.
 * - The caller cannot choose the `Host` header (it would let a request for an
 *   allowlisted name reach another site on the same server) nor connection
 *   framing headers: `host`, `connection`, `keep-alive`, `proxy-connection`,
 *   `transfer-encoding`, `upgrade`, `content-length`, `expect` and
 *   `http2-settings` are dropped; the client sets what it needs.
 * - Failures are {@link EgressError}s carrying the wasi:http `error-code`
 *   variant to hand a guest (tags spelled as the WIT cases, which is what
 *   jco's glue expects) and the toolhost code for native tools.
 * - One connection per request (closed afterwards): no pool can carry a
 *   connection approved for one call into another.
 */
import type { Readable } from 'node:stream';
import { Client, buildConnector, errors as undiciErrors } from 'undici';
import { ToolhostError } from '../core/errors.js';
import type { EgressAllowed, EgressChecker, EgressDenied } from './egress.js';

export {
  EgressChecker,
  canonicalAddress,
  classifyAddress,
  parseEgressAllowlist,
  DEFAULT_DNS_TIMEOUT_MS,
} from './egress.js';
export type {
  AddressClass,
  EgressAllowed,
  EgressCheckerOptions,
  EgressDecision,
  EgressDenialCause,
  EgressDenied,
  EgressPolicy,
  EgressResolver,
  EgressRule,
  EgressTarget,
  ResolvedAddress,
} from './egress.js';

// ---------------------------------------------------------------------------
// wasi:http error-code

/** The `DNS-error` payload (record `DNS-error-payload`). */
export interface WasiDnsErrorPayload {
  rcode?: string | undefined;
  infoCode?: number | undefined;
}

/** The `TLS-alert-received` payload. */
export interface WasiTlsAlertReceivedPayload {
  alertId?: number | undefined;
  alertMessage?: string | undefined;
}

/** The `field-size-payload` record. */
export interface WasiFieldSizePayload {
  fieldName?: string | undefined;
  fieldSize?: number | undefined;
}

/**
 * The wasi:http 0.2 `error-code` variant, as jco represents it: `tag` is the
 * WIT case name, `val` its payload (`option<u64>` is a bigint or undefined).
 */
export type WasiHttpErrorCode =
  | { tag: 'DNS-timeout' }
  | { tag: 'DNS-error'; val: WasiDnsErrorPayload }
  | { tag: 'destination-not-found' }
  | { tag: 'destination-unavailable' }
  | { tag: 'destination-IP-prohibited' }
  | { tag: 'destination-IP-unroutable' }
  | { tag: 'connection-refused' }
  | { tag: 'connection-terminated' }
  | { tag: 'connection-timeout' }
  | { tag: 'connection-read-timeout' }
  | { tag: 'connection-write-timeout' }
  | { tag: 'connection-limit-reached' }
  | { tag: 'TLS-protocol-error' }
  | { tag: 'TLS-certificate-error' }
  | { tag: 'TLS-alert-received'; val: WasiTlsAlertReceivedPayload }
  | { tag: 'HTTP-request-denied' }
  | { tag: 'HTTP-request-length-required' }
  | { tag: 'HTTP-request-body-size'; val: bigint | undefined }
  | { tag: 'HTTP-request-method-invalid' }
  | { tag: 'HTTP-request-URI-invalid' }
  | { tag: 'HTTP-request-URI-too-long' }
  | { tag: 'HTTP-request-header-section-size'; val: number | undefined }
  | { tag: 'HTTP-request-header-size'; val: WasiFieldSizePayload | undefined }
  | { tag: 'HTTP-request-trailer-section-size'; val: number | undefined }
  | { tag: 'HTTP-request-trailer-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-incomplete' }
  | { tag: 'HTTP-response-header-section-size'; val: number | undefined }
  | { tag: 'HTTP-response-header-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-body-size'; val: bigint | undefined }
  | { tag: 'HTTP-response-trailer-section-size'; val: number | undefined }
  | { tag: 'HTTP-response-trailer-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-transfer-coding'; val: string | undefined }
  | { tag: 'HTTP-response-content-coding'; val: string | undefined }
  | { tag: 'HTTP-response-timeout' }
  | { tag: 'HTTP-upgrade-failed' }
  | { tag: 'HTTP-protocol-error' }
  | { tag: 'loop-detected' }
  | { tag: 'configuration-error' }
  | { tag: 'internal-error'; val: string | undefined };

/** The wasi:http error-code tags (the WIT case names). */
export type WasiHttpErrorTag = WasiHttpErrorCode['tag'];

const kEgressError = Symbol.for('toolhost.egress-error');

/**
 * A failed egress request. It is a {@link ToolhostError} whose `code` is
 * {@link EgressError.toolhostCode} (`NETWORK_DENIED` for a policy refusal,
 * `TOOL_ERROR` otherwise, with the wasi tag as `details.code`), so a native
 * tool can let it propagate; the sandbox hands {@link EgressError.wasiCode} to
 * the guest.
 */
export class EgressError extends ToolhostError {
  /** The wasi:http `error-code` to give a guest. */
  readonly wasiCode: WasiHttpErrorCode;
  /** `NETWORK_DENIED` when the policy refused the request, `TOOL_ERROR` for any other failure. */
  readonly toolhostCode: 'NETWORK_DENIED' | 'TOOL_ERROR';
  /** The URL of the failed request. */
  readonly url: string;
  /** The checker's refusal, when the policy (or DNS) stopped the request before any connection. */
  readonly decision: EgressDenied | undefined;
  readonly [kEgressError] = true;

  constructor(wasiCode: WasiHttpErrorCode, message: string, options: { url: string; decision?: EgressDenied; address?: string; cause?: unknown }) {
    const toolhostCode = wasiCode.tag === 'HTTP-request-denied' || wasiCode.tag === 'destination-IP-prohibited' ? 'NETWORK_DENIED' : 'TOOL_ERROR';
    const details: Record<string, unknown> = { code: wasiCode.tag, url: options.url };
    if (options.address !== undefined) details.address = options.address;
    if (options.decision) details.denial = options.decision.cause;
    super(toolhostCode, message, options.cause === undefined ? { details } : { details, cause: options.cause });
    this.name = 'EgressError';
    this.wasiCode = wasiCode;
    this.toolhostCode = toolhostCode;
    this.url = options.url;
    this.decision = options.decision;
  }

  /** Recognises egress errors across copies of toolhost (a ToolhostError alone is not one). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kEgressError] === true;
  }
}

/** The error for a request the checker did not allow. */
export function egressErrorFromDecision(decision: EgressDenied, url: string): EgressError {
  return new EgressError(wasiCodeOfDenial(decision), decision.reason, {
    url,
    decision,
    ...(decision.address === undefined ? {} : { address: decision.address }),
  });
}

function wasiCodeOfDenial(decision: EgressDenied): WasiHttpErrorCode {
  switch (decision.cause) {
    case 'invalid-url':
      return { tag: 'HTTP-request-URI-invalid' };
    case 'scheme':
    case 'label':
    case 'not-allowlisted':
      return { tag: 'HTTP-request-denied' };
    case 'prohibited-address':
      return { tag: 'destination-IP-prohibited' };
    case 'dns-timeout':
      return { tag: 'DNS-timeout' };
    case 'dns-failure':
      return { tag: 'DNS-error', val: { rcode: decision.dnsCode, infoCode: undefined } };
  }
}

// ---------------------------------------------------------------------------
// Requests and responses

/** Default connect timeout (TCP, and the TLS handshake for https). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Default time from sending the request to the end of the response headers. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 30_000;
/** Default longest pause between two chunks of the response body. */
export const DEFAULT_BETWEEN_BYTES_TIMEOUT_MS = 30_000;
/** Default cap on a response body: 16 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** An outgoing request. Timeouts that are absent, zero or negative take the defaults. */
export interface EgressRequest {
  /** An HTTP method token (`CONNECT` is refused). */
  method: string;
  /** An absolute http: or https: URL; a fragment is ignored; credentials in it are refused. */
  url: string;
  /** Header pairs, in order; repeated names are sent repeatedly. See the module doc for the dropped ones. */
  headers: Array<[string, string]>;
  body?: Uint8Array;
  /** Default {@link DEFAULT_CONNECT_TIMEOUT_MS}; → `connection-timeout`. */
  connectTimeoutMs?: number;
  /** Default {@link DEFAULT_FIRST_BYTE_TIMEOUT_MS}; → `HTTP-response-timeout`. */
  firstByteTimeoutMs?: number;
  /** Default {@link DEFAULT_BETWEEN_BYTES_TIMEOUT_MS}; → `connection-read-timeout`. */
  betweenBytesTimeoutMs?: number;
  /** Default {@link DEFAULT_MAX_BODY_BYTES}; `Infinity` for no cap; → `HTTP-response-body-size`. */
  maxBodyBytes?: number;
  /** Aborts the request (→ `internal-error` "request aborted", the signal's reason as `cause`). */
  signal?: AbortSignal;
  /**
   * For https: the CA certificates (PEM) to trust instead of Node's default
   * set. A host-side option (tests, private CAs); never taken from a guest.
   */
  ca?: string | Buffer | Array<string | Buffer>;
}

/** A response read in full. */
export interface EgressResponse {
  status: number;
  /** Header pairs (names lower-cased); a repeated header appears once per value. */
  headers: Array<[string, string]>;
  body: Uint8Array;
  /** The IP address the connection went to. */
  address: string;
  /** The URL that was requested. */
  url: string;
}

/**
 * A response body read as it arrives. Iterate it once (to the end, or `break`),
 * or call {@link EgressBody.close} to release the connection without reading.
 * The size cap and the between-bytes timeout apply while iterating; failures
 * are thrown as {@link EgressError}s.
 */
export interface EgressBody extends AsyncIterable<Uint8Array> {
  /** Stop reading and close the connection (idempotent). */
  close(): Promise<void>;
}

/** A response whose body is streamed. */
export interface EgressStreamResponse {
  status: number;
  headers: Array<[string, string]>;
  address: string;
  url: string;
  body: EgressBody;
}

/** A response after {@link followRedirects}: `url` is the final URL, `redirects` the URLs that answered 3xx. */
export type RedirectedResponse<R> = R & { redirects: string[] };

/** Headers the client sets itself (framing, the host): a caller's values are dropped. */
export const CLIENT_MANAGED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
  'http2-settings',
]);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Send a request through the checker and stream its response. A 3xx is
 * returned as is. Resolves once the response headers are in.
 *
 * @throws EgressError for a refusal, a DNS failure, a connection, TLS or
 *   protocol failure, a timeout, or a declared body larger than the cap.
 */
export async function egressStream(request: EgressRequest, checker: EgressChecker): Promise<EgressStreamResponse> {
  const { signal } = request;
  const url = request.url;
  if (signal?.aborted) throw abortError(url, signal);

  if (!TOKEN.test(request.method) || request.method.toUpperCase() === 'CONNECT') {
    throw new EgressError({ tag: 'HTTP-request-method-invalid' }, `invalid request method ${JSON.stringify(request.method)}`, { url });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EgressError({ tag: 'HTTP-request-URI-invalid' }, `${JSON.stringify(url)} is not a valid URL`, { url });
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new EgressError({ tag: 'HTTP-request-URI-invalid' }, 'URLs with credentials are not allowed (send an Authorization header)', { url });
  }

  const decision = await checker.check(parsed);
  if (signal?.aborted) throw abortError(url, signal);
  if (!decision.allowed) throw egressErrorFromDecision(decision, url);

  const maxBodyBytes = request.maxBodyBytes !== undefined && request.maxBodyBytes > 0 ? request.maxBodyBytes : DEFAULT_MAX_BODY_BYTES;
  let connected: string | undefined;
  const client = new Client(parsed.origin, {
    connect: pinnedConnector(decision, positive(request.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS), request.ca, (address) => {
      connected = address;
    }),
    headersTimeout: positive(request.firstByteTimeoutMs, DEFAULT_FIRST_BYTE_TIMEOUT_MS),
    bodyTimeout: positive(request.betweenBytesTimeoutMs, DEFAULT_BETWEEN_BYTES_TIMEOUT_MS),
    pipelining: 1,
  });
  const destroyClient = (): Promise<void> => client.destroy().catch(() => undefined);

  const headers: string[] = [];
  for (const [name, value] of request.headers) {
    if (!CLIENT_MANAGED_HEADERS.has(name.toLowerCase())) headers.push(name, value);
  }

  let response: Awaited<ReturnType<Client['request']>>;
  try {
    response = await client.request({
      method: request.method,
      path: `${parsed.pathname}${parsed.search}`,
      headers,
      body: request.body ?? null,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    await destroyClient();
    throw toEgressError(error, url, connected ?? decision.address, signal);
  }
  const address = connected ?? decision.address;

  const responseHeaders: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) responseHeaders.push([name, item]);
  }

  const declared = response.headers['content-length'];
  // Destroying an undici body emits an error event; nobody else listens for it.
  response.body.on('error', () => undefined);
  if (typeof declared === 'string' && /^\d+$/.test(declared) && Number(declared) > maxBodyBytes) {
    response.body.destroy();
    await destroyClient();
    throw bodySizeError(url, address, BigInt(declared), maxBodyBytes);
  }

  return {
    status: response.statusCode,
    headers: responseHeaders,
    address,
    url,
    body: streamBody(response.body, { url, address, maxBodyBytes, signal, close: destroyClient }),
  };
}

/**
 * Send a request through the checker and read the whole response (at most
 * `maxBodyBytes`). A 3xx is returned as is.
 *
 * @throws EgressError as {@link egressStream}, and while reading the body.
 */
export async function egressFetch(request: EgressRequest, checker: EgressChecker): Promise<EgressResponse> {
  const response = await egressStream(request, checker);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    chunks.push(chunk);
    total += chunk.byteLength;
  }
  // A fresh buffer (not Node's shared pool), safe to transfer to a worker.
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { status: response.status, headers: response.headers, body, address: response.address, url: response.url };
}

/**
 * Follow redirects (301, 302, 303, 307, 308 with a `Location`) for at most
 * `maxHops` hops, checking every hop with the checker before connecting.
 * 303, and 301/302 after a POST, continue as GET without a body; 307 and 308
 * keep the method and body. When the origin changes, `authorization`,
 * `proxy-authorization` and `cookie` are dropped.
 *
 * @throws EgressError as {@link egressFetch}; `loop-detected` past `maxHops`;
 *   `HTTP-protocol-error` for an unparsable `Location`.
 */
export async function followRedirects(request: EgressRequest, checker: EgressChecker, maxHops = 5): Promise<RedirectedResponse<EgressResponse>> {
  return redirectLoop(request, checker, maxHops, egressFetch, async () => undefined);
}

/** {@link followRedirects} with a streamed final body (the bodies of the 3xx answers are discarded). */
export async function followRedirectsStream(request: EgressRequest, checker: EgressChecker, maxHops = 5): Promise<RedirectedResponse<EgressStreamResponse>> {
  return redirectLoop(request, checker, maxHops, egressStream, (response) => response.body.close());
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);
const BODY_HEADERS = new Set(['content-type', 'content-encoding', 'content-language', 'content-location']);

async function redirectLoop<R extends { status: number; headers: Array<[string, string]>; url: string }>(
  request: EgressRequest,
  checker: EgressChecker,
  maxHops: number,
  send: (request: EgressRequest, checker: EgressChecker) => Promise<R>,
  discard: (response: R) => Promise<void>,
): Promise<RedirectedResponse<R>> {
  const redirects: string[] = [];
  let current = request;
  for (;;) {
    const response = await send(current, checker);
    const location = response.headers.find(([name]) => name === 'location')?.[1];
    if (!REDIRECTS.has(response.status) || location === undefined) return Object.assign(response, { redirects });
    await discard(response);
    if (redirects.length >= maxHops) {
      throw new EgressError({ tag: 'loop-detected' }, `more than ${maxHops} redirects (last from ${current.url})`, { url: current.url });
    }
    let next: URL;
    try {
      next = new URL(location, current.url);
    } catch {
      throw new EgressError({ tag: 'HTTP-protocol-error' }, `invalid redirect location ${JSON.stringify(location)} from ${current.url}`, { url: current.url });
    }
    next.hash = '';
    redirects.push(current.url);
    const method = current.method.toUpperCase();
    const toGet = response.status === 303 ? method !== 'HEAD' : (response.status === 301 || response.status === 302) && method === 'POST';
    const crossOrigin = new URL(current.url).origin !== next.origin;
    const headers = current.headers.filter(([name]) => {
      const lower = name.toLowerCase();
      return !(crossOrigin && CREDENTIAL_HEADERS.has(lower)) && !(toGet && BODY_HEADERS.has(lower));
    });
    const { body, ...rest } = current;
    current = { ...rest, method: toGet ? 'GET' : current.method, url: next.href, headers, ...(toGet || body === undefined ? {} : { body }) };
  }
}

// ---------------------------------------------------------------------------
// Internals

function positive(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * An undici connector that ignores the URL's host and connects to the
 * approved addresses in order (the next on refusal, unreachability or
 * timeout) within one connect deadline. SNI and the certificate check use the
 * URL's host name (undici derives them from the origin).
 */
function pinnedConnector(
  decision: EgressAllowed,
  timeoutMs: number,
  ca: EgressRequest['ca'],
  onConnected: (address: string) => void,
): buildConnector.connector {
  return (options, callback) => {
    const deadline = Date.now() + timeoutMs;
    const attempt = (index: number): void => {
      const target = decision.addresses[index];
      if (!target) {
        callback(new undiciErrors.ConnectTimeoutError(`connect to ${decision.host} timed out`), null);
        return;
      }
      const connect = buildConnector({ timeout: Math.max(1, deadline - Date.now()), ...(ca === undefined ? {} : { ca }) });
      connect({ ...options, hostname: target.address }, (...result) => {
        const [error, socket] = result;
        if (error === null) {
          onConnected(target.address);
          callback(null, socket);
          return;
        }
        if (RETRY_NEXT_ADDRESS.has(errorCode(error) ?? '') && index + 1 < decision.addresses.length && Date.now() < deadline) {
          attempt(index + 1);
          return;
        }
        callback(error, null);
      });
    };
    attempt(0);
  };
}

const RETRY_NEXT_ADDRESS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

function streamBody(
  body: Readable,
  context: { url: string; address: string; maxBodyBytes: number; signal: AbortSignal | undefined; close: () => Promise<void> },
): EgressBody {
  let closed = false;
  let started = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    body.destroy();
    await context.close();
  };
  async function* read(): AsyncGenerator<Uint8Array, void, undefined> {
    let total = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        total += chunk.byteLength;
        if (total > context.maxBodyBytes) throw bodySizeError(context.url, context.address, BigInt(total), context.maxBodyBytes);
        yield chunk;
      }
    } catch (error) {
      throw toEgressError(error, context.url, context.address, context.signal);
    } finally {
      await close();
    }
  }
  return {
    close,
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      if (started) throw new Error('an egress response body can be read only once');
      started = true;
      if (closed) throw new Error('the egress response body was closed');
      return read();
    },
  };
}

function bodySizeError(url: string, address: string, size: bigint, cap: number): EgressError {
  return new EgressError({ tag: 'HTTP-response-body-size', val: size }, `the response body from ${url} exceeds ${cap} bytes`, { url, address });
}

function abortError(url: string, signal: AbortSignal): EgressError {
  return new EgressError({ tag: 'internal-error', val: 'request aborted' }, `the request to ${url} was aborted`, { url, cause: signal.reason });
}

const TLS_CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_TLS_CERT_ALTNAME_FORMAT',
]);

/** Turn whatever undici or Node threw into an {@link EgressError}. */
function toEgressError(error: unknown, url: string, address: string, signal: AbortSignal | undefined): EgressError {
  if (error instanceof EgressError) return error;
  if (signal?.aborted) return abortError(url, signal);
  const code = errorCode(error) ?? '';
  const message = error instanceof Error ? error.message : String(error);
  const make = (wasiCode: WasiHttpErrorCode, what: string): EgressError =>
    new EgressError(wasiCode, `${what} (${url} via ${address}): ${message}`, { url, address, cause: error });
  if (code === 'ECONNREFUSED') return make({ tag: 'connection-refused' }, 'connection refused');
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return make({ tag: 'connection-timeout' }, 'connect timed out');
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return make({ tag: 'HTTP-response-timeout' }, 'no response in time');
  if (code === 'UND_ERR_BODY_TIMEOUT') return make({ tag: 'connection-read-timeout' }, 'the response body stalled');
  if (code === 'UND_ERR_HEADERS_OVERFLOW') return make({ tag: 'HTTP-response-header-section-size', val: undefined }, 'the response headers are too large');
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') return make({ tag: 'HTTP-response-incomplete' }, 'the response body is incomplete');
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') {
    return make({ tag: 'destination-IP-unroutable' }, 'destination unreachable');
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'ECONNABORTED') {
    return make({ tag: 'connection-terminated' }, 'connection closed by the peer');
  }
  if (TLS_CERTIFICATE_CODES.has(code)) return make({ tag: 'TLS-certificate-error' }, 'TLS certificate rejected');
  if (code === 'EPROTO' || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return make({ tag: 'TLS-protocol-error' }, 'TLS failed');
  if (code.startsWith('HPE_')) return make({ tag: 'HTTP-protocol-error' }, 'malformed HTTP response');
  return make({ tag: 'internal-error', val: message }, 'request failed');
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string') return code;
  // An AggregateError (several connect attempts) carries the codes of its errors.
  const { errors } = error as { errors?: unknown };
  if (Array.isArray(errors)) return errorCode(errors[0]);
  return undefined;
}
