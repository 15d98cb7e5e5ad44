/**
 * The client side of an outgoing wasi:http request: `request-options`,
 * `outgoing-request` and `outgoing-body`.
 *
 * Bodies are buffered: an outgoing body collects what the guest writes (up to
 * a cap) and the request is sent when both `handle` was called and the body
 * was finished (whichever comes last: StarlingMonkey's fetch() calls `handle`
 * first, then writes and finishes the body). A write past the body cap fails
 * with `last-operation-failed` (its io error maps to `HTTP-request-body-size`
 * through `http-error-code`), as the WIT says; note that StarlingMonkey traps
 * on any failed body write.
 *
 * The limits a request obeys come from the instance that made it (an
 * {@link OutgoingContext}): http.ts binds the guest-facing constructor to it.
 */
import { fieldsEntries, lockedFields, TOKEN, type FieldEntry, type Fields } from './http-fields.js';
import { trap, type WitResult } from './http-wit.js';
import type { GuestHttpRequest } from './guest-http.js';
import type { WasiHttpErrorCode } from './http-error-code.js';
import { shimIo, type ShimOutputStream } from './shim.js';

/** What one instance's outgoing requests share: its limits, and the io errors its bodies raised. */
export interface OutgoingContext {
  /** Largest outgoing body, in bytes. */
  maxBodyBytes: number;
  /** Largest outgoing header section (names + values), in bytes. */
  maxHeaderBytes: number;
  /** The wasi:http error behind an io error a body raised (for `http-error-code`). */
  ioErrorCodes: WeakMap<object, WasiHttpErrorCode>;
}

type Method = { tag: 'get' | 'head' | 'post' | 'put' | 'delete' | 'connect' | 'options' | 'trace' | 'patch' } | { tag: 'other'; val: string };
type Scheme = { tag: 'HTTP' | 'HTTPS' } | { tag: 'other'; val: string };

