/**
 * Sampling and elicitation for MCP 2026-07-28 clients: input-required results
 * answered by the client's retry (the revision has no server-to-client
 * requests). A tool runs on, mid-call, when it asks its caller something: the
 * guest is blocked in its host call (Node 20 has no JSPI; it could not be
 * restarted anyway), so the call is *parked*: its instance, its worker and its
 * call are kept, its wall budget keeps running. The `tools/call` request that
 * was driving it answers `resultType: "input_required"` naming the requests
 * (`inputRequests`: one under a key the host names for 0.2.0's `sample` and
 * `elicit`, or a round under the tool's own keys for 0.3.0's `ask`) and a
 * `requestState`; the client's retry (a new `tools/call` with
 * `inputResponses` and that `requestState`) delivers the answers to the
 * waiting host call, and the guest resumes exactly where it asked once every
 * key of its round is answered (keys left out are asked again). The retry's
 * request then carries the call's further events and its result (or the next
 * input request). `inputResponses` on the request that starts a call are
 * offered to its first round: when they answer every key of it, the guest
 * goes on without parking (SEP-2322's "ignore what you do not recognize").
 *
 * Guarantees:
 * - `requestState` is `<host>.<128 random bits>`: a capability naming one
 *   parked round, good for one retry (each round gets a new one), never
 *   trusted for anything else. A retry is served only for the principal whose
 *   request started the call; any other state (unknown, used, another
 *   principal's, the call ended) is refused alike (INVALID_INPUT, reason
 *   `request_state_unknown`), so nothing is learned about other callers.
 * - Parked calls are bounded per principal (`servers.mcp.max_parked_calls`,
 *   default 16): past it the tool's request is refused OVERLOADED (reason
 *   `parked_calls`) and nothing is parked; counted as
 *   `toolhost_server_refused_total{reason="parked_calls_full"}`; the parked
 *   calls are the gauge `toolhost_server_parked_calls`.
 * - An answer that never comes: the call's wall budget ends it (its one
 *   terminal event is WALL_TIMEOUT / TOOL_TIMEOUT, recorded as any call's);
 *   the parked round is forgotten with it.
 * - A client gone while its request drives the call (the connection closed)
 *   cancels the call, as on every 2026 request; a parked call has no request
 *   and is cancelled only by its budget or `toolhost_cancel`.
 * - The answer is checked against MCP's result shape (zod, linear in a body
 *   already capped by `max_body_bytes`); a malformed one fails the tool's host
 *   call with INVALID_INPUT. Its size is checked by the call's client gate.
 *
 * Does not: check an elicitation answer's content against the requested
 * schema (the tool gets what the client sent, as typed values), or hold a
 * call's events beyond what the call's own `max_events` allows (events the
 * call emits while parked wait for the retry).
 */
import { randomBytes } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { ToolhostError } from '../base/errors.js';
import type { CallStream } from '../core/call/options.js';
import type { CallClient, ElicitResult, ListRootsResult, SamplingResult } from '../core/client-requests.js';
import type { TerminalEvent } from '../core/events.js';
import type { TraceSpan } from '../core/tracing.js';
import { requestSpan } from './mcp-trace.js';
import { ParkedCall, type Leg, type ParkedMethod, type Parking } from './mcp-parked-call.js';

export type { EmbeddedInputRequest, InputRequiredResult, Leg, ParkedMethod } from './mcp-parked-call.js';

/** Parked calls one principal may hold at once (default of `servers.mcp.max_parked_calls`). */
export const DEFAULT_MAX_PARKED_CALLS = 16;

/** The client capabilities of a 2026 request (its envelope's `clientCapabilities`). */
export interface DeclaredCapabilities {
  sampling?: unknown;
  elicitation?: unknown;
  roots?: unknown;
}

export interface CallParkingOptions {
  /** Parked calls one principal may hold (default 16). */
  maxPerPrincipal?: number;
  /** This host's id (the prefix of every `requestState`; a fleet relays a retry to the host it names). */
  hostId?: string;
  /** A tool's request refused at the cap. */
  onRefused?: () => void;
}

/** A refused retry. */
export interface Refusal {
  ok: false;
  code: 'INVALID_INPUT';
  message: string;
  reason: 'request_state_unknown';
}

