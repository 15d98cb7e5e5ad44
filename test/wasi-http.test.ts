/**
 * The synchronous wasi:http layer (host/sandbox/wasi/http.ts): first driven
 * directly, the way jco's glue calls it for a guest, then end to end with a
 * componentize-js guest whose fetch() runs on it in a worker thread.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { beforeAll, describe, expect, it } from 'vitest';
import { ComponentCache } from '../host/sandbox/load/component-cache.js';
import { createSyncHttp, type GuestHttpRequest, type GuestHttpResult, type SyncHttpOptions } from '../host/sandbox/wasi/http.js';
import { fixture, sharedCacheDir } from './helpers.js';

// ---------------------------------------------------------------------------
// The classes as the guest's glue sees them

type Entry = [string, Uint8Array];
type Result<T, E> = { tag: 'ok'; val: T } | { tag: 'err'; val: E };
type ErrorCode = { tag: string; val?: unknown };

interface Pollable {
  ready(): boolean;
}
interface OutputStream {
  checkWrite(): bigint;
  write(bytes: Uint8Array): void;
  blockingWriteAndFlush(bytes: Uint8Array): void;
  blockingFlush(): void;
  subscribe(): Pollable;
  [Symbol.dispose](): void;
}
interface InputStream {
  read(len: bigint): Uint8Array;
  blockingRead(len: bigint): Uint8Array;
  skip(len: bigint): bigint;
  [Symbol.dispose](): void;
}
interface Fields {
  get(name: string): Uint8Array[];
  has(name: string): boolean;
  set(name: string, values: Uint8Array[]): void;
  delete(name: string): void;
  append(name: string, value: Uint8Array): void;
  entries(): Entry[];
  clone(): Fields;
}
interface OutgoingRequest {
  body(): OutgoingBody;
  method(): { tag: string; val?: string };
  setMethod(method: { tag: string; val?: string }): void;
  pathWithQuery(): string | undefined;
  setPathWithQuery(value: string | undefined): void;
  scheme(): { tag: string; val?: string } | undefined;
  setScheme(scheme: { tag: string; val?: string } | undefined): void;
  authority(): string | undefined;
  setAuthority(value: string | undefined): void;
  headers(): Fields;
}
type OutgoingBody = { write(): OutputStream; [Symbol.dispose](): void };
interface RequestOptions {
  connectTimeout(): bigint | undefined;
  setConnectTimeout(duration: bigint | undefined): void;
  setFirstByteTimeout(duration: bigint | undefined): void;
  setBetweenBytesTimeout(duration: bigint | undefined): void;
}
interface FutureIncomingResponse {
  subscribe(): Pollable;
  get(): Result<Result<IncomingResponse, ErrorCode>, undefined> | undefined;
}
interface IncomingResponse {
  status(): number;
  headers(): Fields;
  consume(): IncomingBody;
}
type IncomingBody = { stream(): InputStream };
interface FutureTrailers {
  subscribe(): Pollable;
  get(): Result<Result<Fields | undefined, ErrorCode>, undefined> | undefined;
}
interface HttpTypes {
  Fields: { new (): Fields; fromList(entries: Entry[]): Fields };
  OutgoingRequest: new (headers: Fields) => OutgoingRequest;
  OutgoingBody: { finish(body: OutgoingBody, trailers: Fields | undefined): void };
  RequestOptions: new () => RequestOptions;
  FutureIncomingResponse: { prototype: FutureIncomingResponse };
  IncomingBody: { finish(body: IncomingBody): FutureTrailers };
  IncomingRequest: { prototype: { method(): unknown } };
  OutgoingResponse: new (headers: Fields) => unknown;
  ResponseOutparam: { set(param: unknown, response: unknown): void };
  httpErrorCode(error: unknown): ErrorCode | undefined;
}
interface Handler {
  handle(request: OutgoingRequest, options: RequestOptions | undefined): FutureIncomingResponse;
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (value: Uint8Array): string => new TextDecoder().decode(value);
const textEntries = (entries: Entry[]): Array<[string, string]> => entries.map(([name, value]) => [name, text(value)]);

/** What `fn` threw (the test fails if it returned). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** A layer whose `send` records requests and answers from `answer`. */
function setup(answer: (request: GuestHttpRequest) => GuestHttpResult, options?: SyncHttpOptions) {
  const sent: GuestHttpRequest[] = [];
  const http = createSyncHttp((request) => {
    sent.push(request);
    return answer(request);
  }, options);
  return { sent, types: http.types as unknown as HttpTypes, handler: http.outgoingHandler as unknown as Handler };
}

const okResponse = (body: string, headers: Array<[string, string]> = [], status = 200): GuestHttpResult => ({
  ok: true,
  status,
  headers: headers.map(([name, value]) => [name, bytes(value)]),
  body: bytes(body),
});

