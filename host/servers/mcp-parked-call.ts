/**
 * One 2026-07-28 call that may park (mcp-input-required.ts has the guarantees): a pump reads the
 * call's events into a queue; the request driving the call (a leg) reads them from there, until the
 * terminal event or until the call asks its client something; then the leg ends with an
 * input-required result and the call waits, parked, for the retry that answers (`answer`).
 */
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolhostError } from '../base/errors.js';
import type { CallStream } from '../core/call/options.js';
import type { CallClient, ClientRequestOptions, ElicitResult, SamplingResult } from '../core/client-requests.js';
import type { ToolEvent } from '../core/events.js';

export type InputMethod = 'sampling/createMessage' | 'elicitation/create';

/** The client requests whose calls may park: a retry must be a request of the same method. */
export type ParkedMethod = 'tools/call' | 'prompts/get';

/** One embedded request of an input-required result. */
export interface EmbeddedInputRequest {
  method: InputMethod;
  params: Record<string, unknown>;
}

/** The 2026-07-28 input-required result of a `tools/call`. */
export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests: Record<string, EmbeddedInputRequest>;
  requestState: string;
  [key: string]: unknown;
}

/**
 * One request's view of a call: its events until the call's terminal event, or until the call
 * asks its caller something (then `inputRequired()` says what).
 */
export interface Leg {
  readonly events: CallStream;
  /** After `events` ended: the input-required result to answer with, or undefined (the terminal was in the events). */
  inputRequired(): InputRequiredResult | undefined;
}

interface Asked {
  key: string;
  request: EmbeddedInputRequest;
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** Handed to the client (an input-required result was produced for it). */
  sent: boolean;
}

/** What a parked call needs of the server's parking (its per-principal places and its parked rounds). */
export interface Parking {
  hold(principal: string): boolean;
  release(principal: string): void;
  park(call: ParkedCall): string;
  forget(state: string): void;
  refusal(callId: string): ToolhostError;
}

/** A call started by a 2026 request, with what it needs to park and resume. */
export class ParkedCall {
  readonly principal: string;
  /** The request that started it; only a retry of the same method resumes it. */
  readonly method: ParkedMethod;
  readonly #parking: Parking;
  readonly #abort = new AbortController();
  #stream: CallStream | undefined;
  #queue: ToolEvent[] = [];
  #ended = false;
  #wake: (() => void) | undefined;
  #asked: Asked | undefined;
  #askCount = 0;
  /** The signal of the request driving the call, and its listener. */
  #driver: { signal: AbortSignal; onAbort: () => void } | undefined;
  /** The state it is parked under, while parked. */
  #state: string | undefined;
  #result: InputRequiredResult | undefined;

  constructor(parking: Parking, principal: string, method: ParkedMethod = 'tools/call') {
    this.#parking = parking;
    this.principal = principal;
    this.method = method;
  }

  begin(run: (client: CallClient, signal: AbortSignal) => CallStream, client: CallClient): void {
    this.#stream = run(client, this.#abort.signal);
    void this.#pump(this.#stream[Symbol.asyncIterator]());
  }

