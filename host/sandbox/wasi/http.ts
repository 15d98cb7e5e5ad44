/**
 * Synchronous wasi:http 0.2 (`wasi:http/types` and `wasi:http/outgoing-handler`)
 * for guests that run without JSPI.
 *
 * preview2-shim's browser http.js sits on `fetch`, which is asynchronous: a
 * guest blocked in `poll` could never see the response. Here a request is
 * handed to a synchronous `send` callback instead (in toolhost, a blocking
 * round trip to the main thread), so by the time the guest looks at the
 * future-incoming-response it is already resolved, and every pollable this
 * module hands out is ready (save a future whose request body the guest has
 * not finished yet: waiting on that one traps in capabilities.ts's poll).
 *
 * - Bodies are buffered: an outgoing body collects what the guest writes (up
 *   to a cap) and the request is sent when both `handle` was called and the
 *   body was finished (whichever comes last: StarlingMonkey's fetch() calls
 *   `handle` first, then writes and finishes the body); an incoming body is
 *   an input stream over the bytes `send` returned.
 * - A write past the body cap fails with `last-operation-failed` (its io
 *   error maps to `HTTP-request-body-size` through `http-error-code`), as the
 *   WIT says; note that StarlingMonkey traps on any failed body write.
 * - Streams and pollables come from preview2-shim's browser io.js, the same
 *   module instance capabilities.ts uses, because jco's glue checks
 *   `instanceof` against the classes in the `wasi:io/*` imports.
 * - Errors follow jco's conventions: a function whose WIT result has an error
 *   case fails by throwing a plain (non-Error) value, which the glue lowers as
 *   the `err` payload; throwing an Error traps the instance, which is what the
 *   WIT asks for on misuse (e.g. finishing a body whose stream is still open).
 * - Server-side resources (incoming-request, outgoing-response,
 *   response-outparam) exist so the interface is complete, but a tool is a
 *   client: using them traps.
 */

/** One outgoing request, as the host receives it. */
export interface GuestHttpRequest {
  /** Upper-case for the standard methods (`GET`, `POST`, ...); as the guest spelled it for `other`. */
  method: string;
  scheme: 'http' | 'https';
  /** `host[:port]`, never empty. */
  authority: string;
  /** Starts with `/`. */
  pathWithQuery: string;
  headers: Array<[string, Uint8Array]>;
  body: Uint8Array;
  connectTimeoutMs?: number;
  firstByteTimeoutMs?: number;
  betweenBytesTimeoutMs?: number;
}

/** The host's answer: a response, or a wasi:http error code for the guest. */
export type GuestHttpResult =
  | { ok: true; status: number; headers: Array<[string, Uint8Array]>; body: Uint8Array }
  | { ok: false; error: WasiHttpErrorCode };

/** The wasi:http `error-code` variant, as jco represents it (e.g. `{ tag: 'HTTP-request-denied' }`). */
export type WasiHttpErrorCode = { tag: string; val?: unknown };

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

/**
 * Field names a guest may not set, read or send (compared lower-case): the
 * hop-by-hop headers and `host`, which the transport owns. This is wasmtime's
 * default list; response headers with these names are not shown to the guest.
 */
export const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'http2-settings',
]);

// ---------------------------------------------------------------------------
// preview2-shim's browser io.js (the module instance capabilities.ts loads)

interface ShimPollable {
  ready(): boolean;
}
interface ShimInputStream {
  read(len: bigint): Uint8Array;
}
interface ShimOutputStream {
  checkWrite(): bigint;
}
interface InputStreamHandler {
  read?(len: bigint): Uint8Array;
  blockingRead(len: bigint): Uint8Array;
  subscribe?(): ShimPollable;
  drop?(): void;
}
interface OutputStreamHandler {
  checkWrite?(): bigint;
  write(bytes: Uint8Array): void;
  flush?(): void;
  blockingFlush?(): void;
  subscribe?(): ShimPollable;
  drop?(): void;
}
interface BrowserIo {
  inputStreamCreate(handler: InputStreamHandler): ShimInputStream;
  outputStreamCreate(handler: OutputStreamHandler): ShimOutputStream;
  pollableCreate(source?: { ready: () => boolean; wait: () => Promise<void> }): ShimPollable;
  ioErrorCreate(message: string): object;
}

