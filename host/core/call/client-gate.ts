/**
 * `ctx.client`: a tool's requests to the client that made its call (sampling,
 * elicitation, roots), under the tool's grant, the per-call caps and the audit log,
 * whichever way the tool runs (native or sandboxed) and whoever the caller is.
 * (Over 400 lines: one decision with one call's counts, for single requests and rounds, objects and text;
 * the request shapes are in client-request-shapes.ts.)
 *
 * Order of checks, for each request: the grant allows the kind (else
 * PERMISSION_DENIED) → the call's count of that kind is within the grant's
 * `maxRequests` (else PERMISSION_DENIED, a limit hit) → sampling's
 * `maxTokens` is within the grant's (else PERMISSION_DENIED, a limit hit) →
 * the request's JSON is within `clientRequestBytes` (else
 * OUTPUT_LIMIT_EXCEEDED, a limit hit) → the caller has a hook (else
 * CLIENT_UNSUPPORTED) → the hook, raced against the call's soft signal
 * (CANCELLED when the call ends first) → the answer's JSON is within
 * `clientRequestBytes`. Every request is audited (allowed or denied, with its
 * kind and size; never its text).
 *
 * A sandboxed guest's request comes as JSON text (`sampleText`,
 * `elicitText`) that the worker made from the guest's shapes and
 * size-checked under the call's budgets, after refusing by itself what
 * `allowances()` does not allow (it reports those with `refused`, audited and
 * counted here as the same denial). For text the order is: grant → count →
 * the caller has a hook → the text's length, then its bytes, within
 * `clientRequestBytes` → parse (linear in that capped size; malformed:
 * INVALID_INPUT) → `maxTokens` → the hook. Nothing of the text is read
 * before the first three pass, and nothing is parsed past the size check.
 *
 * A round (world 0.3.0's `ask`, `ctx.client.ask`) is admitted whole: every
 * kind is granted, has requests left for the whole round and a hook (all
 * checked before any is counted) → for text, its length and bytes, then
 * parse, and the text's requests must be the kinds admitted → keys (1-64 of
 * [A-Za-z0-9_.-] but `__proto__`, unique) and each request's shape and `maxTokens` → the
 * caller's `ask` hook when it has one (the whole round at once), else each
 * kind's hook side by side → every key answered, only those keys returned.
 * A round refused before it is sent spends none of the grant's requests.
 *
 * Traced calls: each request is a span under the call's (its attempt's), `sampling/createMessage` or
 * `elicitation/create`, from its first check to the answer, ending with the refusal's code as `error.type`;
 * the same for a native tool's request and a guest's (the sandbox opens none of its own for these). It says the
 * kind and the request's size in bytes, never its text or the answer's.
 *
 * Does not: bound how long the client takes (the call's wall budget does),
 * or check the answer beyond its size and shape (the MCP SDK validates it).
 */
import { ToolhostError } from '../../base/errors.js';
import { answerOne, isElicitRequest, isRecord, isSamplingRequest, kindOfMethod } from './client-request-shapes.js';
import {
  CLIENT_REQUEST_METHODS,
  DEFAULT_ELICITATION_REQUESTS,
  DEFAULT_ROOTS_REQUESTS,
  DEFAULT_SAMPLING_MAX_TOKENS,
  DEFAULT_SAMPLING_REQUESTS,
  INPUT_KEY_RULE,
  isInputKey,
  type CallClient,
  type ClientAllowances,
  type ClientRefusal,
  type ClientRequestKind,
  type ClientRequestOptions,
  type ElicitRequest,
  type ElicitResult,
  type GatedClient,
  type KeyedAnswers,
  type KeyedRequest,
  type SamplingRequest,
  type SamplingResult,
} from '../client-requests.js';
import type { AuditLog } from '../../policy/audit.js';
import type { CallPlan } from './admission.js';
import type { HostRefusals } from './refusals.js';
import type { TraceSpan } from '../tracing.js';