  /** Called by a hook: park the call until the client answers `request`. */
  ask<T>(method: InputMethod, params: Record<string, unknown>, options: ClientRequestOptions): Promise<T> {
    if (this.#asked !== undefined) return Promise.reject(new ToolhostError('INTERNAL', 'a call asked its client twice at once', { callId: options.callId }));
    if (!this.#parking.hold(this.principal)) return Promise.reject(this.#parking.refusal(options.callId));
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        options.signal.removeEventListener('abort', onAbort);
        this.#asked = undefined;
        if (this.#state !== undefined) this.#parking.forget(this.#state);
        this.#state = undefined;
        this.#parking.release(this.principal);
        return true;
      };
      const onAbort = (): void => {
        if (settle()) reject(new ToolhostError('CANCELLED', 'the call ended while waiting for its client\'s answer', { callId: options.callId }));
      };
      this.#askCount += 1;
      this.#asked = {
        key: `toolhost-${this.#askCount}`,
        request: { method, params },
        sent: false,
        resolve: (value) => {
          if (settle()) resolve(value as T);
        },
        reject: (error) => {
          if (settle()) reject(error);
        },
      };
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
      this.#kick();
    });
  }

  /** End the call (the server is closing): it ends CANCELLED, as a request's call does when its server closes. */
  cancel(): void {
    this.#abort.abort(new Error('the server is closing'));
  }

  /** The client's answers: deliver the one asked for, and let `signal`'s request drive the call on. */
  answer(responses: Record<string, unknown> | undefined, signal: AbortSignal): Leg {
    this.#state = undefined;
    const asked = this.#asked;
    const leg = this.attach(signal);
    if (asked === undefined) return leg;
    const answer = responses?.[asked.key];
    // Not answered: ask again on this request.
    if (answer === undefined) {
      asked.sent = false;
      return leg;
    }
    const parsed = asked.request.method === 'sampling/createMessage' ? CreateMessageResultSchema.safeParse(answer) : ElicitResultSchema.safeParse(answer);
    if (!parsed.success) {
      asked.reject(new ToolhostError('INVALID_INPUT', `the client's answer to ${asked.request.method} is malformed: ${parsed.error.issues[0]?.message ?? 'not a result'}`));
      return leg;
    }
    if (asked.request.method === 'sampling/createMessage') asked.resolve(parsed.data as SamplingResult);
    else {
      const data = parsed.data as { action: ElicitResult['action']; content?: Record<string, unknown> };
      asked.resolve({ action: data.action, ...(data.content === undefined ? {} : { content: data.content }) } satisfies ElicitResult);
    }
    return leg;
  }

  /** This request drives the call now. */
  attach(signal: AbortSignal): Leg {
    this.#detach();
    this.#result = undefined;
    const onAbort = (): void => this.#abort.abort(signal.reason);
    this.#driver = { signal, onAbort };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const stream = this.#stream!;
    const events = this.#events();
    const view: CallStream = {
      callId: stream.callId,
      cancel: () => stream.cancel(),
      [Symbol.asyncIterator]: () => events,
    };
    return { events: view, inputRequired: () => this.#result };
  }

  #detach(): void {
    if (this.#driver === undefined) return;
    this.#driver.signal.removeEventListener('abort', this.#driver.onAbort);
    this.#driver = undefined;
  }

  async *#events(): AsyncGenerator<ToolEvent, void, undefined> {
    try {
      for (;;) {
        const event = this.#queue.shift();
        if (event !== undefined) {
          if (event.type === 'result' || event.type === 'error') this.#detach();
          yield event;
          continue;
        }
        if (this.#ended) return;
        const asked = this.#asked;
        if (asked !== undefined && !asked.sent) {
          // Events the call emitted before it asked are on their way: let them in first.
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (this.#queue.length > 0 || this.#ended || this.#asked !== asked) continue;
          asked.sent = true;
          this.#state = this.#parking.park(this);
          this.#result = { resultType: 'input_required', inputRequests: { [asked.key]: asked.request }, requestState: this.#state };
          this.#detach();
          return;
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      // The request stopped reading (its client went away): the call is no longer driven by it.
      if (this.#result === undefined) this.#detach();
    }
  }

  async #pump(iterator: AsyncIterator<ToolEvent>): Promise<void> {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done === true) break;
        this.#queue.push(next.value);
        this.#kick();
        if (next.value.type === 'result' || next.value.type === 'error') break;
      }
    } catch {
      // The call path ends every stream with a terminal event; a throw leaves the leg to synthesize one.
    } finally {
      this.#ended = true;
      if (this.#state !== undefined) {
        // Ended while parked (its wall budget, a cancel): nobody will read its events.
        this.#parking.forget(this.#state);
        this.#state = undefined;
        this.#queue = [];
      }
      this.#kick();
    }
  }

  #kick(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
