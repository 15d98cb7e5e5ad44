/**
 * One 2026-07-28 call that may park (mcp-input-required.ts has the guarantees): a pump reads the
 * call's events into a queue; the request driving the call (a leg) reads them from there, until the
 * terminal event or until the call asks its client something (a round of one or more requests, each
 * under its key); then the leg ends with an input-required result naming the requests not yet
 * answered, and the call waits, parked, for the retry that answers (`answer`). A round is answered
 * when every key of it is: a retry that answers some keys gets the others asked again.
 */
import { CreateMessageResultSchema, ElicitResultSchema, ListRootsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolhostError } from '../base/errors.js';
import type { CallStream } from '../core/call/options.js';
import type { CallClient, ClientRequestMethod, ClientRequestOptions, ElicitResult, KeyedAnswers, ListRootsResult, SamplingResult } from '../core/client-requests.js';
import type { ToolEvent } from '../core/events.js';

export type InputMethod = ClientRequestMethod;

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

/** A round the call asked: its requests by key, the answers in so far (checked), and how to settle it. */
interface Asked {
  requests: Record<string, EmbeddedInputRequest>;
  answers: KeyedAnswers;
  resolve(answers: KeyedAnswers): void;
  reject(error: Error): void;
  /** Handed to the client (an input-required result was produced for it). */
  sent: boolean;
}

/** A request of a round, as a hook hands it to `askRound`. */
export interface RoundRequest {
  key: string;
  method: InputMethod;
  params: Record<string, unknown>;
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
  /** Answers the starting request carried before anything was asked: offered to the call's first round only. */
  #offered: Record<string, unknown> | undefined;
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

  /** `offered`: the starting request's `inputResponses`, which may already answer the call's first round (keys it does not ask are ignored). */
  begin(run: (client: CallClient, signal: AbortSignal) => CallStream, client: CallClient, offered?: Record<string, unknown>): void {
    this.#offered = offered;
    this.#stream = run(client, this.#abort.signal);
    void this.#pump(this.#stream[Symbol.asyncIterator]());
  }

  /** Called by a hook: park the call until the client answers `request` (a round of one, under a key the host names). */
  async ask<T>(method: InputMethod, params: Record<string, unknown>, options: ClientRequestOptions): Promise<T> {
    const key = `toolhost-${this.#askCount + 1}`;
    const answers = await this.askRound([{ key, method, params }], options);
    return answers[key] as T;
  }

  /**
   * Called by a hook: a round of requests under the tool's keys. Answered at once from the starting
   * request's `inputResponses` when they answer every key of the call's first round; otherwise the
   * call parks (a place of its principal's held) until retries have answered every key.
   */
  askRound(requests: readonly RoundRequest[], options: ClientRequestOptions): Promise<KeyedAnswers> {
    if (this.#asked !== undefined) return Promise.reject(new ToolhostError('INTERNAL', 'a call asked its client twice at once', { callId: options.callId }));
    this.#askCount += 1;
    // Keyed by the tool's keys (`toString` is a valid one): objects without a prototype, read with hasOwn.
    const round: Asked = { requests: Object.assign(Object.create(null) as Record<string, EmbeddedInputRequest>, Object.fromEntries(requests.map(({ key, method, params }) => [key, { method, params }]))), answers: Object.create(null) as KeyedAnswers, sent: false, resolve: () => {}, reject: () => {} };
    const offered = this.#offered;
    this.#offered = undefined;
    if (offered !== undefined) {
      for (const key of Object.keys(round.requests)) {
        const checked = checkedAnswer(round.requests[key]!.method, Object.hasOwn(offered, key) ? offered[key] : undefined);
        if (checked.ok) round.answers[key] = checked.value;
      }
      if (unanswered(round).length === 0) return Promise.resolve(round.answers);
    }
    if (!this.#parking.hold(this.principal)) return Promise.reject(this.#parking.refusal(options.callId));
    return new Promise<KeyedAnswers>((resolve, reject) => {
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
      round.resolve = (answers) => {
        if (settle()) resolve(answers);
      };
      round.reject = (error) => {
        if (settle()) reject(error);
      };
      this.#asked = round;
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
      this.#kick();
    });
  }

  /** End the call (the server is closing): it ends CANCELLED, as a request's call does when its server closes. */
  cancel(): void {
    this.#abort.abort(new Error('the server is closing'));
  }

  /**
   * The client's answers: deliver those of the round asked, and let `signal`'s request drive the call on.
   * A malformed answer fails the round (INVALID_INPUT); keys not answered are asked again on this request.
   */
  answer(responses: Record<string, unknown> | undefined, signal: AbortSignal): Leg {
    this.#state = undefined;
    const asked = this.#asked;
    const leg = this.attach(signal);
    if (asked === undefined) return leg;
    for (const key of unanswered(asked)) {
      const answer = responses !== undefined && Object.hasOwn(responses, key) ? responses[key] : undefined;
      if (answer === undefined) continue;
      const method = asked.requests[key]!.method;
      const checked = checkedAnswer(method, answer);
      if (!checked.ok) {
        asked.reject(new ToolhostError('INVALID_INPUT', `the client's answer to ${method} (${JSON.stringify(key)}) is malformed: ${checked.problem}`));
        return leg;
      }
      asked.answers[key] = checked.value;
    }
    if (unanswered(asked).length === 0) asked.resolve(asked.answers);
    // Not all answered: ask the rest again on this request.
    else asked.sent = false;
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
          this.#result = { resultType: 'input_required', inputRequests: Object.fromEntries(unanswered(asked).map((key) => [key, asked.requests[key]!])), requestState: this.#state };
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

/** The keys of a round not answered yet. */
function unanswered(round: Asked): string[] {
  return Object.keys(round.requests).filter((key) => !Object.hasOwn(round.answers, key));
}

/** A client's answer checked against MCP's result shape for `method` (zod; linear in a body already capped), as the tool is given it. */
function checkedAnswer(method: InputMethod, answer: unknown): { ok: true; value: KeyedAnswers[string] } | { ok: false; problem: string } {
  if (answer === undefined) return { ok: false, problem: 'no answer' };
  switch (method) {
    case 'sampling/createMessage': {
      const parsed = CreateMessageResultSchema.safeParse(answer);
      return parsed.success ? { ok: true, value: parsed.data as SamplingResult } : { ok: false, problem: parsed.error.issues[0]?.message ?? 'not a result' };
    }
    case 'elicitation/create': {
      const parsed = ElicitResultSchema.safeParse(answer);
      if (!parsed.success) return { ok: false, problem: parsed.error.issues[0]?.message ?? 'not a result' };
      const data = parsed.data as { action: ElicitResult['action']; content?: Record<string, unknown> };
      return { ok: true, value: { action: data.action, ...(data.content === undefined ? {} : { content: data.content }) } satisfies ElicitResult };
    }
    case 'roots/list': {
      const parsed = ListRootsResultSchema.safeParse(answer);
      if (!parsed.success) return { ok: false, problem: parsed.error.issues[0]?.message ?? 'not a result' };
      return { ok: true, value: { roots: parsed.data.roots.map((root) => ({ uri: root.uri, ...(root.name === undefined ? {} : { name: root.name }) })) } satisfies ListRootsResult };
    }
  }
}