/** What the gate reads of its call (a `Call` is one). */
export interface GatedCall {
  readonly id: string;
  readonly softSignal: AbortSignal;
  readonly plan: Pick<CallPlan, 'tool' | 'capabilities'>;
  readonly deps: { readonly clientRequestBytes: number; readonly audit: AuditLog; onLimit(tool: string, limit: string): void };
  /** Where each refusal is noted (a tool that ends with one ends the call with it). */
  readonly refusals?: HostRefusals;
  /** The span the requests' spans go under when the host traces (the call's, or its retry's). */
  readonly attemptSpan?: TraceSpan | undefined;
}

/** Each kind's span, named as MCP names the request, and what it says of the host call (as a guest's other host calls). */
const CLIENT_REQUEST_SPANS: Record<Kind, { name: string; hostCall: string }> = {
  sampling: { name: 'sampling/createMessage', hostCall: 'sample' },
  elicitation: { name: 'elicitation/create', hostCall: 'elicit' },
  roots: { name: 'roots/list', hostCall: 'ask' },
};

/** A round's span (world 0.3.0's `ask`): one for the round, saying its kinds in order. */
const ROUND_SPAN = 'client/ask';

type Kind = ClientRequestKind;
type DenialCode = 'PERMISSION_DENIED' | 'OUTPUT_LIMIT_EXCEEDED' | 'CLIENT_UNSUPPORTED' | 'INVALID_INPUT';

export class ClientGate implements GatedClient {
  readonly #call: GatedCall;
  readonly #client: CallClient | undefined;
  readonly #counts: Record<Kind, number> = { sampling: 0, elicitation: 0, roots: 0 };

  constructor(call: GatedCall, client: CallClient | undefined) {
    this.#call = call;
    this.#client = client;
  }

  sample(request: SamplingRequest): Promise<SamplingResult> {
    return this.#traced('sampling', (span) => this.#sample(request, span));
  }

  elicit(request: ElicitRequest): Promise<ElicitResult> {
    return this.#traced('elicitation', (span) => this.#elicit(request, span));
  }

  sampleText(text: string): Promise<SamplingResult> {
    return this.#traced('sampling', (span) => this.#sampleText(text, span));
  }

  elicitText(text: string): Promise<ElicitResult> {
    return this.#traced('elicitation', (span) => this.#elicitText(text, span));
  }