const STANDARD_METHODS = new Set(['get', 'head', 'post', 'put', 'delete', 'connect', 'options', 'trace', 'patch']);
/** RFC 3986 scheme. */
const URI_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
/** `host[:port]`: a registered name or IPv4 address, or a bracketed IP literal; no userinfo. */
const AUTHORITY = /^(?:\[[0-9A-Za-z:.%~_-]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::([0-9]*))?$/;
/** Visible ASCII without `#` (no fragment in a request target); fetch percent-encodes the rest. */
const PATH_WITH_QUERY = /^[\x21-\x22\x24-\x7e]*$/;

const WRITE_PERMIT = 1024 * 1024;

function isMethod(value: unknown): value is Method {
  if (typeof value !== 'object' || value === null) return false;
  const { tag, val } = value as { tag?: unknown; val?: unknown };
  return tag === 'other' ? typeof val === 'string' : typeof tag === 'string' && STANDARD_METHODS.has(tag);
}

function isScheme(value: unknown): value is Scheme {
  if (typeof value !== 'object' || value === null) return false;
  const { tag, val } = value as { tag?: unknown; val?: unknown };
  return tag === 'HTTP' || tag === 'HTTPS' || (tag === 'other' && typeof val === 'string');
}

// Access to the resources' private state for the outgoing handler (set in their static blocks).
let take: (request: OutgoingRequest) => PendingRequest;
let whenComplete: (body: OutgoingBody, done: (bytes: WitResult<Uint8Array, WasiHttpErrorCode>) => void) => void;

export class RequestOptions {
  #connect: bigint | undefined;
  #firstByte: bigint | undefined;
  #betweenBytes: bigint | undefined;

  connectTimeout(): bigint | undefined {
    return this.#connect;
  }
  setConnectTimeout(duration: bigint | undefined): void {
    this.#connect = duration;
  }
  firstByteTimeout(): bigint | undefined {
    return this.#firstByte;
  }
  setFirstByteTimeout(duration: bigint | undefined): void {
    this.#firstByte = duration;
  }
  betweenBytesTimeout(): bigint | undefined {
    return this.#betweenBytes;
  }
  setBetweenBytesTimeout(duration: bigint | undefined): void {
    this.#betweenBytes = duration;
  }
}

/** A request `handle` accepted, waiting for its body (or sent). */
export interface PendingRequest {
  request: Omit<GuestHttpRequest, 'body'>;
  body: OutgoingBody | undefined;
}

/** The body of an outgoing request, buffered until it is finished (or dropped, which fails the request). */
export class OutgoingBody {
  #chunks: Uint8Array[] = [];
  #size = 0;
  #stream: ShimOutputStream | undefined;
  #streamTaken = false;
  #streamOpen = false;
  /** Why the body cannot be sent, once a write failed or finish refused it. */
  #failure: WasiHttpErrorCode | undefined;
  #finished = false;
  readonly #contentLength: number | undefined;
  readonly #context: OutgoingContext;
  /** Set by `handle`: called once the body is complete (or failed). */
  #onComplete: ((body: WitResult<Uint8Array, WasiHttpErrorCode>) => void) | undefined;

  static {
    whenComplete = (body, done) => {
      body.#onComplete = done;
      if (body.#finished) body.#complete();
    };
  }

  constructor(contentLength: number | undefined, context: OutgoingContext) {
    this.#contentLength = contentLength;
    this.#context = context;
  }

  write(): ShimOutputStream {
    if (this.#streamTaken) throw undefined;
    this.#streamTaken = true;
    this.#streamOpen = true;
    const limit = Math.min(this.#context.maxBodyBytes, this.#contentLength ?? Number.POSITIVE_INFINITY);
    this.#stream = shimIo.outputStreamCreate({
      checkWrite: () => {
        if (this.#failure || this.#finished) throw { tag: 'closed' };
        return BigInt(WRITE_PERMIT);
      },
      write: (bytes) => {
        if (this.#failure || this.#finished) throw { tag: 'closed' };
        if (this.#size + bytes.byteLength > limit) {
          const attempted = this.#size + bytes.byteLength;
          const code: WasiHttpErrorCode = { tag: 'HTTP-request-body-size', val: BigInt(attempted) };
          this.#failure = code;
          const reason = limit === this.#contentLength ? `the Content-Length (${limit} bytes)` : `toolhost's limit of ${limit} bytes`;
          const error = shimIo.ioErrorCreate(`outgoing request body exceeds ${reason}`);
          this.#context.ioErrorCodes.set(error, code);
          throw { tag: 'last-operation-failed', val: error };
        }
        this.#chunks.push(bytes.slice());
        this.#size += bytes.byteLength;
      },
      flush: () => {},
      blockingFlush: () => {},
      drop: () => {
        this.#streamOpen = false;
      },
    });
    return this.#stream;
  }

  static finish(body: OutgoingBody, trailers: Fields | undefined): void {
    if (body.#finished) throw trap('outgoing-body.finish called twice');
    if (body.#streamOpen) throw trap('outgoing-body.finish called while its output-stream is still open');
    body.#finished = true;
    let failure = body.#failure;
    if (!failure && trailers && fieldsEntries(trailers).length > 0) {
      failure = { tag: 'internal-error', val: 'toolhost does not send request trailers' };
    }
    if (!failure && body.#contentLength !== undefined && body.#size !== body.#contentLength) {
      failure = { tag: 'HTTP-request-body-size', val: BigInt(body.#size) };
    }
    body.#failure = failure;
    body.#complete();
    if (failure) throw failure;
  }

  #complete(): void {
    const done = this.#onComplete;
    if (!done) return;
    this.#onComplete = undefined;
    if (this.#failure) {
      done({ tag: 'err', val: this.#failure });
      return;
    }
    const bytes = new Uint8Array(this.#size);
    let offset = 0;
    for (const chunk of this.#chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    this.#chunks = [];
    done({ tag: 'ok', val: bytes });
  }

  [Symbol.dispose](): void {
    // Dropped without finish: the WIT says to treat the body as corrupted.
    if (this.#finished) return;
    this.#finished = true;
    this.#failure ??= { tag: 'internal-error', val: 'outgoing body dropped without outgoing-body.finish' };
    this.#complete();
  }
}

/** A request the guest builds; `handle` takes it (http.ts binds `context` for the guest-facing constructor). */
export class OutgoingRequest {
  #method: Method = { tag: 'get' };
  #scheme: Scheme | undefined;
  #authority: string | undefined;
  #pathWithQuery: string | undefined;
  readonly #headers: readonly FieldEntry[];
  #body: OutgoingBody | undefined;
  #bodyTaken = false;
  #handled = false;
  readonly #context: OutgoingContext;

  static {
    take = (request) => {
      if (request.#handled) throw trap('outgoing-request handled twice');
      request.#handled = true;
      return { request: request.#validate(), body: request.#body };
    };
  }

  /** Takes ownership of `headers` (the guest's handle to them is gone). */
  constructor(headers: Fields, context: OutgoingContext) {
    this.#headers = fieldsEntries(headers).map(([name, value]) => [name, value]);
    this.#context = context;
  }

  body(): OutgoingBody {
    if (this.#bodyTaken) throw undefined;
    this.#bodyTaken = true;
    this.#body = new OutgoingBody(contentLength(this.#headers), this.#context);
    return this.#body;
  }

  method(): Method {
    return this.#method;
  }
  setMethod(method: Method): void {
    if (!isMethod(method) || (method.tag === 'other' && !TOKEN.test(method.val))) throw undefined;
    this.#method = method;
  }

  pathWithQuery(): string | undefined {
    return this.#pathWithQuery;
  }
  setPathWithQuery(pathWithQuery: string | undefined): void {
    if (pathWithQuery !== undefined) {
      const shaped = pathWithQuery === '' || pathWithQuery === '*' || pathWithQuery.startsWith('/') || pathWithQuery.startsWith('?');
      if (!shaped || !PATH_WITH_QUERY.test(pathWithQuery)) throw undefined;
    }
    this.#pathWithQuery = pathWithQuery;
  }

  scheme(): Scheme | undefined {
    return this.#scheme;
  }
  setScheme(scheme: Scheme | undefined): void {
    if (scheme !== undefined && (!isScheme(scheme) || (scheme.tag === 'other' && !URI_SCHEME.test(scheme.val)))) throw undefined;
    this.#scheme = scheme;
  }

  authority(): string | undefined {
    return this.#authority;
  }
  setAuthority(authority: string | undefined): void {
    if (authority !== undefined) {
      const match = AUTHORITY.exec(authority);
      const port = match?.[1];
      if (!match || port === '' || (port !== undefined && Number(port) > 65535)) throw undefined;
    }
    this.#authority = authority;
  }

  /** An immutable copy: the request's own headers cannot change after construction. */
  headers(): Fields {
    return lockedFields(this.#headers);
  }

  /** What `handle` sends, or the error-code `handle` fails with. */
  #validate(): Omit<GuestHttpRequest, 'body'> {
    const method = this.#method.tag === 'other' ? this.#method.val : this.#method.tag.toUpperCase();
    // No scheme: HTTPS, as wasmtime chooses. Other schemes cannot be sent.
    const scheme = this.#scheme === undefined || this.#scheme.tag === 'HTTPS' ? 'https' : this.#scheme.tag === 'HTTP' ? 'http' : undefined;
    if (!scheme) throw { tag: 'HTTP-protocol-error' } satisfies WasiHttpErrorCode;
    // HTTP and HTTPS always need an authority.
    if (!this.#authority) throw { tag: 'HTTP-request-URI-invalid' } satisfies WasiHttpErrorCode;
    let pathWithQuery = this.#pathWithQuery ?? '';
    if (pathWithQuery === '*' && method !== 'OPTIONS') throw { tag: 'HTTP-request-URI-invalid' } satisfies WasiHttpErrorCode;
    // `none` (or empty) is the empty path, sent as `/`.
    if (!pathWithQuery.startsWith('/') && pathWithQuery !== '*') pathWithQuery = `/${pathWithQuery}`;
    const headerBytes = this.#headers.reduce((sum, [name, value]) => sum + name.length + value.byteLength + 4, 0);
    if (headerBytes > this.#context.maxHeaderBytes) throw { tag: 'HTTP-request-header-section-size', val: headerBytes } satisfies WasiHttpErrorCode;
    return {
      method,
      scheme,
      authority: this.#authority,
      pathWithQuery,
      headers: this.#headers.map(([name, value]) => [name, value.slice()]),
    };
  }
}

/** Mark `request` handled and return what to send (throws its error-code if it cannot be sent; traps if handled twice). */
export function takeRequest(request: OutgoingRequest): PendingRequest {
  return take(request);
}

/** Called by `handle`: `done` runs now if the body is complete, else when it completes. */
export function whenBodyComplete(body: OutgoingBody, done: (bytes: WitResult<Uint8Array, WasiHttpErrorCode>) => void): void {
  whenComplete(body, done);
}

/** The Content-Length the request's headers declare, if any (a malformed one counts as none). */
function contentLength(headers: readonly FieldEntry[]): number | undefined {
  const values = headers.filter(([name]) => name.toLowerCase() === 'content-length').map(([, value]) => new TextDecoder().decode(value).trim());
  if (values.length === 0 || !values.every((value) => value === values[0] && /^[0-9]{1,15}$/.test(value))) return undefined;
  return Number(values[0]);
}