const shimEntry = import.meta.resolve('@bytecodealliance/preview2-shim');
const io = (await import(new URL('../browser/io.js', shimEntry).href)) as BrowserIo;

// ---------------------------------------------------------------------------
// WIT value shapes

type Method = { tag: 'get' | 'head' | 'post' | 'put' | 'delete' | 'connect' | 'options' | 'trace' | 'patch' } | { tag: 'other'; val: string };
type Scheme = { tag: 'HTTP' | 'HTTPS' } | { tag: 'other'; val: string };
type FieldEntry = [string, Uint8Array];
type WitResult<T, E> = { tag: 'ok'; val: T } | { tag: 'err'; val: E };
type HeaderError = { tag: 'invalid-syntax' | 'forbidden' | 'immutable' };

const STANDARD_METHODS = new Set(['get', 'head', 'post', 'put', 'delete', 'connect', 'options', 'trace', 'patch']);
/** RFC 9110 `token`: field names and methods. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 3986 scheme. */
const URI_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
/** `host[:port]`: a registered name or IPv4 address, or a bracketed IP literal; no userinfo. */
const AUTHORITY = /^(?:\[[0-9A-Za-z:.%~_-]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::([0-9]*))?$/;
/** Visible ASCII without `#` (no fragment in a request target); fetch percent-encodes the rest. */
const PATH_WITH_QUERY = /^[\x21-\x22\x24-\x7e]*$/;
/** Bytes of a valid field value: HTAB, visible ASCII and space, obs-text. */
const isFieldValue = (value: Uint8Array): boolean => value.every((byte) => byte === 0x09 || (byte >= 0x20 && byte !== 0x7f));

const WRITE_PERMIT = 1024 * 1024;
const NS_PER_MS = 1_000_000n;

const headerError = (tag: HeaderError['tag']): HeaderError => ({ tag });
const trap = (message: string): Error => new Error(`wasi:http: ${message}`);

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

  // Module-private access to the classes' state (set in their static blocks).
  let lockedFields: (entries: readonly FieldEntry[]) => Fields;
  let fieldsEntries: (fields: Fields) => readonly FieldEntry[];
  let takeRequest: (request: OutgoingRequest) => PendingRequest;
  let newIncomingResponse: (status: number, headers: Fields, body: Uint8Array) => IncomingResponse;
  let newFutureResponse: () => FutureIncomingResponse;
  let resolveFuture: (future: FutureIncomingResponse, result: WitResult<IncomingResponse, WasiHttpErrorCode>) => void;
  /** Called by `handle`: `done` runs now if the body is complete, else when it completes. */
  let whenBodyComplete: (body: OutgoingBody, done: (bytes: WitResult<Uint8Array, WasiHttpErrorCode>) => void) => void;

  class Fields {
    #entries: FieldEntry[] = [];
    #immutable = false;

    static {
      lockedFields = (entries) => {
        const fields = new Fields();
        fields.#entries = entries.map(([name, value]) => [name, value]);
        fields.#immutable = true;
        return fields;
      };
      fieldsEntries = (fields) => fields.#entries;
    }

    static fromList(entries: FieldEntry[]): Fields {
      const fields = new Fields();
      for (const [name, value] of entries) fields.append(name, value);
      return fields;
    }

    get(name: string): Uint8Array[] {
      const key = name.toLowerCase();
      return this.#entries.filter(([entry]) => entry.toLowerCase() === key).map(([, value]) => value.slice());
    }

    has(name: string): boolean {
      const key = name.toLowerCase();
      return this.#entries.some(([entry]) => entry.toLowerCase() === key);
    }

    set(name: string, values: Uint8Array[]): void {
      this.#checkWritable(name);
      if (!values.every(isFieldValue)) throw headerError('invalid-syntax');
      this.#remove(name);
      for (const value of values) this.#entries.push([name, value.slice()]);
    }

    delete(name: string): void {
      this.#checkWritable(name);
      this.#remove(name);
    }

    append(name: string, value: Uint8Array): void {
      this.#checkWritable(name);
      if (!isFieldValue(value)) throw headerError('invalid-syntax');
      this.#entries.push([name, value.slice()]);
    }

    entries(): FieldEntry[] {
      return this.#entries.map(([name, value]) => [name, value.slice()]);
    }

    clone(): Fields {
      const copy = new Fields();
      copy.#entries = this.entries();
      return copy;
    }

    #checkWritable(name: string): void {
      if (this.#immutable) throw headerError('immutable');
      if (!TOKEN.test(name)) throw headerError('invalid-syntax');
      if (FORBIDDEN_HEADERS.has(name.toLowerCase())) throw headerError('forbidden');
    }

    #remove(name: string): void {
      const key = name.toLowerCase();
      this.#entries = this.#entries.filter(([entry]) => entry.toLowerCase() !== key);
    }
  }

  class RequestOptions {
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
  interface PendingRequest {
    request: Omit<GuestHttpRequest, 'body'>;
    body: OutgoingBody | undefined;
  }

  class OutgoingBody {
    #chunks: Uint8Array[] = [];
    #size = 0;
    #stream: ShimOutputStream | undefined;
    #streamTaken = false;
    #streamOpen = false;
    /** Why the body cannot be sent, once a write failed or finish refused it. */
    #failure: WasiHttpErrorCode | undefined;
    #finished = false;
    readonly #contentLength: number | undefined;
    /** Set by `handle`: called once the body is complete (or failed). */
    #onComplete: ((body: WitResult<Uint8Array, WasiHttpErrorCode>) => void) | undefined;

    static {
      whenBodyComplete = (body, done) => {
        body.#onComplete = done;
        if (body.#finished) body.#complete();
      };
    }

    constructor(contentLength: number | undefined) {
      this.#contentLength = contentLength;
    }

    write(): ShimOutputStream {
      if (this.#streamTaken) throw undefined;
      this.#streamTaken = true;
      this.#streamOpen = true;
      const limit = Math.min(maxBodyBytes, this.#contentLength ?? Number.POSITIVE_INFINITY);
      this.#stream = io.outputStreamCreate({
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
            const error = io.ioErrorCreate(`outgoing request body exceeds ${reason}`);
            ioErrorCodes.set(error, code);
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

  class OutgoingRequest {
    #method: Method = { tag: 'get' };
    #scheme: Scheme | undefined;
    #authority: string | undefined;
    #pathWithQuery: string | undefined;
    readonly #headers: readonly FieldEntry[];
    #body: OutgoingBody | undefined;
    #bodyTaken = false;
    #handled = false;

    static {
      takeRequest = (request) => {
        if (request.#handled) throw trap('outgoing-request handled twice');
        request.#handled = true;
        return { request: request.#validate(), body: request.#body };
      };
    }

    /** Takes ownership of `headers` (the guest's handle to them is gone). */
    constructor(headers: Fields) {
      this.#headers = fieldsEntries(headers).map(([name, value]) => [name, value]);
    }

    body(): OutgoingBody {
      if (this.#bodyTaken) throw undefined;
      this.#bodyTaken = true;
      this.#body = new OutgoingBody(contentLength(this.#headers));
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
      if (headerBytes > maxHeaderBytes) throw { tag: 'HTTP-request-header-section-size', val: headerBytes } satisfies WasiHttpErrorCode;
      return {
        method,
        scheme,
        authority: this.#authority,
        pathWithQuery,
        headers: this.#headers.map(([name, value]) => [name, value.slice()]),
      };
    }
  }

  class FutureTrailers {
    #taken = false;

    subscribe(): ShimPollable {
      return io.pollableCreate();
    }

    /** The body was read in full when the response arrived: no trailers, no error. */
    get(): WitResult<WitResult<Fields | undefined, WasiHttpErrorCode>, undefined> {
      if (this.#taken) return { tag: 'err', val: undefined };
      this.#taken = true;
      return { tag: 'ok', val: { tag: 'ok', val: undefined } };
    }
  }

  class IncomingBody {
    readonly #bytes: Uint8Array;
    #offset = 0;
    #streamTaken = false;
    #streamOpen = false;

    constructor(bytes: Uint8Array) {
      this.#bytes = bytes;
    }

    stream(): ShimInputStream {
      if (this.#streamTaken) throw undefined;
      this.#streamTaken = true;
      this.#streamOpen = true;
      const read = (len: bigint): Uint8Array => {
        if (this.#offset >= this.#bytes.byteLength) throw { tag: 'closed' };
        const end = this.#offset + Math.min(Number(len), this.#bytes.byteLength - this.#offset);
        const chunk = this.#bytes.slice(this.#offset, end);
        this.#offset = end;
        return chunk;
      };
      return io.inputStreamCreate({
        read,
        blockingRead: read,
        drop: () => {
          this.#streamOpen = false;
        },
      });
    }

    static finish(body: IncomingBody): FutureTrailers {
      if (body.#streamOpen) throw trap('incoming-body.finish called while its input-stream is still open');
      return new FutureTrailers();
    }
  }

  class IncomingResponse {
    #status = 0;
    #headers: readonly FieldEntry[] = [];
    #body: IncomingBody | undefined;

    static {
      newIncomingResponse = (status, headers, body) => {
        const response = new IncomingResponse();
        response.#status = status;
        response.#headers = fieldsEntries(headers);
        response.#body = new IncomingBody(body);
        return response;
      };
    }

    status(): number {
      return this.#status;
    }

    headers(): Fields {
      return lockedFields(this.#headers);
    }

    consume(): IncomingBody {
      const body = this.#body;
      if (!body) throw undefined;
      this.#body = undefined;
      return body;
    }
  }

  type FutureState = { state: 'pending' } | { state: 'ready'; result: WitResult<IncomingResponse, WasiHttpErrorCode> } | { state: 'taken' };

  class FutureIncomingResponse {
    #state: FutureState = { state: 'pending' };

    static {
      newFutureResponse = () => new FutureIncomingResponse();
      resolveFuture = (future, result) => {
        future.#state = { state: 'ready', result };
      };
    }

    /**
     * Ready once the response (or error) is in, which is at `handle` unless
     * the body was still being written. Waiting on it before finishing the
     * body could never end: capabilities.ts's poll traps instead.
     */
    subscribe(): ShimPollable {
      return io.pollableCreate({ ready: () => this.#state.state !== 'pending', wait: () => Promise.resolve() });
    }

    get(): WitResult<WitResult<IncomingResponse, WasiHttpErrorCode>, undefined> | undefined {
      const current = this.#state;
      if (current.state === 'pending') return undefined;
      if (current.state === 'taken') return { tag: 'err', val: undefined };
      this.#state = { state: 'taken' };
      return { tag: 'ok', val: current.result };
    }
  }

  // Server-side resources: a tool component is a client.
  const serverSide = (what: string): never => {
    throw trap(`${what} is server-side wasi:http, which tools cannot use`);
  };
  class IncomingRequest {
    method(): never {
      return serverSide('incoming-request');
    }
    pathWithQuery(): never {
      return serverSide('incoming-request');
    }
    scheme(): never {
      return serverSide('incoming-request');
    }
    authority(): never {
      return serverSide('incoming-request');
    }
    headers(): never {
      return serverSide('incoming-request');
    }
    consume(): never {
      return serverSide('incoming-request');
    }
  }
  class OutgoingResponse {
    constructor(_headers: Fields) {
      serverSide('outgoing-response');
    }
    statusCode(): never {
      return serverSide('outgoing-response');
    }
    setStatusCode(_status: number): never {
      return serverSide('outgoing-response');
    }
    headers(): never {
      return serverSide('outgoing-response');
    }
    body(): never {
      return serverSide('outgoing-response');
    }
  }
  class ResponseOutparam {
    static set(_param: ResponseOutparam, _response: unknown): never {
      return serverSide('response-outparam');
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
      if (!(request instanceof OutgoingRequest)) throw trap('handle needs an outgoing-request');
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
    OutgoingRequest,
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

/** The Content-Length the request's headers declare, if any (a malformed one counts as none). */
function contentLength(headers: readonly FieldEntry[]): number | undefined {
  const values = headers.filter(([name]) => name.toLowerCase() === 'content-length').map(([, value]) => new TextDecoder().decode(value).trim());
  if (values.length === 0 || !values.every((value) => value === values[0] && /^[0-9]{1,15}$/.test(value))) return undefined;
  return Number(values[0]);
}