/** Relays a retry to the host holding its call (mcp-resume-relay.ts, in a fleet); `span`: the retry's request span, when traced. */
export interface RetryRelay {
  resume(host: string, state: string, principal: string, responses: Record<string, unknown> | undefined, signal: AbortSignal, span?: TraceSpan, method?: ParkedMethod): Leg;
}

/** How a retry is resumed: `relay` false serves it here whatever host its state names (a relayed retry); `span`: its request's span. */
export interface ResumeOptions {
  relay?: boolean;
  span?: TraceSpan | undefined;
  /** The request the retry is (default `tools/call`): a state is good only for a retry of the request that parked. */
  method?: ParkedMethod;
}

/** The parked calls of one server (one per MCP endpoint, shared by its requests). */
export class CallParking implements Parking {
  readonly #max: number;
  readonly #hostId: string;
  readonly #onRefused: (() => void) | undefined;
  /** Parked rounds by their `requestState`. */
  readonly #parked = new Map<string, ParkedCall>();
  /** Calls holding a place (asked and not yet answered), per principal. */
  readonly #held = new Map<string, number>();
  #total = 0;
  #relay: RetryRelay | undefined;

  constructor(options: CallParkingOptions = {}) {
    const max = options.maxPerPrincipal ?? DEFAULT_MAX_PARKED_CALLS;
    if (!Number.isInteger(max) || max < 0) throw new TypeError('options.maxPerPrincipal must be a non-negative integer');
    const hostId = options.hostId ?? randomBytes(9).toString('base64url');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(hostId)) throw new TypeError('options.hostId must be 1 to 64 characters of [A-Za-z0-9_-]');
    this.#max = max;
    this.#hostId = hostId;
    this.#onRefused = options.onRefused;
  }

  /** Calls parked now (asked, waiting for the client's retry). */
  get size(): number {
    return this.#total;
  }

  /** The host a `requestState` names (undefined: not one of ours in form). */
  static hostOf(state: string): string | undefined {
    const match = /^([A-Za-z0-9_-]{1,64})\.[A-Za-z0-9_-]{22}$/.exec(state);
    return match?.[1];
  }

  get hostId(): string {
    return this.#hostId;
  }

  /**
   * Start a call that may park. `run` starts it with the hooks the client declared (a hook parks
   * the call) and the call's own signal (aborted while a request drives it and that request ends).
   */
  start(principal: string, capabilities: DeclaredCapabilities, signal: AbortSignal, run: (client: CallClient, signal: AbortSignal) => CallStream, method: ParkedMethod = 'tools/call', offered?: Record<string, unknown>): Leg {
    const call = new ParkedCall(this, principal, method);
    call.begin(run, hooksFor(call, capabilities), offered);
    return call.attach(signal);
  }

  /** In a fleet: retries naming another host go there (mcp-resume-relay.ts). */
  useRelay(relay: RetryRelay): void {
    this.#relay = relay;
  }

  /**
   * A client's retry: the parked call it continues, now driven by this request; or a refusal. A
   * state naming another host is relayed there when `relay` (and a fleet relay is set).
   */
  resume(state: string, principal: string, responses: Record<string, unknown> | undefined, signal: AbortSignal, options: ResumeOptions = {}): { ok: true; leg: Leg } | Refusal {
    const host = CallParking.hostOf(state);
    if (options.relay !== false && this.#relay !== undefined && host !== undefined && host !== this.#hostId) {
      return { ok: true, leg: this.#relay.resume(host, state, principal, responses, signal, options.span, options.method) };
    }
    const call = this.#parked.get(state);
    if (call === undefined || call.principal !== principal || call.method !== (options.method ?? 'tools/call')) {
      return { ok: false, code: 'INVALID_INPUT', reason: 'request_state_unknown', message: 'the requestState names no call waiting for an answer here (it ended, was answered already, or is not yours): call the tool again' };
    }
    this.#parked.delete(state);
    return { ok: true, leg: call.answer(responses, signal) };
  }

  // --- for ParkedCall ---

  /** Cancel every parked call (the server is closing: no retry can reach them any more). */
  close(): void {
    for (const call of this.#parked.values()) call.cancel();
    this.#parked.clear();
  }

  /** Hold a place for `principal` (false: at the cap, refused). */
  hold(principal: string): boolean {
    const held = this.#held.get(principal) ?? 0;
    if (held >= this.#max) {
      this.#onRefused?.();
      return false;
    }
    this.#held.set(principal, held + 1);
    this.#total += 1;
    return true;
  }

  release(principal: string): void {
    const held = this.#held.get(principal) ?? 0;
    if (held <= 1) this.#held.delete(principal);
    else this.#held.set(principal, held - 1);
    this.#total -= 1;
  }

  /** Park `call` under a new state; returns it. */
  park(call: ParkedCall): string {
    const state = `${this.#hostId}.${randomBytes(16).toString('base64url')}`;
    this.#parked.set(state, call);
    return state;
  }

  forget(state: string): void {
    this.#parked.delete(state);
  }

  /** Refuse a tool's request at the cap. */
  refusal(callId: string): ToolhostError {
    return new ToolhostError('OVERLOADED', `this caller already has ${this.#max} calls waiting for answers from its client (servers.mcp.max_parked_calls); answer or end those first`, { callId, details: { reason: 'parked_calls', limit: this.#max } });
  }
}

/** The hooks a call gets for the capabilities its client declared (none: the tool gets CLIENT_UNSUPPORTED). */
function hooksFor(call: ParkedCall, capabilities: DeclaredCapabilities): CallClient {
  const hooks: CallClient = {};
  if (capabilities.sampling !== undefined) {
    hooks.sample = (request, options) => call.ask<SamplingResult>('sampling/createMessage', { ...request }, options);
  }
  const elicitation = capabilities.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined)) {
    hooks.elicit = (request, options) => call.ask<ElicitResult>('elicitation/create', { mode: 'form', ...request }, options);
  }
  if (capabilities.roots !== undefined) {
    hooks.listRoots = (options) => call.ask<ListRootsResult>('roots/list', {}, options);
  }
  // A round is one input-required result: every request under the tool's own key.
  hooks.ask = (requests, options) => call.askRound(requests.map(({ key, method, params }) => ({ key, method, params: method === 'elicitation/create' ? { mode: 'form', ...params } : { ...params } })), options);
  return hooks;
}

/** What `driveCall` reads of a 2026 request (the SDK v2's `ServerContext`). */
export interface ModernRequestContext {
  mcpReq: {
    signal: AbortSignal;
    envelope?: Record<string, unknown> | undefined;
    inputResponses?: Record<string, unknown> | undefined;
    requestState: <T = unknown>() => T | undefined;
  };
}

const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

/**
 * The leg a 2026 `tools/call` or `prompts/get` request (`method`) drives: a new call (`run` starts it) or, when
 * the request carries a `requestState`, the parked call it answers (parked by a request of the same method).
 * `options.principal` is the request's authenticated principal (never a client-chosen name).
 */
export function driveCall(
  parking: CallParking,
  method: ParkedMethod,
  options: { principal?: string | undefined },
  ctx: ModernRequestContext,
  run: (client: CallClient, signal: AbortSignal) => CallStream,
): { ok: true; leg: Leg } | Refusal {
  const principal = options.principal ?? '';
  const state = ctx.mcpReq.requestState<unknown>();
  if (typeof state === 'string') return parking.resume(state, principal, ctx.mcpReq.inputResponses, ctx.mcpReq.signal, { span: requestSpan(ctx), method });
  const declared = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_KEY];
  const capabilities = typeof declared === 'object' && declared !== null ? (declared as DeclaredCapabilities) : {};
  return { ok: true, leg: parking.start(principal, capabilities, ctx.mcpReq.signal, run, method, ctx.mcpReq.inputResponses) };
}

/** A retry whose `requestState` names no call waiting for this caller's answer (SEP-2322: a JSON-RPC error). */
export function unknownState(message: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `INVALID_INPUT: ${message}`, { code: 'INVALID_INPUT', message, details: { reason: 'request_state_unknown' } });
}

/** The same refusal, when it came from the host a fleet relayed the retry to (mcp-resume-relay.ts) as the leg's terminal. */
export function throwIfRelayedUnknownState(terminal: TerminalEvent, ctx: ModernRequestContext): void {
  if (terminal.type === 'error' && terminal.code === 'INVALID_INPUT' && typeof ctx.mcpReq.requestState<unknown>() === 'string' && (terminal.details as { reason?: unknown } | undefined)?.reason === 'request_state_unknown') throw unknownState(terminal.message);
}
