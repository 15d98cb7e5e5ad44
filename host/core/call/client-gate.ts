/**
 * `ctx.client`: a tool's requests to the client that made its call (sampling,
 * elicitation), under the tool's grant, the per-call caps and the audit log,
 * whichever way the tool runs (native or sandboxed) and whoever the caller is.
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
 * Traced calls: each request is a span under the call's (its attempt's), `sampling/createMessage` or
 * `elicitation/create`, from its first check to the answer, ending with the refusal's code as `error.type`;
 * the same for a native tool's request and a guest's (the sandbox opens none of its own for these). It says the
 * kind and the request's size in bytes, never its text or the answer's.
 *
 * Does not: bound how long the client takes (the call's wall budget does),
 * or check the answer beyond its size and shape (the MCP SDK validates it).
 */
import { ToolhostError } from '../../base/errors.js';
import { elicitationSchemaProblem } from '../elicitation-schema.js';
import {
  DEFAULT_ELICITATION_REQUESTS,
  DEFAULT_SAMPLING_MAX_TOKENS,
  DEFAULT_SAMPLING_REQUESTS,
  type CallClient,
  type ClientAllowances,
  type ClientRefusal,
  type ElicitRequest,
  type ElicitResult,
  type GatedClient,
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
};

type Kind = 'sampling' | 'elicitation';
type DenialCode = 'PERMISSION_DENIED' | 'OUTPUT_LIMIT_EXCEEDED' | 'CLIENT_UNSUPPORTED' | 'INVALID_INPUT';

export class ClientGate implements GatedClient {
  readonly #call: GatedCall;
  readonly #client: CallClient | undefined;
  readonly #counts: Record<Kind, number> = { sampling: 0, elicitation: 0 };

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
    return allowed;
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

  refused(kind: Kind, reason: ClientRefusal, bytes?: number): void {
    try {
      if (reason === 'grant') this.#deny(kind, 'PERMISSION_DENIED', notGranted(kind));
      // The runner counted the request before refusing it, as #admit does.
      this.#counts[kind] += 1;
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

  /** `work` inside the request's span when the call is traced (its refusal's code as `error.type`). */
  async #traced<T>(kind: Kind, work: (span: TraceSpan | undefined) => Promise<T>): Promise<T> {
    const parent = this.#call.attemptSpan;
    if (parent === undefined) return work(undefined);
    const { name, hostCall } = CLIENT_REQUEST_SPANS[kind];
    const span = parent.child(name, { attributes: { 'toolhost.host_call': hostCall } });
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

  async #ask<T>(kind: Kind, bytes: number, run: (options: { signal: AbortSignal; callId: string; tool: string }) => Promise<T>): Promise<T> {
    const call = this.#call;
    const signal = call.softSignal;
    this.#audit(kind, 'allowed', undefined, undefined, bytes);
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
      throw new ToolhostError('TOOL_ERROR', `the client failed the ${kind} request: ${(error as Error)?.message ?? String(error)}`, { callId: call.id, details: { reason: `${kind}-failed` } });
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A sampling request's shape: messages of text, image or audio content (what the hooks and the MCP SDK are handed). */
function isSamplingRequest(value: unknown): value is SamplingRequest {
  if (!isRecord(value) || !Array.isArray(value.messages) || typeof value.maxTokens !== 'number') return false;
  for (const message of value.messages as unknown[]) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant') || !isRecord(message.content)) return false;
    const content = message.content;
    if (content.type === 'text' ? typeof content.text !== 'string' : (content.type !== 'image' && content.type !== 'audio') || typeof content.data !== 'string' || typeof content.mimeType !== 'string') return false;
  }
  return true;
}

/** An elicitation request's shape: a message and an object schema with properties (form mode). */
function isElicitRequest(value: unknown): value is ElicitRequest {
  if (!isRecord(value) || typeof value.message !== 'string' || !isRecord(value.requestedSchema)) return false;
  // Again here (linear in the capped text): the SDK checks the client's answer against it on this thread.
  return elicitationSchemaProblem(value.requestedSchema) === undefined;
}
