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
 * Does not: bound how long the client takes (the call's wall budget does),
 * or check the answer beyond its size and shape (the MCP SDK validates it).
 */
import { ToolhostError } from '../../base/errors.js';
import {
  DEFAULT_ELICITATION_REQUESTS,
  DEFAULT_SAMPLING_MAX_TOKENS,
  DEFAULT_SAMPLING_REQUESTS,
  type CallClient,
  type ElicitRequest,
  type ElicitResult,
  type GatedClient,
  type SamplingRequest,
  type SamplingResult,
} from '../client-requests.js';
import type { AuditLog } from '../../policy/audit.js';
import type { CallPlan } from './admission.js';

/** What the gate reads of its call (a `Call` is one). */
export interface GatedCall {
  readonly id: string;
  readonly softSignal: AbortSignal;
  readonly plan: Pick<CallPlan, 'tool' | 'capabilities'>;
  readonly deps: { readonly clientRequestBytes: number; readonly audit: AuditLog; onLimit(tool: string, limit: string): void };
}

type Kind = 'sampling' | 'elicitation';

export class ClientGate implements GatedClient {
  readonly #call: GatedCall;
  readonly #client: CallClient | undefined;
  readonly #counts: Record<Kind, number> = { sampling: 0, elicitation: 0 };

  constructor(call: GatedCall, client: CallClient | undefined) {
    this.#call = call;
    this.#client = client;
  }

  async sample(request: SamplingRequest): Promise<SamplingResult> {
    const grant = this.#call.plan.tool.grant?.sampling;
    this.#admit('sampling', grant?.maxRequests ?? DEFAULT_SAMPLING_REQUESTS, grant !== undefined);
    const maxTokens = grant?.maxTokens ?? DEFAULT_SAMPLING_MAX_TOKENS;
    if (!(Number.isInteger(request.maxTokens) && request.maxTokens > 0 && request.maxTokens <= maxTokens)) {
      this.#deny('sampling', 'PERMISSION_DENIED', `the request asks for ${request.maxTokens} tokens; the tool's grant allows at most ${maxTokens} (grant.sampling.max_tokens)`, 'sampling_max_tokens', { maxTokens });
    }
    const bytes = this.#checkSize('sampling', request);
    const hook = this.#client?.sample;
    if (!hook) this.#unsupported('sampling');
    return this.#ask('sampling', bytes, (options) => hook.call(this.#client, request, options));
  }

  async elicit(request: ElicitRequest): Promise<ElicitResult> {
    const grant = this.#call.plan.tool.grant?.elicitation;
    this.#admit('elicitation', grant?.maxRequests ?? DEFAULT_ELICITATION_REQUESTS, grant !== undefined);
    const bytes = this.#checkSize('elicitation', request);
    const hook = this.#client?.elicit;
    if (!hook) this.#unsupported('elicitation');
    return this.#ask('elicitation', bytes, (options) => hook.call(this.#client, request, options));
  }

  /** The grant allows the kind, and the call has requests of it left. */
  #admit(kind: Kind, maxRequests: number, granted: boolean): void {
    if (!granted) this.#deny(kind, 'PERMISSION_DENIED', `the tool's grant does not allow ${kind} (grant.${kind})`);
    this.#counts[kind] += 1;
    if (this.#counts[kind] > maxRequests) {
      this.#deny(kind, 'PERMISSION_DENIED', `the call made more than ${maxRequests} ${kind} requests (grant.${kind}.max_requests)`, `${kind}_requests_per_call`, { maxRequests });
    }
  }

  #checkSize(kind: Kind, value: unknown): number {
    const max = this.#call.deps.clientRequestBytes;
    const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
    if (bytes > max) this.#deny(kind, 'OUTPUT_LIMIT_EXCEEDED', `the ${kind} request is ${bytes} bytes, over the limit of ${max} (host.guest_limits.client_request_bytes)`, 'client_request_bytes', { bytes, max });
    return bytes;
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

  #deny(kind: Kind, code: 'PERMISSION_DENIED' | 'OUTPUT_LIMIT_EXCEEDED' | 'CLIENT_UNSUPPORTED', message: string, limit?: string, facts?: Record<string, unknown>): never {
    const call = this.#call;
    if (limit !== undefined) call.deps.onLimit(call.plan.tool.name, limit);
    this.#audit(kind, 'denied', code, message);
    throw new ToolhostError(code, message, { callId: call.id, details: { reason: kind, ...(limit === undefined ? {} : { limit }), ...facts } });
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
