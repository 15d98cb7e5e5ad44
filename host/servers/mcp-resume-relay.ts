/**
 * A 2026-07-28 retry that lands on another host of a fleet (no sticky
 * routing): the parked call it answers is held by the host its `requestState`
 * names (mcp-input-required.ts), so this host relays the retry there and
 * serves the held call's events and outcome back to its client.
 *
 * Over the fleet's Redis pub/sub (the `RelayLink`: fleet/redis-link.ts's
 * `RedisLink` or any link with the same two methods), one channel per host,
 * `<prefix>mcp:resume:<host>`: the retry (state, the authenticated principal,
 * the answers) goes to the holder's channel; the holder resumes the call as
 * for a local retry (same principal check, same one-use state) and publishes
 * the call's progress, delta and log events and its end (the terminal event
 * or the next input-required result) to the relaying host's channel, tagged
 * with the relay's id. The relaying host's request reads them as a local leg.
 *
 * Guarantees: the holder checks the principal the relaying host
 * authenticated (hosts of a fleet trust each other, as they do for sessions);
 * a holder that is not listening (gone) makes the retry fail at once
 * (INVALID_INPUT, `request_state_unknown`), and one that goes away mid-call is
 * noticed within `PING_MS` (FLEET_UNAVAILABLE); the relaying client's
 * disconnect cancels the call on the holder, as it would locally.
 *
 * Traced hosts: a relayed retry is one trace. The relaying host opens a CLIENT
 * span `fleet.mcp.resume.relay` under the retry's `tools/call` server span and
 * sends its context with the retry (capped on arrival, core/tracing.ts
 * `carrierOf`); the holder serves it inside a SERVER span `fleet.mcp.resume`,
 * its child, which ends when the call's end went back. No answer, argument or
 * event is put in either span: only the hosts and the outcome.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../base/logger.js';
import type { CallStream } from '../core/call/options.js';
import type { TerminalEvent, ToolEvent } from '../core/events.js';
import { carrierOf, type CallTracer, type TraceCarrier, type TraceSpan } from '../core/tracing.js';
import type { CallParking, ParkedMethod, Refusal } from './mcp-input-required.js';
import type { InputRequiredResult, Leg } from './mcp-parked-call.js';

/** What the relay needs of the fleet's Redis connection. */
export interface RelayLink {
  subscribe(channel: string, listener: (message: string) => void): Promise<void>;
  publish(channel: string, message: string): Promise<number>;
  /** Be told each time the link is up again (RedisLink has it). */
  onUp?(listener: () => void): void;
}

/** How often a relaying host checks that the holder still listens, in ms. */
export const PING_MS = 5_000;

type Message =
  | { k: 'resume'; id: string; from: string; state: string; principal: string; responses?: Record<string, unknown>; trace?: TraceCarrier; method?: ParkedMethod }
  | { k: 'abort'; id: string }
  | { k: 'ping' }
  | { k: 'event'; id: string; event: ToolEvent }
  | { k: 'end'; id: string; inputRequired?: InputRequiredResult };

const RELAYED_EVENTS = new Set(['progress', 'delta', 'log', 'result', 'error']);

export class ResumeRelay {
  readonly #link: RelayLink;
  readonly #prefix: string;
  readonly #parking: CallParking;
  readonly #logger: Logger;
  readonly #tracer: CallTracer | undefined;
  /** Retries relayed from here, by relay id: where their messages go. */
  readonly #waiting = new Map<string, (message: Message) => void>();
  /** Retries served here for another host, by relay id: their drivers' signals. */
  readonly #serving = new Map<string, AbortController>();
  #retrying = false;

  /** `tracer`: this host's, when it traces (a relayed retry it serves continues the relaying host's trace). */
  constructor(link: RelayLink, prefix: string, parking: CallParking, logger: Logger, tracer?: CallTracer) {
    this.#link = link;
    this.#prefix = prefix;
    this.#parking = parking;
    this.#logger = logger;
    this.#tracer = tracer;
  }