/** Read an input stream to its end, `chunk` bytes at a time, as a guest would. */
function readAll(stream: InputStream, chunk: bigint): { body: string; reads: number } {
  const parts: Uint8Array[] = [];
  for (;;) {
    const error = (() => {
      try {
        parts.push(stream.blockingRead(chunk));
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    if (error !== undefined) {
      expect(error).toEqual({ tag: 'closed' });
      break;
    }
  }
  return { body: parts.map(text).join(''), reads: parts.length };
}

/** The response a resolved future holds (fails on an error code). */
function responseOf(future: FutureIncomingResponse): IncomingResponse {
  const outcome = future.get();
  if (outcome?.tag !== 'ok' || outcome.val.tag !== 'ok') throw new Error(`no response: ${JSON.stringify(outcome)}`);
  return outcome.val.val;
}

describe('wasi:http types and outgoing-handler (synchronous)', () => {
  it('sends a POST the way a guest builds it and hands back the response', () => {
    const { sent, types, handler } = setup(() => okResponse('hello, world', [['Content-Type', 'text/plain'], ['X-Multi', 'a'], ['x-multi', 'b']], 201));

    const headers = types.Fields.fromList([['Content-Type', bytes('application/json')]]);
    headers.append('X-Trace', bytes('t1'));
    const request = new types.OutgoingRequest(headers);
    request.setMethod({ tag: 'post' });
    request.setScheme({ tag: 'HTTP' });
    request.setAuthority('127.0.0.1:1234');
    request.setPathWithQuery('/x?y');
    expect(request.method()).toEqual({ tag: 'post' });
    expect(request.scheme()).toEqual({ tag: 'HTTP' });
    expect(request.authority()).toBe('127.0.0.1:1234');
    expect(request.pathWithQuery()).toBe('/x?y');

    const body = request.body();
    const stream = body.write();
    expect(stream.subscribe().ready()).toBe(true);
    const permit = stream.checkWrite();
    expect(permit).toBeGreaterThan(0n);
    stream.write(bytes('{"a":'));
    stream.blockingWriteAndFlush(bytes('1}'));
    stream.blockingFlush();
    stream[Symbol.dispose]();
    types.OutgoingBody.finish(body, undefined);
    expect(sent).toHaveLength(0);

    const future = handler.handle(request, undefined);
    expect(sent).toHaveLength(1);
    expect(future.subscribe().ready()).toBe(true);
    const [first] = sent;
    expect(first).toMatchObject({ method: 'POST', scheme: 'http', authority: '127.0.0.1:1234', pathWithQuery: '/x?y' });
    expect(textEntries(first!.headers)).toEqual([
      ['Content-Type', 'application/json'],
      ['X-Trace', 't1'],
    ]);
    expect(text(first!.body)).toBe('{"a":1}');
    expect(first!.connectTimeoutMs).toBeUndefined();

    const response = responseOf(future);
    expect(future.get()).toEqual({ tag: 'err', val: undefined });
    expect(response.status()).toBe(201);
    const responseHeaders = response.headers();
    expect(textEntries(responseHeaders.entries())).toEqual([
      ['Content-Type', 'text/plain'],
      ['X-Multi', 'a'],
      ['x-multi', 'b'],
    ]);
    expect(responseHeaders.get('x-MULTI').map(text)).toEqual(['a', 'b']);

    const incoming = response.consume();
    const input = incoming.stream();
    const { body: received, reads } = readAll(input, 5n);
    expect(received).toBe('hello, world');
    expect(reads).toBe(3);
    input[Symbol.dispose]();
    const trailers = types.IncomingBody.finish(incoming);
    expect(trailers.subscribe().ready()).toBe(true);
    expect(trailers.get()).toEqual({ tag: 'ok', val: { tag: 'ok', val: undefined } });
    expect(trailers.get()).toEqual({ tag: 'err', val: undefined });
  });

  it('sends a GET with defaults: method GET, scheme HTTPS, path /, empty body when body() is never called', () => {
    const { sent, types, handler } = setup(() => okResponse(''));
    const request = new types.OutgoingRequest(new types.Fields());
    expect(request.method()).toEqual({ tag: 'get' });
    expect(request.scheme()).toBeUndefined();
    expect(request.pathWithQuery()).toBeUndefined();
    request.setAuthority('example.com');
    const response = responseOf(handler.handle(request, undefined));
    expect(sent[0]).toMatchObject({ method: 'GET', scheme: 'https', authority: 'example.com', pathWithQuery: '/', headers: [] });
    expect(sent[0]!.body.byteLength).toBe(0);
    // An empty body: the first read reports the end.
    expect(thrown(() => response.consume().stream().read(10n))).toEqual({ tag: 'closed' });
  });

  it('passes methods and paths through: other(...) as spelled, ?query gets a leading /', () => {
    const { sent, types, handler } = setup(() => okResponse(''));
    const request = new types.OutgoingRequest(new types.Fields());
    request.setMethod({ tag: 'other', val: 'PROPFIND' });
    request.setScheme({ tag: 'HTTPS' });
    request.setAuthority('[::1]:8443');
    request.setPathWithQuery('?a=1');
    handler.handle(request, undefined);
    expect(sent[0]).toMatchObject({ method: 'PROPFIND', scheme: 'https', authority: '[::1]:8443', pathWithQuery: '/?a=1' });
  });

  it('converts request-options timeouts from nanoseconds to milliseconds', () => {
    const { sent, types, handler } = setup(() => okResponse(''));
    const options = new types.RequestOptions();
    expect(options.connectTimeout()).toBeUndefined();
    options.setConnectTimeout(1_500_000n);
    options.setFirstByteTimeout(2_000_000_000n);
    options.setBetweenBytesTimeout(undefined);
    expect(options.connectTimeout()).toBe(1_500_000n);
    const request = new types.OutgoingRequest(new types.Fields());
    request.setAuthority('example.com');
    handler.handle(request, options);
    expect(sent[0]).toMatchObject({ connectTimeoutMs: 2, firstByteTimeoutMs: 2000 });
    expect(sent[0]!.betweenBytesTimeoutMs).toBeUndefined();
  });

  describe('fields', () => {
    it('keeps names as given, compares them case-insensitively, and keeps order', () => {
      const { types } = setup(() => okResponse(''));
      const fields = new types.Fields();
      fields.append('Accept', bytes('text/html'));
      fields.append('X-A', bytes('1'));
      fields.append('accept', bytes('*/*'));
      expect(fields.has('ACCEPT')).toBe(true);
      expect(fields.has('missing')).toBe(false);
      expect(fields.get('accept').map(text)).toEqual(['text/html', '*/*']);
      expect(fields.get('missing')).toEqual([]);
      expect(fields.get('bad name')).toEqual([]);
      expect(fields.has('bad name')).toBe(false);

      fields.set('ACCEPT', [bytes('application/json')]);
      expect(textEntries(fields.entries())).toEqual([
        ['X-A', '1'],
        ['ACCEPT', 'application/json'],
      ]);
      fields.delete('x-a');
      fields.delete('never-there');
      expect(textEntries(fields.entries())).toEqual([['ACCEPT', 'application/json']]);
      // An empty value is present.
      fields.set('X-Empty', [bytes('')]);
      expect(fields.get('x-empty')).toEqual([new Uint8Array(0)]);
    });

    it('clones into an independent, mutable copy; entries are copies', () => {
      const { types } = setup(() => okResponse(''));
      const fields = types.Fields.fromList([['A', bytes('1')]]);
      const copy = fields.clone();
      copy.append('B', bytes('2'));
      expect(textEntries(fields.entries())).toEqual([['A', '1']]);
      expect(textEntries(copy.entries())).toEqual([
        ['A', '1'],
        ['B', '2'],
      ]);
      fields.entries()[0]![1][0] = 0x5a;
      expect(text(fields.get('a')[0]!)).toBe('1');
    });

    it('rejects invalid names and values with invalid-syntax', () => {
      const { types } = setup(() => okResponse(''));
      const fields = new types.Fields();
      expect(thrown(() => fields.append('bad name', bytes('x')))).toEqual({ tag: 'invalid-syntax' });
      expect(thrown(() => fields.append('', bytes('x')))).toEqual({ tag: 'invalid-syntax' });
      expect(thrown(() => fields.append('X-Ok', bytes('line\r\nbreak')))).toEqual({ tag: 'invalid-syntax' });
      expect(thrown(() => fields.set('X-Ok', [bytes('fine'), new Uint8Array([0])]))).toEqual({ tag: 'invalid-syntax' });
      expect(thrown(() => fields.delete('bad:name'))).toEqual({ tag: 'invalid-syntax' });
      expect(thrown(() => types.Fields.fromList([['ok', bytes('1')], ['bad name', bytes('2')]]))).toEqual({ tag: 'invalid-syntax' });
      // obs-text and HTAB are allowed in values.
      fields.append('X-Ok', new Uint8Array([0x61, 0x09, 0xe9]));
      expect(fields.get('x-ok')).toHaveLength(1);
    });

    it('refuses forbidden (hop-by-hop and Host) names with forbidden', () => {
      const { types } = setup(() => okResponse(''));
      const fields = new types.Fields();
      for (const name of ['Host', 'connection', 'Keep-Alive', 'Transfer-Encoding', 'Upgrade', 'Proxy-Connection', 'proxy-authorization', 'HTTP2-Settings']) {
        expect(thrown(() => fields.append(name, bytes('x')))).toEqual({ tag: 'forbidden' });
        expect(thrown(() => fields.set(name, [bytes('x')]))).toEqual({ tag: 'forbidden' });
      }
      expect(thrown(() => types.Fields.fromList([['Host', bytes('evil.test')]]))).toEqual({ tag: 'forbidden' });
      expect(fields.entries()).toEqual([]);
    });

    it("makes a request's and a response's headers immutable", () => {
      const { types, handler } = setup(() => okResponse('', [['X-R', '1']]));
      const request = new types.OutgoingRequest(types.Fields.fromList([['X-Q', bytes('1')]]));
      request.setAuthority('example.com');
      const requestHeaders = request.headers();
      expect(textEntries(requestHeaders.entries())).toEqual([['X-Q', '1']]);
      for (const fields of [requestHeaders]) {
        expect(thrown(() => fields.append('X-New', bytes('1')))).toEqual({ tag: 'immutable' });
        expect(thrown(() => fields.set('X-Q', [bytes('2')]))).toEqual({ tag: 'immutable' });
        expect(thrown(() => fields.delete('X-Q'))).toEqual({ tag: 'immutable' });
      }
      const response = responseOf(handler.handle(request, undefined));
      const responseHeaders = response.headers();
      expect(thrown(() => responseHeaders.append('X-New', bytes('1')))).toEqual({ tag: 'immutable' });
      expect(thrown(() => responseHeaders.delete('X-R'))).toEqual({ tag: 'immutable' });
      // A clone is mutable again.
      const copy = responseHeaders.clone();
      copy.append('X-New', bytes('1'));
      expect(copy.has('x-new')).toBe(true);
      expect(response.headers().has('x-new')).toBe(false);
    });
  });

  describe('once-only resources', () => {
    it('gives out a body, its stream, a response body and its stream once each; later calls fail with err(unit)', () => {
      const { types, handler } = setup(() => okResponse('x'));
      const request = new types.OutgoingRequest(new types.Fields());
      request.setAuthority('example.com');
      const body = request.body();
      expect(thrown(() => request.body())).toBeUndefined();
      const stream = body.write();
      expect(thrown(() => body.write())).toBeUndefined();
      stream[Symbol.dispose]();
      types.OutgoingBody.finish(body, undefined);
      const future = handler.handle(request, undefined);
      const response = responseOf(future);
      expect(future.get()).toEqual({ tag: 'err', val: undefined });
      const incoming = response.consume();
      expect(thrown(() => response.consume())).toBeUndefined();
      incoming.stream();
      expect(thrown(() => incoming.stream())).toBeUndefined();
    });

    it('traps (throws an Error) when a body is finished while its stream is open', () => {
      const { types, handler } = setup(() => okResponse('data'));
      const request = new types.OutgoingRequest(new types.Fields());
      request.setAuthority('example.com');
      const body = request.body();
      body.write();
      expect(thrown(() => types.OutgoingBody.finish(body, undefined))).toBeInstanceOf(Error);

      const other = new types.OutgoingRequest(new types.Fields());
      other.setAuthority('example.com');
      const incoming = responseOf(handler.handle(other, undefined)).consume();
      incoming.stream();
      expect(thrown(() => types.IncomingBody.finish(incoming))).toBeInstanceOf(Error);
    });
  });

  describe('setters validate', () => {
    it('rejects bad methods, schemes, authorities and paths with err(unit), keeping the old value', () => {
      const { types } = setup(() => okResponse(''));
      const request = new types.OutgoingRequest(new types.Fields());
      expect(thrown(() => request.setMethod({ tag: 'other', val: 'GE T' }))).toBeUndefined();
      expect(thrown(() => request.setMethod({ tag: 'other', val: '' }))).toBeUndefined();
      expect(request.method()).toEqual({ tag: 'get' });
      expect(thrown(() => request.setScheme({ tag: 'other', val: '1http' }))).toBeUndefined();
      request.setScheme({ tag: 'other', val: 'ftp' });
      for (const authority of ['user@example.com', 'example.com:99999', 'example.com:', 'exa mple.com', '', '[::1']) {
        expect(thrown(() => request.setAuthority(authority))).toBeUndefined();
      }
      request.setAuthority('example.com:8080');
      request.setAuthority(undefined);
      for (const path of ['x', '/a b', '/a#frag', '/caf\u00e9', '/\n']) {
        expect(thrown(() => request.setPathWithQuery(path))).toBeUndefined();
      }
      request.setPathWithQuery('/a/b?c=d&e={f}|g');
      expect(request.pathWithQuery()).toBe('/a/b?c=d&e={f}|g');
    });
  });

  describe('handle', () => {
    function request(types: HttpTypes, configure: (request: OutgoingRequest) => void): OutgoingRequest {
      const created = new types.OutgoingRequest(new types.Fields());
      configure(created);
      return created;
    }

    it('fails with a plain error-code object (the result err) for requests it cannot send, without sending', () => {
      const { sent, types, handler } = setup(() => okResponse(''));
      const otherScheme = thrown(() => handler.handle(request(types, (r) => (r.setScheme({ tag: 'other', val: 'ftp' }), r.setAuthority('example.com'))), undefined));
      expect(otherScheme).toEqual({ tag: 'HTTP-protocol-error' });
      expect(otherScheme).not.toBeInstanceOf(Error);
      expect(thrown(() => handler.handle(request(types, () => {}), undefined))).toEqual({ tag: 'HTTP-request-URI-invalid' });
      expect(sent).toHaveLength(0);
    });

    it("resolves the future with the host's error code", () => {
      const { types, handler } = setup(() => ({ ok: false, error: { tag: 'HTTP-request-denied' } }));
      const future = handler.handle(request(types, (r) => r.setAuthority('example.com')), undefined);
      expect(future.subscribe().ready()).toBe(true);
      expect(future.get()).toEqual({ tag: 'ok', val: { tag: 'err', val: { tag: 'HTTP-request-denied' } } });
      expect(future.get()).toEqual({ tag: 'err', val: undefined });
    });

    it('turns a throwing or malformed send into internal-error', () => {
      const throwing = setup(() => {
        throw new Error('bridge broke');
      });
      const future = throwing.handler.handle(request(throwing.types, (r) => r.setAuthority('example.com')), undefined);
      expect(future.get()).toEqual({ tag: 'ok', val: { tag: 'err', val: { tag: 'internal-error', val: 'bridge broke' } } });

      const malformed = setup(() => ({ nonsense: true }) as unknown as GuestHttpResult);
      const second = malformed.handler.handle(request(malformed.types, (r) => r.setAuthority('example.com')), undefined);
      expect(second.get()).toMatchObject({ tag: 'ok', val: { tag: 'err', val: { tag: 'internal-error' } } });

      const badStatus = setup(() => okResponse('', [], 42));
      const third = badStatus.handler.handle(request(badStatus.types, (r) => r.setAuthority('example.com')), undefined);
      expect(third.get()).toMatchObject({ tag: 'ok', val: { tag: 'err', val: { tag: 'internal-error' } } });
    });

    it('hides hop-by-hop response headers from the guest', () => {
      const { types, handler } = setup(() => okResponse('', [['Connection', 'close'], ['Transfer-Encoding', 'chunked'], ['X-Kept', '1'], ['bad name', 'x']]));
      const response = responseOf(handler.handle(request(types, (r) => r.setAuthority('example.com')), undefined));
      expect(textEntries(response.headers().entries())).toEqual([['X-Kept', '1']]);
    });

    it('waits for a body still being written: the request is sent when the body is finished', () => {
      // StarlingMonkey's fetch() calls handle before it writes the body.
      const { sent, types, handler } = setup((req) => okResponse(`got ${text(req.body)}`));
      const req = request(types, (r) => (r.setMethod({ tag: 'put' }), r.setAuthority('example.com')));
      const body = req.body();
      const stream = body.write();
      const future = handler.handle(req, undefined);
      const pollable = future.subscribe();
      expect(pollable.ready()).toBe(false);
      expect(future.get()).toBeUndefined();
      stream.checkWrite();
      stream.write(bytes('late body'));
      stream[Symbol.dispose]();
      expect(sent).toHaveLength(0);
      types.OutgoingBody.finish(body, undefined);
      expect(sent).toHaveLength(1);
      expect(pollable.ready()).toBe(true);
      expect(readAll(responseOf(future).consume().stream(), 100n).body).toBe('got late body');
    });

    it('fails the request when its body is dropped without finish', () => {
      const { sent, types, handler } = setup(() => okResponse(''));
      const req = request(types, (r) => r.setAuthority('example.com'));
      const body = req.body();
      const future = handler.handle(req, undefined);
      body[Symbol.dispose]();
      expect(future.get()).toMatchObject({ tag: 'ok', val: { tag: 'err', val: { tag: 'internal-error' } } });
      expect(sent).toHaveLength(0);
    });

    it('refuses request trailers and a body that contradicts Content-Length', () => {
      const { sent, types, handler } = setup(() => okResponse(''));
      const withTrailers = request(types, (r) => r.setAuthority('example.com'));
      const body = withTrailers.body();
      const future = handler.handle(withTrailers, undefined);
      expect(thrown(() => types.OutgoingBody.finish(body, types.Fields.fromList([['X-Checksum', bytes('1')]])))).toMatchObject({ tag: 'internal-error' });
      expect(future.get()).toMatchObject({ tag: 'ok', val: { tag: 'err', val: { tag: 'internal-error' } } });

      // Empty trailers are no trailers.
      const emptyTrailers = request(types, (r) => r.setAuthority('example.com'));
      const emptyBody = emptyTrailers.body();
      types.OutgoingBody.finish(emptyBody, new types.Fields());
      responseOf(handler.handle(emptyTrailers, undefined));
      expect(sent).toHaveLength(1);

      const short = new types.OutgoingRequest(types.Fields.fromList([['Content-Length', bytes('5')]]));
      short.setAuthority('example.com');
      const shortBody = short.body();
      const stream = shortBody.write();
      stream.checkWrite();
      stream.write(bytes('abc'));
      stream[Symbol.dispose]();
      expect(thrown(() => types.OutgoingBody.finish(shortBody, undefined))).toEqual({ tag: 'HTTP-request-body-size', val: 3n });
      expect(handler.handle(short, undefined).get()).toEqual({ tag: 'ok', val: { tag: 'err', val: { tag: 'HTTP-request-body-size', val: 3n } } });
      expect(sent).toHaveLength(1);
    });
  });

  describe('the outgoing body cap', () => {
    it('fails a write past the cap with last-operation-failed, then closes the stream and fails the request', () => {
      const { sent, types, handler } = setup(() => okResponse(''), { maxRequestBodyBytes: 10 });
      const req = new types.OutgoingRequest(new types.Fields());
      req.setAuthority('example.com');
      const body = req.body();
      const stream = body.write();
      stream.checkWrite();
      stream.write(bytes('12345678'));
      stream.checkWrite();
      const failure = thrown(() => stream.write(bytes('9abc'))) as { tag: string; val: unknown };
      expect(failure.tag).toBe('last-operation-failed');
      expect(failure).not.toBeInstanceOf(Error);
      expect(types.httpErrorCode(failure.val)).toEqual({ tag: 'HTTP-request-body-size', val: 12n });
      expect(thrown(() => stream.checkWrite())).toEqual({ tag: 'closed' });
      expect(thrown(() => stream.blockingWriteAndFlush(bytes('x')))).toEqual({ tag: 'closed' });
      stream[Symbol.dispose]();
      expect(thrown(() => types.OutgoingBody.finish(body, undefined))).toEqual({ tag: 'HTTP-request-body-size', val: 12n });
      const future = handler.handle(req, undefined);
      expect(future.get()).toEqual({ tag: 'ok', val: { tag: 'err', val: { tag: 'HTTP-request-body-size', val: 12n } } });
      expect(sent).toHaveLength(0);
    });

    it('accepts a body of exactly the cap (16 MiB by default)', () => {
      const { sent, types, handler } = setup(() => okResponse(''));
      const req = new types.OutgoingRequest(new types.Fields());
      req.setMethod({ tag: 'post' });
      req.setAuthority('example.com');
      const body = req.body();
      const stream = body.write();
      const chunk = new Uint8Array(1024 * 1024).fill(0x61);
      for (let i = 0; i < 16; i++) {
        expect(stream.checkWrite()).toBeGreaterThanOrEqual(BigInt(chunk.byteLength));
        stream.write(chunk);
      }
      stream.checkWrite();
      expect((thrown(() => stream.write(new Uint8Array(1))) as { tag: string }).tag).toBe('last-operation-failed');
      stream[Symbol.dispose]();
      expect(thrown(() => types.OutgoingBody.finish(body, undefined))).toMatchObject({ tag: 'HTTP-request-body-size' });
      handler.handle(req, undefined);
      expect(sent).toHaveLength(0);

      const exact = new types.OutgoingRequest(new types.Fields());
      exact.setAuthority('example.com');
      const exactBody = exact.body();
      const exactStream = exactBody.write();
      for (let i = 0; i < 16; i++) {
        exactStream.checkWrite();
        exactStream.write(chunk);
      }
      exactStream[Symbol.dispose]();
      types.OutgoingBody.finish(exactBody, undefined);
      handler.handle(exact, undefined);
      expect(sent[0]!.body.byteLength).toBe(16 * 1024 * 1024);
    });
  });

  it('http-error-code knows only the io errors it raised; server-side resources trap', () => {
    const { types } = setup(() => okResponse(''));
    expect(types.httpErrorCode(new Error('some other io error'))).toBeUndefined();
    expect(thrown(() => new types.OutgoingResponse(new types.Fields()))).toBeInstanceOf(Error);
    expect(thrown(() => types.ResponseOutparam.set(undefined, { tag: 'ok', val: undefined }))).toBeInstanceOf(Error);
    expect(thrown(() => types.IncomingRequest.prototype.method())).toBeInstanceOf(Error);
  });

  it('skips through a response body (the shim derives skip from read)', () => {
    const { types, handler } = setup(() => okResponse('0123456789'));
    const req = new types.OutgoingRequest(new types.Fields());
    req.setAuthority('example.com');
    const stream = responseOf(handler.handle(req, undefined)).consume().stream();
    expect(stream.skip(4n)).toBe(4n);
    expect(text(stream.read(3n))).toBe('456');
    expect(text(stream.read(100n))).toBe('789');
    expect(thrown(() => stream.read(1n))).toEqual({ tag: 'closed' });
  });
});

// ---------------------------------------------------------------------------
// End to end: componentize-js fetch() in a worker thread


type Route = { status: number; headers: Array<[string, string]>; body?: string; echo?: boolean } | { error: ErrorCode } | { throws: string };
interface RecordedRequest extends Omit<GuestHttpRequest, 'headers' | 'body'> {
  url: string;
  headers: Array<[string, string]>;
  body: string;
}
interface WorkerReport {
  results: Array<{ ok: true; value: string } | { ok: false; error: unknown }>;
  requests: RecordedRequest[];
  trace: string[];
}
interface FetchResult {
  status: number;
  body: string;
  headers: Record<string, string>;
}

describe('fetch() in a componentize-js guest, on the synchronous wasi:http layer', () => {
  let component: { moduleUrl: string; dir: string; coreModules: string[] };

  beforeAll(async () => {
    // The fixture build made it (with componentize-js's `http` feature, which fetch() needs: see its build.json).
    const bytes = await readFile(fixture('fetcher'));
    const cache = new ComponentCache(sharedCacheDir);
    const id = createHash('sha256').update(bytes).digest('hex');
    const entry = await cache.prepare(id, bytes, 'fetcher');
    // The worker reads the core modules as files: the cache keeps large ones as chunks (base/chunk-store.ts).
    const dir = await mkdtemp(join(tmpdir(), 'toolhost-fetcher-modules-'));
    for (const name of entry.meta.coreModules) await writeFile(join(dir, name), await cache.readEntryFile(entry, name, 'fetcher'));
    component = { moduleUrl: entry.moduleUrl, dir, coreModules: entry.meta.coreModules };
    expect(entry.meta.imports).toEqual(expect.arrayContaining(['wasi:http/types', 'wasi:http/outgoing-handler']));
  });

  function runGuest(mode: 'override' | 'scope', routes: Record<string, Route>, calls: Array<{ name: string; args: unknown }>, httpOptions?: SyncHttpOptions): Promise<WorkerReport> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./fixtures/wasi-http-worker.mjs', import.meta.url), {
        workerData: { ...component, mode, routes, calls, httpOptions },
      });
      worker.once('message', (report: WorkerReport) => {
        resolve(report);
        void worker.terminate();
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`test worker exited (${code}) without a report`)));
    });
  }

  const parse = (result: WorkerReport['results'][number] | undefined): FetchResult => {
    if (!result?.ok) throw new Error(`call failed: ${JSON.stringify(result)}`);
    return JSON.parse(result.value) as FetchResult;
  };

  const routes: Record<string, Route> = {
    'http://api.test/hello': { status: 200, headers: [['Content-Type', 'text/plain'], ['X-Canned', 'yes'], ['Connection', 'close']], body: 'hello from the host' },
    'http://api.test/echo': { status: 201, headers: [['Content-Type', 'application/json']], echo: true },
    'https://denied.test/': { error: { tag: 'HTTP-request-denied' } },
    'http://api.test/broken': { throws: 'bridge broke' },
  };

  it('GETs and POSTs through the traced layer; the canned responses reach the guest and the requests reach send', async () => {
    const report = await runGuest('override', routes, [
      { name: 'get', args: { url: 'http://api.test/hello' } },
      { name: 'post', args: { url: 'http://api.test/echo', body: 'payload-123', headers: { 'X-Custom': 'abc' } } },
      { name: 'get', args: { url: 'https://denied.test/' } },
      { name: 'get', args: { url: 'http://api.test/broken' } },
    ]);

    const hello = parse(report.results[0]);
    expect(hello.status).toBe(200);
    expect(hello.body).toBe('hello from the host');
    expect(hello.headers).toEqual({ 'content-type': 'text/plain', 'x-canned': 'yes' });

    const echoed = parse(report.results[1]);
    expect(echoed.status).toBe(201);
    const seen = JSON.parse(echoed.body) as { method: string; headers: Array<[string, string]>; body: string };
    expect(seen.method).toBe('POST');
    expect(seen.body).toBe('payload-123');

    expect(report.requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      'GET http://api.test/hello',
      'POST http://api.test/echo',
      'GET https://denied.test/',
      'GET http://api.test/broken',
    ]);
    const post = report.requests[1]!;
    expect(post.body).toBe('payload-123');
    const postHeaders = Object.fromEntries(post.headers.map(([name, value]) => [name.toLowerCase(), value]));
    expect(postHeaders).toMatchObject({ 'x-custom': 'abc', 'content-type': 'text/plain', 'content-length': '11' });

    // A refusal and a host failure reach the guest as a rejected fetch(), which the tool reports.
    for (const result of report.results.slice(2)) {
      expect(result.ok).toBe(false);
      expect(result.ok ? undefined : result.error).toMatchObject({ code: 'FETCH_FAILED' });
    }

    // What StarlingMonkey's fetch() does for the POST: it builds the request,
    // takes the body stream, calls handle BEFORE writing the body, writes it
    // (checkWrite/write, after polling the stream's pollable), drops the
    // stream, finishes the body (only then is the request sent), then polls
    // the future and reads the response body in 8 KiB reads, polling before each.
    const postStart = report.trace.indexOf('-- call post');
    const postTrace = report.trace.slice(postStart, report.trace.indexOf('-- call get', postStart));
    const at = (step: string): number => {
      const index = postTrace.indexOf(step);
      expect(index, step).toBeGreaterThanOrEqual(0);
      return index;
    };
    const order = [
      'new OutgoingRequest',
      'OutgoingRequest.body',
      'OutgoingBody.write',
      'handle',
      'OutputStream.write',
      'OutputStream.drop',
      'OutgoingBody.finish',
      'send POST http://api.test/echo',
      'FutureIncomingResponse.subscribe',
      'FutureIncomingResponse.get',
      'IncomingResponse.consume',
      'IncomingBody.stream',
      'InputStream.read',
    ].map(at);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(postTrace).toContain('poll');
    // GET never asks for a body.
    const getTrace = report.trace.slice(0, report.trace.indexOf('-- call post'));
    expect(getTrace).not.toContain('OutgoingRequest.body');
    expect(getTrace.indexOf('handle')).toBeLessThan(getTrace.indexOf('send GET http://api.test/hello'));
  });

  it('follows redirects in the guest (StarlingMonkey does not), one checked request per hop', async () => {
    const report = await runGuest(
      'override',
      {
        ...routes,
        'http://api.test/moved': { status: 302, headers: [['Location', '/hello']], body: '' },
        'http://api.test/away': { status: 307, headers: [['Location', 'https://denied.test/']], body: '' },
        'http://api.test/loop': { status: 301, headers: [['Location', 'http://api.test/loop']], body: '' },
      },
      [
        { name: 'get', args: { url: 'http://api.test/moved' } },
        { name: 'get', args: { url: 'http://api.test/away' } },
        { name: 'get', args: { url: 'http://api.test/loop' } },
        { name: 'post', args: { url: 'http://api.test/moved', body: 'x' } },
      ],
    );
    expect(parse(report.results[0])).toMatchObject({ status: 200, body: 'hello from the host' });
    expect(report.results[1]).toMatchObject({ ok: false, error: { code: 'FETCH_FAILED' } });
    expect(report.results[2]).toMatchObject({ ok: false, error: { code: 'TOO_MANY_REDIRECTS' } });
    expect(parse(report.results[3])).toMatchObject({ status: 302, headers: { location: '/hello' } });
    expect(report.requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      'GET http://api.test/moved',
      'GET http://api.test/hello',
      'GET http://api.test/away',
      'GET https://denied.test/',
      ...Array<string>(6).fill('GET http://api.test/loop'),
      'POST http://api.test/moved',
    ]);
  });

  it("works through capabilities.ts's own wiring (scope.http), with bodies larger than one read or write", async () => {
    const big = 'y'.repeat(200_000);
    const report = await runGuest('scope', { ...routes, 'http://api.test/big': { status: 200, headers: [], body: big } }, [
      { name: 'get', args: { url: 'http://api.test/big' } },
      { name: 'post', args: { url: 'http://api.test/echo', body: 'x'.repeat(1_500_000) } },
    ]);
    expect(parse(report.results[0]).body).toBe(big);
    const echoed = JSON.parse(parse(report.results[1]).body) as { body: string };
    expect(echoed.body).toHaveLength(1_500_000);
    expect(report.requests[1]!.body).toHaveLength(1_500_000);
  });

  it('a body past the cap fails the write with last-operation-failed, on which StarlingMonkey traps', async () => {
    const report = await runGuest('override', routes, [{ name: 'post', args: { url: 'http://api.test/echo', body: 'x'.repeat(5000) } }], { maxRequestBodyBytes: 1000 });
    expect(report.requests).toEqual([]);
    expect(report.trace.at(-1)).toBe('OutputStream.write');
    const [result] = report.results;
    expect(result?.ok).toBe(false);
    expect(String(result?.ok ? '' : result?.error)).toMatch(/RuntimeError: .*unreachable/);
  });
});