  async #sample(request: SamplingRequest, span: TraceSpan | undefined): Promise<SamplingResult> {
    const grant = this.#call.plan.tool.grant?.sampling;
    this.#admit('sampling', grant?.maxRequests ?? DEFAULT_SAMPLING_REQUESTS, grant !== undefined);
    this.#checkMaxTokens(request.maxTokens);
    const bytes = this.#checkSize('sampling', request);
    span?.setAttributes({ 'toolhost.client_request.size': bytes });
    const hook = this.#client?.sample;
    if (!hook) this.#unsupported('sampling');
    return this.#ask('sampling', bytes, (options) => hook.call(this.#client, request, options));
  }

  async #elicit(request: ElicitRequest, span: TraceSpan | undefined): Promise<ElicitResult> {
    const grant = this.#call.plan.tool.grant?.elicitation;
    this.#admit('elicitation', grant?.maxRequests ?? DEFAULT_ELICITATION_REQUESTS, grant !== undefined);
    const bytes = this.#checkSize('elicitation', request);
    span?.setAttributes({ 'toolhost.client_request.size': bytes });
    const hook = this.#client?.elicit;
    if (!hook) this.#unsupported('elicitation');
    return this.#ask('elicitation', bytes, (options) => hook.call(this.#client, request, options));
  }

  allowances(): ClientAllowances {
    const grant = this.#call.plan.tool.grant;
    const allowed: ClientAllowances = { bytes: this.#call.deps.clientRequestBytes };
    if (grant?.sampling !== undefined) allowed.sampling = { maxRequests: grant.sampling.maxRequests ?? DEFAULT_SAMPLING_REQUESTS, maxTokens: grant.sampling.maxTokens ?? DEFAULT_SAMPLING_MAX_TOKENS };
    if (grant?.elicitation !== undefined) allowed.elicitation = { maxRequests: grant.elicitation.maxRequests ?? DEFAULT_ELICITATION_REQUESTS };
    if (grant?.roots !== undefined) allowed.roots = { maxRequests: grant.roots.maxRequests ?? DEFAULT_ROOTS_REQUESTS };
    return allowed;
  }

  ask(requests: readonly KeyedRequest[]): Promise<KeyedAnswers> {
    const kinds = Array.isArray(requests) ? requests.map((request) => kindOfMethod(request?.method) as Kind) : [];
    return this.#tracedRound(kinds, async (span) => {
      const first = this.#admitRound(kinds);
      const bytes = this.#spendingOnlyIfSent(kinds, () => {
        this.#checkRound(first, requests);
        return this.#checkSize(first, { requests });
      });
      span?.setAttributes({ 'toolhost.client_request.size': bytes });
      return this.#askRound(requests, bytes);
    });
  }

  askText(kinds: readonly ClientRequestKind[], text: string): Promise<KeyedAnswers> {
    return this.#tracedRound(kinds, async (span) => {
      const first = this.#admitRound(kinds);
      const { bytes, round } = this.#spendingOnlyIfSent(kinds, () => {
        const size = this.#checkTextSize(first, text);
        const parsed = this.#parse(first, text, (value): value is { requests: KeyedRequest[] } => isRecord(value) && Array.isArray(value.requests));
        // The text must say what `kinds` said: the checks above were made on those.
        if (parsed.requests.length !== kinds.length || parsed.requests.some((request, index) => !isRecord(request) || request.method !== CLIENT_REQUEST_METHODS[kinds[index]!])) {
          this.#deny(first, 'INVALID_INPUT', 'the round\'s requests are not the kinds it was admitted as');
        }
        this.#checkRound(first, parsed.requests);
        return { bytes: size, round: parsed };
      });
      span?.setAttributes({ 'toolhost.client_request.size': bytes });
      return this.#askRound(round.requests, bytes);
    });
  }

  /**
   * The grant allows every kind of the round, and the call has requests of each left for all of them
   * (checked before any is counted: a refused round costs nothing); each kind has a hook. Returns the
   * round's first kind (what a refusal of the round as a whole is filed under).
   */
  #admitRound(kinds: readonly Kind[]): Kind {
    const list: readonly Kind[] = Array.isArray(kinds) ? kinds : [];
    if (list.length === 0) this.#deny('elicitation', 'INVALID_INPUT', 'a round must ask at least one thing');
    const first = list[0]!;
    const tally: Record<Kind, number> = { sampling: 0, elicitation: 0, roots: 0 };
    const allowed = this.allowances();
    for (const kind of list) {
      if (!Object.hasOwn(tally, kind)) this.#deny(first, 'INVALID_INPUT', `a round asked for an unknown kind of request (${String(kind)})`);
      const grant = allowed[kind];
      if (grant === undefined) this.#deny(kind, 'PERMISSION_DENIED', notGranted(kind));
      tally[kind] += 1;
      if (this.#counts[kind] + tally[kind] > grant.maxRequests) {
        this.#deny(kind, 'PERMISSION_DENIED', `the round asks for more ${kind} requests than the call has left (grant.${kind}.max_requests: ${grant.maxRequests} a call)`, `${kind}_requests_per_call`, { maxRequests: grant.maxRequests });
      }
    }
    for (const kind of Object.keys(tally) as Kind[]) {
      if (tally[kind] > 0 && this.#hookFor(kind) === undefined) this.#unsupported(kind);
    }
    for (const kind of Object.keys(tally) as Kind[]) this.#counts[kind] += tally[kind];
    return first;
  }

  /** `check` the admitted round (`kinds`); when it refuses, the round's requests are given back: a refused round spends nothing. */
  #spendingOnlyIfSent<T>(kinds: readonly Kind[], check: () => T): T {
    try {
      return check();
    } catch (error) {
      for (const kind of kinds) this.#counts[kind] -= 1;
      throw error;
    }
  }

  /** Keys valid and unique; each request of its method's shape; sampling within its tokens (linear in the round). */
  #checkRound(first: Kind, requests: readonly unknown[]): void {
    const keys = new Set<string>();
    for (const request of requests) {
      if (!isRecord(request) || !isInputKey(request.key)) this.#deny(first, 'INVALID_INPUT', INPUT_KEY_RULE);
      if (keys.has(request.key)) this.#deny(first, 'INVALID_INPUT', `the round names the key ${JSON.stringify(request.key)} twice`);
      keys.add(request.key);
      const kind = kindOfMethod(request.method);
      const shaped = kind === 'sampling' ? isSamplingRequest(request.params) : kind === 'elicitation' ? isElicitRequest(request.params) : kind === 'roots' && isRecord(request.params);
      if (!shaped) this.#deny(kind ?? first, 'INVALID_INPUT', `the ${kind ?? 'round'} request ${JSON.stringify(request.key)} was malformed`);
      if (kind === 'sampling') this.#checkMaxTokens((request.params as SamplingRequest).maxTokens);
    }
  }

  #hookFor(kind: Kind): unknown {
    const client = this.#client;
    return kind === 'sampling' ? client?.sample : kind === 'elicitation' ? client?.elicit : client?.listRoots;
  }

  /** A round, sent as one when the caller can take it so (`CallClient.ask`), else request by request side by side. */
  async #askRound(requests: readonly KeyedRequest[], bytes: number): Promise<KeyedAnswers> {
    const client = this.#client!;
    const kinds = requests.map((request) => kindOfMethod(request.method)!);
    const answers = await this.#ask(kinds, bytes, async (options) => {
      if (client.ask !== undefined) return client.ask(requests, options);
      const settled = await Promise.all(requests.map((request) => answerOne(client, request, options)));
      return Object.fromEntries(requests.map((request, index) => [request.key, settled[index]!]));
    });
    const missing = requests.find((request) => !(isRecord(answers) && Object.hasOwn(answers, request.key) && isRecord(answers[request.key])));
    if (missing !== undefined) {
      throw new ToolhostError('TOOL_ERROR', `the client gave no answer to the request ${JSON.stringify(missing.key)}`, { callId: this.#call.id, details: { reason: `${kindOfMethod(missing.method)}-failed` } });
    }
    // Only the keys asked, in the round's order.
    return Object.fromEntries(requests.map((request) => [request.key, answers[request.key]!]));
  }

  /** The round inside one span when the call is traced. */
  #tracedRound<T>(kinds: readonly Kind[], work: (span: TraceSpan | undefined) => Promise<T>): Promise<T> {
    return this.#inSpan(ROUND_SPAN, { 'toolhost.host_call': 'ask', 'toolhost.client_request.kinds': Array.isArray(kinds) ? kinds.slice(0, 16).join(',') : '' }, work);
  }

  async #sampleText(text: string, span: TraceSpan | undefined): Promise<SamplingResult> {
    const grant = this.#call.plan.tool.grant?.sampling;
    this.#admit('sampling', grant?.maxRequests ?? DEFAULT_SAMPLING_REQUESTS, grant !== undefined);
    const hook = this.#client?.sample;
    if (!hook) this.#unsupported('sampling');
    const bytes = this.#checkTextSize('sampling', text);
    span?.setAttributes({ 'toolhost.client_request.size': bytes });
    const request = this.#parse('sampling', text, isSamplingRequest);
    this.#checkMaxTokens(request.maxTokens);
    return this.#ask('sampling', bytes, (options) => hook.call(this.#client, request, options));
  }

  async #elicitText(text: string, span: TraceSpan | undefined): Promise<ElicitResult> {
    const grant = this.#call.plan.tool.grant?.elicitation;
    this.#admit('elicitation', grant?.maxRequests ?? DEFAULT_ELICITATION_REQUESTS, grant !== undefined);
    const hook = this.#client?.elicit;
    if (!hook) this.#unsupported('elicitation');
    const bytes = this.#checkTextSize('elicitation', text);
    span?.setAttributes({ 'toolhost.client_request.size': bytes });
    const request = this.#parse('elicitation', text, isElicitRequest);
    return this.#ask('elicitation', bytes, (options) => hook.call(this.#client, request, options));
  }

  refused(kind: Kind, reason: ClientRefusal, bytes?: number, counted = true): void {
    try {
      if (!Object.hasOwn(this.#counts, kind)) return;
      if (reason === 'grant') this.#deny(kind, 'PERMISSION_DENIED', notGranted(kind));
      // The runner counted the request before refusing it, as #admit does (a round it refused whole, not).
      if (counted) this.#counts[kind] += 1;
      switch (reason) {
        case 'requests': {
          const maxRequests = this.allowances()[kind]?.maxRequests ?? 0;
          this.#deny(kind, 'PERMISSION_DENIED', tooMany(kind, maxRequests), `${kind}_requests_per_call`, { maxRequests });
          break;
        }
        case 'max_tokens': {
          const maxTokens = this.allowances().sampling?.maxTokens ?? 0;
          this.#deny(kind, 'PERMISSION_DENIED', `a request asked for more tokens than the tool's grant allows (${maxTokens}, grant.sampling.max_tokens)`, 'sampling_max_tokens', { maxTokens });
          break;
        }
        case 'bytes':
          this.#overSize(kind, bytes ?? this.#call.deps.clientRequestBytes + 1);
          break;
        case 'invalid':
          this.#deny(kind, 'INVALID_INPUT', `the ${kind} request was malformed`);
      }
    } catch {
      // The runner told the tool already: this only audits and counts.
    }
  }

  /** `work` inside the request's span when the call is traced. */
  #traced<T>(kind: Kind, work: (span: TraceSpan | undefined) => Promise<T>): Promise<T> {
    const { name, hostCall } = CLIENT_REQUEST_SPANS[kind];
    return this.#inSpan(name, { 'toolhost.host_call': hostCall }, work);
  }

  /** `work` inside a span `name` under the call's when the call is traced (a refusal's code as `error.type`). */
  async #inSpan<T>(name: string, attributes: Record<string, string>, work: (span: TraceSpan | undefined) => Promise<T>): Promise<T> {
    const parent = this.#call.attemptSpan;
    if (parent === undefined) return work(undefined);
    const span = parent.child(name, { attributes });
    try {
      return await work(span);
    } catch (error) {
      span.fail(error instanceof ToolhostError ? error.code : 'INTERNAL');
      throw error;
    } finally {
      span.end();
    }
  }

  /** The grant allows the kind, and the call has requests of it left. */
  #admit(kind: Kind, maxRequests: number, granted: boolean): void {
    if (!granted) this.#deny(kind, 'PERMISSION_DENIED', notGranted(kind));
    this.#counts[kind] += 1;
    if (this.#counts[kind] > maxRequests) {
      this.#deny(kind, 'PERMISSION_DENIED', tooMany(kind, maxRequests), `${kind}_requests_per_call`, { maxRequests });
    }
  }

  #checkMaxTokens(requested: unknown): void {
    const maxTokens = this.#call.plan.tool.grant?.sampling?.maxTokens ?? DEFAULT_SAMPLING_MAX_TOKENS;
    if (!(Number.isInteger(requested) && (requested as number) > 0 && (requested as number) <= maxTokens)) {
      this.#deny('sampling', 'PERMISSION_DENIED', `the request asks for ${String(requested)} tokens; the tool's grant allows at most ${maxTokens} (grant.sampling.max_tokens)`, 'sampling_max_tokens', { maxTokens });
    }
  }

  #checkSize(kind: Kind, value: unknown): number {
    const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
    if (bytes > this.#call.deps.clientRequestBytes) this.#overSize(kind, bytes);
    return bytes;
  }

  /** The text's size, its length first (a UTF-16 unit is at least one byte): nothing longer than the limit is counted byte by byte. */
  #checkTextSize(kind: Kind, text: string): number {
    const max = this.#call.deps.clientRequestBytes;
    if (typeof text !== 'string') this.#deny(kind, 'INVALID_INPUT', `the ${kind} request was malformed`);
    if (text.length > max) this.#overSize(kind, text.length);
    const bytes = Buffer.byteLength(text);
    if (bytes > max) this.#overSize(kind, bytes);
    return bytes;
  }

  #overSize(kind: Kind, bytes: number): never {
    const max = this.#call.deps.clientRequestBytes;
    this.#deny(kind, 'OUTPUT_LIMIT_EXCEEDED', `the ${kind} request is ${bytes} bytes or more, over the limit of ${max} (host.guest_limits.client_request_bytes)`, 'client_request_bytes', { bytes, max });
  }

  /** Parse a size-checked request and check its shape (linear in its size). */
  #parse<T>(kind: Kind, text: string, shaped: (value: unknown) => value is T): T {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!shaped(value)) this.#deny(kind, 'INVALID_INPUT', `the ${kind} request was malformed`);
    return value;
  }

  #unsupported(kind: Kind): never {
    const message = this.#client === undefined
      ? `the caller cannot answer ${kind} requests (only an MCP client that declares the capability, or an embedder's hook, can)`
      : `the calling client did not declare the ${kind} capability`;
    this.#deny(kind, 'CLIENT_UNSUPPORTED', message);
  }

  /** Send what was admitted (one request, or a round of `kinds`) and wait for the answer, at most until the call ends. */
  async #ask<T>(kinds: Kind | readonly Kind[], bytes: number, run: (options: ClientRequestOptions) => Promise<T>): Promise<T> {
    const call = this.#call;
    const signal = call.softSignal;
    const list: readonly Kind[] = typeof kinds === 'string' ? [kinds] : kinds;
    const kind = list.length === 1 ? list[0]! : `round's (${list.join(', ')})`;
    for (const each of new Set(list)) this.#audit(each, 'allowed', undefined, undefined, bytes);
    if (signal.aborted) throw new ToolhostError('CANCELLED', `the call ended before its ${kind} request was sent`, { callId: call.id });
    let stop: (() => void) | undefined;
    const ended = new Promise<never>((_, reject) => {
      stop = () => reject(new ToolhostError('CANCELLED', `the call ended while waiting for the client's ${kind} answer`, { callId: call.id }));
      signal.addEventListener('abort', stop, { once: true });
    });
    let answer: T;
    try {
      answer = await Promise.race([run({ signal, callId: call.id, tool: call.plan.tool.name }), ended]);
    } catch (error) {
      if (error instanceof ToolhostError) throw error;
      throw new ToolhostError('TOOL_ERROR', `the client failed the ${kind} request: ${(error as Error)?.message ?? String(error)}`, { callId: call.id, details: { reason: `${list[0]}-failed` } });
    } finally {
      signal.removeEventListener('abort', stop!);
      ended.catch(() => {});
    }
    const max = call.deps.clientRequestBytes;
    const answerBytes = Buffer.byteLength(JSON.stringify(answer) ?? '');
    if (answerBytes > max) {
      call.deps.onLimit(call.plan.tool.name, 'client_request_bytes');
      throw new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `the client's ${kind} answer is ${answerBytes} bytes, over the limit of ${max} (host.guest_limits.client_request_bytes)`, { callId: call.id, details: { limit: 'client_request_bytes', bytes: answerBytes, max } });
    }
    return answer;
  }

  #deny(kind: Kind, code: DenialCode, message: string, limit?: string, facts?: Record<string, unknown>): never {
    const call = this.#call;
    if (limit !== undefined) call.deps.onLimit(call.plan.tool.name, limit);
    this.#audit(kind, 'denied', code, message);
    const error = new ToolhostError(code, message, { callId: call.id, details: { reason: kind, ...(limit === undefined ? {} : { limit }), ...facts } });
    call.refusals?.note(error.toData());
    throw error;
  }

  #audit(kind: Kind, decision: 'allowed' | 'denied', code: string | undefined, reason: string | undefined, bytes?: number): void {
    const call = this.#call;
    const { capabilities } = call.plan;
    call.deps.audit.record({
      callId: call.id,
      tool: call.plan.tool.name,
      network: capabilities.network,
      privilege: capabilities.privilege,
      decision,
      ...(code === undefined ? {} : { code }),
      ...(reason === undefined ? {} : { reason }),
      grants: { clientRequest: kind, count: this.#counts[kind], ...(bytes === undefined ? {} : { bytes }) },
    });
  }
}

function notGranted(kind: Kind): string {
  return `the tool's grant does not allow ${kind} (grant.${kind})`;
}

function tooMany(kind: Kind, maxRequests: number): string {
  return `the call made more than ${maxRequests} ${kind} requests (grant.${kind}.max_requests)`;
}