  /** Listen on this host's channel (Redis may be away: the link subscribes when it comes back). */
  async start(): Promise<void> {
    try {
      await this.#link.subscribe(this.#channel(this.#parking.hostId), (text) => this.#receive(text));
    } catch (error) {
      // Redis is away: listen once it is back (the link re-subscribes by itself after later outages).
      if (!this.#retrying && this.#link.onUp !== undefined) {
        this.#retrying = true;
        this.#link.onUp(() => {
          if (this.#retrying) void this.start().then(() => (this.#retrying = false), () => undefined);
        });
      }
      throw error;
    }
  }

  /** Relay a retry to `host`, the holder of its call; the leg reads what the holder sends back (`span`: the retry's request span). */
  resume(host: string, state: string, principal: string, responses: Record<string, unknown> | undefined, signal: AbortSignal, span?: TraceSpan, method: ParkedMethod = 'tools/call'): Leg {
    const id = randomBytes(12).toString('base64url');
    const relaySpan = span?.child('fleet.mcp.resume.relay', { kind: 'client', attributes: { 'toolhost.fleet.host': host } });
    const trace = relaySpan?.carrier();
    const queue: Message[] = [];
    let wake: (() => void) | undefined;
    let inputRequired: InputRequiredResult | undefined;
    const push = (message: Message): void => {
      queue.push(message);
      const resolve = wake;
      wake = undefined;
      resolve?.();
    };
    this.#waiting.set(id, push);
    const holder = this.#channel(host);
    const send = (message: Message): Promise<number> => this.#link.publish(holder, JSON.stringify(message));
    const fail = (code: 'INVALID_INPUT' | 'FLEET_UNAVAILABLE', message: string, reason: string): void => {
      relaySpan?.fail(code, reason);
      push({ k: 'event', id, event: failure(code, message, reason) });
      push({ k: 'end', id });
    };
    const onAbort = (): void => void send({ k: 'abort', id }).catch(() => undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    const ping = setInterval(() => {
      send({ k: 'ping' }).then((listeners) => {
        if (listeners === 0) fail('FLEET_UNAVAILABLE', 'the host holding this call left the fleet; its call is lost: call the tool again', 'holder_gone');
      }, () => fail('FLEET_UNAVAILABLE', 'the fleet\'s Redis is unreachable, so the host holding this call cannot be reached', 'redis'));
    }, PING_MS);
    ping.unref();
    send({ k: 'resume', id, from: this.#parking.hostId, state, principal, ...(responses === undefined ? {} : { responses }), ...(trace === undefined ? {} : { trace }), ...(method === 'tools/call' ? {} : { method }) }).then((listeners) => {
      if (listeners === 0) fail('INVALID_INPUT', 'the requestState names no call waiting for an answer here (it ended, was answered already, or is not yours): call the tool again', 'request_state_unknown');
    }, () => fail('FLEET_UNAVAILABLE', 'the fleet\'s Redis is unreachable, so the host holding this call cannot be reached', 'redis'));

    let relayed = 0;
    const finish = (): void => {
      // What the relay carried back: how many of the call's events, and whether it asked again (never their content).
      relaySpan?.setAttributes({ 'toolhost.fleet.events': relayed, 'toolhost.mcp.input_required': inputRequired !== undefined });
      relaySpan?.end();
      clearInterval(ping);
      signal.removeEventListener('abort', onAbort);
      this.#waiting.delete(id);
    };
    async function* events(): AsyncGenerator<ToolEvent, void, undefined> {
      try {
        for (;;) {
          const message = queue.shift();
          if (message === undefined) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            continue;
          }
          if (message.k === 'event') {
            relayed += 1;
            yield message.event;
          } else if (message.k === 'end') {
            inputRequired = message.inputRequired;
            return;
          }
        }
      } finally {
        finish();
      }
    }
    const iterator = events();
    const stream: CallStream = {
      callId: '',
      cancel: () => {
        onAbort();
        return 'CANCELLED';
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return { events: stream, inputRequired: () => inputRequired };
  }

  #channel(host: string): string {
    return `${this.#prefix}mcp:resume:${host}`;
  }

  #receive(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.k === 'event' || message.k === 'end') this.#waiting.get(message.id)?.(message);
    else if (message.k === 'abort') this.#serving.get(message.id)?.abort();
    else if (message.k === 'resume') void this.#serve(message);
  }

  /** Serve a retry another host relayed: resume the call here, send its events and end back. */
  async #serve(request: Extract<Message, { k: 'resume' }>): Promise<void> {
    const back = this.#channel(request.from);
    const send = (message: Message): Promise<unknown> => this.#link.publish(back, JSON.stringify(message)).catch((error: unknown) => {
      this.#logger.debug({ err: (error as Error).message }, 'mcp: could not relay a resumed call\'s message');
    });
    const driver = new AbortController();
    this.#serving.set(request.id, driver);
    // Client-shaped context (it came through the relaying host): capped before anything parses it.
    const parent = carrierOf(request.trace as Record<string, unknown> | undefined);
    const span = this.#tracer?.startSpan('fleet.mcp.resume', { kind: 'server', ...(parent === undefined ? {} : { parent }), attributes: { 'toolhost.fleet.from': String(request.from).slice(0, 64) } });
    try {
      const resumed: { ok: true; leg: Leg } | Refusal = this.#parking.resume(request.state, request.principal, request.responses, driver.signal, { relay: false, method: request.method === 'prompts/get' ? 'prompts/get' : 'tools/call' });
      if (!resumed.ok) {
        span?.fail(resumed.code, resumed.reason);
        await send({ k: 'event', id: request.id, event: failure(resumed.code, resumed.message, resumed.reason) });
        await send({ k: 'end', id: request.id });
        return;
      }
      let sent = 0;
      for await (const event of resumed.leg.events as AsyncIterable<ToolEvent>) {
        if (!RELAYED_EVENTS.has(event.type)) continue;
        if (event.type === 'error') span?.fail(event.code);
        await send({ k: 'event', id: request.id, event });
        sent += 1;
        if (event.type === 'result' || event.type === 'error') break;
      }
      const inputRequired = resumed.leg.inputRequired();
      span?.setAttributes({ 'toolhost.fleet.events': sent, 'toolhost.mcp.input_required': inputRequired !== undefined });
      await send({ k: 'end', id: request.id, ...(inputRequired === undefined ? {} : { inputRequired }) });
    } finally {
      span?.end();
      this.#serving.delete(request.id);
    }
  }
}

/** A retry that could not be served, as the terminal event its leg ends with. */
function failure(code: 'INVALID_INPUT' | 'FLEET_UNAVAILABLE', message: string, reason: string): TerminalEvent {
  return { type: 'error', callId: '', code, message, details: { reason }, stage: 'rejected', accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 } };
}
