/**
 * The response side of an outgoing wasi:http request (`future-incoming-response`,
 * `incoming-response`, `incoming-body`, `future-trailers`), plus the
 * server-side resources, which exist so the interface is complete but trap
 * when used: a tool is a client.
 *
 * A response arrives whole (the host's `send` is synchronous), so an incoming
 * body is an input stream over bytes already in memory, and every pollable
 * here is ready, save a future whose request body the guest has not finished
 * yet: waiting on that one traps in capabilities.ts's poll.
 */
import { lockedFields, fieldsEntries, type FieldEntry, type Fields } from './http-fields.js';
import { trap, type WitResult } from './http-wit.js';
import type { WasiHttpErrorCode } from './http-error-code.js';
import { shimIo, type ShimInputStream, type ShimPollable } from './shim.js';

// Access to the resources' private state for the outgoing handler (set in their static blocks).
let createResponse: (status: number, headers: Fields, body: Uint8Array) => IncomingResponse;
let createFuture: () => FutureIncomingResponse;
let resolve: (future: FutureIncomingResponse, result: WitResult<IncomingResponse, WasiHttpErrorCode>) => void;

export class FutureTrailers {
  #taken = false;

  subscribe(): ShimPollable {
    return shimIo.pollableCreate();
  }

  /** The body was read in full when the response arrived: no trailers, no error. */
  get(): WitResult<WitResult<Fields | undefined, WasiHttpErrorCode>, undefined> {
    if (this.#taken) return { tag: 'err', val: undefined };
    this.#taken = true;
    return { tag: 'ok', val: { tag: 'ok', val: undefined } };
  }
}

export class IncomingBody {
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
    return shimIo.inputStreamCreate({
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

export class IncomingResponse {
  #status = 0;
  #headers: readonly FieldEntry[] = [];
  #body: IncomingBody | undefined;

  static {
    createResponse = (status, headers, body) => {
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

export class FutureIncomingResponse {
  #state: FutureState = { state: 'pending' };

  static {
    createFuture = () => new FutureIncomingResponse();
    resolve = (future, result) => {
      future.#state = { state: 'ready', result };
    };
  }

  /**
   * Ready once the response (or error) is in, which is at `handle` unless
   * the body was still being written. Waiting on it before finishing the
   * body could never end: capabilities.ts's poll traps instead.
   */
  subscribe(): ShimPollable {
    return shimIo.pollableCreate({ ready: () => this.#state.state !== 'pending', wait: () => Promise.resolve() });
  }

  get(): WitResult<WitResult<IncomingResponse, WasiHttpErrorCode>, undefined> | undefined {
    const current = this.#state;
    if (current.state === 'pending') return undefined;
    if (current.state === 'taken') return { tag: 'err', val: undefined };
    this.#state = { state: 'taken' };
    return { tag: 'ok', val: current.result };
  }
}

// Server-side resources exist so the interface is complete, but a tool component is a client: using them traps.
const serverSide = (what: string): never => {
  throw trap(`${what} is server-side wasi:http, which tools cannot use`);
};
export class IncomingRequest {
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
export class OutgoingResponse {
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
export class ResponseOutparam {
  static set(_param: ResponseOutparam, _response: unknown): never {
    return serverSide('response-outparam');
  }
}

/** A response as the guest reads it: `headers` are locked, `body` is the whole body. */
export function newIncomingResponse(status: number, headers: Fields, body: Uint8Array): IncomingResponse {
  return createResponse(status, headers, body);
}

/** A future that is pending until {@link resolveFuture}. */
export function newFutureResponse(): FutureIncomingResponse {
  return createFuture();
}

export function resolveFuture(future: FutureIncomingResponse, result: WitResult<IncomingResponse, WasiHttpErrorCode>): void {
  resolve(future, result);
}
