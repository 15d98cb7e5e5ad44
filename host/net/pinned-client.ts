/**
 * The pinned HTTP client: outgoing HTTP for guests (the sandbox's wasi:http
 * bridge, on the main thread) and for native tools, always through an
 * {@link EgressChecker}. (Redirects: redirects.ts.)
 *
 * - Every request is checked first; the connection then goes to an address
 *   the checker approved, never to a second DNS answer. The TCP (or TLS)
 *   connection is opened to that IP while the `Host` header and the TLS server
 *   name (SNI, certificate check) stay the URL's host name. When a name has
 *   several approved addresses they are tried in order within one connect
 *   timeout.
 * - Redirects are never followed automatically: the caller sees the 3xx.
 *   `followRedirects` (redirects.ts) follows them for native tools, checking
 *   every hop again and dropping credentials when the origin changes.
 * - The caller cannot choose the `Host` header (it would let a request for an
 *   allowlisted name reach another site on the same server) nor hop-by-hop
 *   or framing headers: {@link CLIENT_MANAGED_HEADERS} are dropped; the client
 *   sets what it needs.
 * - Failures are {@link EgressError}s whose {@link EgressFailure} says what
 *   happened in network terms (the sandbox maps it to a wasi:http
 *   `error-code`, a native tool to its own codes) and whose toolhost code is
 *   `NETWORK_DENIED` or `TOOL_ERROR`.
 * - One connection per request (closed afterwards): no pool can carry a
 *   connection approved for one call into another.
 */
import type { Readable } from 'node:stream';
import { Client, buildConnector, errors as undiciErrors } from 'undici';
import type { EgressAllowed, EgressChecker } from './egress-checker.js';
import { EgressError, egressErrorFromDecision, type EgressFailure } from './errors.js';
import { CLIENT_MANAGED_HEADERS } from './headers.js';

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
  /** Default {@link DEFAULT_FIRST_BYTE_TIMEOUT_MS}; → `response-timeout`. */
  firstByteTimeoutMs?: number;
  /** Default {@link DEFAULT_BETWEEN_BYTES_TIMEOUT_MS}; → `read-timeout`. */
  betweenBytesTimeoutMs?: number;
  /** Default {@link DEFAULT_MAX_BODY_BYTES}; `Infinity` for no cap; → `body-too-large`. */
  maxBodyBytes?: number;
  /** Aborts the request (→ `aborted`, the signal's reason as `cause`). */
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
    throw new EgressError({ kind: 'invalid-method' }, `invalid request method ${JSON.stringify(request.method)}`, { url });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EgressError({ kind: 'invalid-url' }, `${JSON.stringify(url)} is not a valid URL`, { url });
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new EgressError({ kind: 'invalid-url' }, 'URLs with credentials are not allowed (send an Authorization header)', { url });
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
  return new EgressError({ kind: 'body-too-large', size, limit: cap }, `the response body from ${url} exceeds ${cap} bytes`, { url, address });
}

function abortError(url: string, signal: AbortSignal): EgressError {
  return new EgressError({ kind: 'aborted' }, `the request to ${url} was aborted`, { url, cause: signal.reason });
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
  const make = (failure: EgressFailure, what: string): EgressError =>
    new EgressError(failure, `${what} (${url} via ${address}): ${message}`, { url, address, cause: error });
  if (code === 'ECONNREFUSED') return make({ kind: 'connection-refused' }, 'connection refused');
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return make({ kind: 'connection-timeout' }, 'connect timed out');
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return make({ kind: 'response-timeout' }, 'no response in time');
  if (code === 'UND_ERR_BODY_TIMEOUT') return make({ kind: 'read-timeout' }, 'the response body stalled');
  if (code === 'UND_ERR_HEADERS_OVERFLOW') return make({ kind: 'headers-too-large' }, 'the response headers are too large');
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') return make({ kind: 'response-incomplete' }, 'the response body is incomplete');
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') {
    return make({ kind: 'destination-unreachable' }, 'destination unreachable');
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'ECONNABORTED') {
    return make({ kind: 'connection-terminated' }, 'connection closed by the peer');
  }
  if (TLS_CERTIFICATE_CODES.has(code)) return make({ kind: 'tls-certificate-error' }, 'TLS certificate rejected');
  if (code === 'EPROTO' || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return make({ kind: 'tls-error' }, 'TLS failed');
  if (code.startsWith('HPE_')) return make({ kind: 'protocol-error' }, 'malformed HTTP response');
  return make({ kind: 'internal', message }, 'request failed');
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
