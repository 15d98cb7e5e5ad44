/**
 * One sandboxed call's host calls, answered on the main thread: the guest's state reads and writes, its
 * outgoing HTTP (guest-network.ts), its sampling and elicitation requests (client-requests.ts, each only
 * with a place among the workers waiting for clients, client-waits.ts), and its worker's request for the
 * component's modules. Traced calls get a span per host call (sampling's and elicitation's come from the
 * call's client gate, as a native tool's do).
 *
 * Guarantees: at most `maxHostCalls` are answered per call (the worker refuses past it first; this is the
 * main thread's own check); a refusal the guest can see is kept by the call (`refused`), so a tool that ends
 * with it ends its call with the host's error; every place among the client waits this call took is given
 * back by `close`, which the call's run calls when it ends, whatever its requests did.
 */
import type { ToolContext } from '../core/context.js';
import { ToolhostError } from '../base/errors.js';
import type { TraceSpan } from '../core/tracing.js';
import { DEFAULT_CLIENT_REQUEST_BYTES } from '../core/client-requests.js';
import type { GuestNetwork } from './guest-network.js';
import { answerAsk, answerElicit, answerSample, failure } from './client-requests.js';
import type { CallClientWaits, ClientWaits } from './client-waits.js';
import type { CoreModules, GuestOutputLimits, RpcRequest } from './protocol.js';

export interface GuestHostCallsOptions {
  ctx: ToolContext;
  /** The component whose modules a worker may ask for. */
  component: { id: string; modulesFor(memoryMb: number): Promise<CoreModules> };
  /** The call's limits (its client allowances' byte limit among them). */
  limits: GuestOutputLimits;
  maxHostCalls: number;
  /** The call's network client, made at the guest's first request. */
  network: () => GuestNetwork;
  /** The pool's places for workers waiting on clients. */
  clientWaits: () => ClientWaits;
  /** The host refused the guest: the refusal the call may end with (core/call/refusals.ts). */
  refused(error: ToolhostError): void;
  /** One of the host's limits was hit (toolhost_limit_hits_total). */
  limit(limit: string): void;
}

export class GuestHostCalls {
  readonly #options: GuestHostCallsOptions;
  #count = 0;
  /** Made at the call's first sampling or elicitation request (most calls make none). */
  #clientWaits: CallClientWaits | undefined;

  constructor(options: GuestHostCallsOptions) {
    this.#options = options;
  }

  /** `answer` inside a span of its own (the guest's host calls of a traced call). */
  async traced(parent: TraceSpan, request: RpcRequest): Promise<unknown> {
    // Sampling and elicitation get their spans from the call's client gate (core/call/client-gate.ts), as a native tool's do.
    if (request.op === 'modules' || request.op === 'sample' || request.op === 'elicit' || request.op === 'ask') return this.answer(request);
    const span = parent.child(HOST_CALL_SPANS[request.op], { attributes: hostCallAttributes(request) });
    try {
      const answer = await this.answer(request, span);
      if (request.op === 'get-state') span.setAttributes({ 'toolhost.state.found': answer !== undefined && answer !== null });
      return answer;
    } catch (error) {
      span.fail(error instanceof ToolhostError ? error.code : /^([A-Z_]+):/.exec((error as Error).message)?.[1] ?? 'INTERNAL');
      throw error;
    } finally {
      span.end();
    }
  }

  async answer(request: RpcRequest, span?: TraceSpan): Promise<unknown> {
    const { ctx, component, maxHostCalls } = this.#options;
    if (request.op === 'modules') {
      if (request.componentId !== component.id) throw new Error('unknown component');
      return component.modulesFor(request.memoryMb);
    }
    // The worker refuses host calls past the limit; this is the main thread's own check.
    this.#count += 1;
    if (this.#count > maxHostCalls) throw new Error(`OUTPUT_LIMIT_EXCEEDED: more than ${maxHostCalls} host calls in one call`);
    switch (request.op) {
      case 'get-state':
        return ctx.state.getRaw(request.key);
      case 'set-state':
        try {
          await ctx.state.setRaw(request.key, request.value);
        } catch (error) {
          // The guest gets a string: lead with the stable code so it can tell a limit from a failure.
          if (!(error instanceof ToolhostError)) throw error;
          this.#options.refused(error);
          throw new Error(`${error.code}: ${error.message}`);
        }
        return null;
      case 'http':
        return this.#options.network().send(request.request, span);
      case 'sample':
      case 'elicit':
      case 'ask':
        return this.#askClient(request);
    }
  }

  /** The call's run ended: give back its places among the client waits. */
  close(): void {
    this.#clientWaits?.close();
  }

  /** The worker waits, blocked, until the client answers: only with a place (client-waits.ts). */
  async #askClient(request: Extract<RpcRequest, { op: 'sample' | 'elicit' | 'ask' }>): Promise<unknown> {
    const { ctx, limits } = this.#options;
    const waits = (this.#clientWaits ??= this.#options.clientWaits().forCall(ctx.principal, ctx.callId));
    const full = waits.enter();
    if (full !== undefined) {
      this.#options.limit((full.details as { limit: string }).limit);
      this.#options.refused(full);
      return failure(full);
    }
    try {
      const maxBytes = limits.clientRequests?.bytes ?? DEFAULT_CLIENT_REQUEST_BYTES;
      switch (request.op) {
        case 'sample': return await answerSample(ctx, request.request, maxBytes);
        case 'elicit': return await answerElicit(ctx, request.request, maxBytes);
        case 'ask': return await answerAsk(ctx, request.kinds, request.request, maxBytes);
      }
    } finally {
      waits.leave();
    }
  }
}

/** Span names of the guest's host calls (sampling's and elicitation's: core/call/client-gate.ts `CLIENT_REQUEST_SPANS`). */
const HOST_CALL_SPANS: Record<Exclude<RpcRequest['op'], 'modules' | 'sample' | 'elicit' | 'ask'>, string> = {
  'get-state': 'state.get',
  'set-state': 'state.set',
  http: 'http.client',
};

/** What a host call's span says of it: its kind and sizes, never a key's or a value's text. */
function hostCallAttributes(request: Exclude<RpcRequest, { op: 'modules' | 'sample' | 'elicit' | 'ask' }>): Record<string, string | number> {
  switch (request.op) {
    case 'get-state': return { 'toolhost.host_call': request.op };
    case 'set-state': return { 'toolhost.host_call': request.op, 'toolhost.state.value.size': request.value.length };
    case 'http': return { 'toolhost.host_call': request.op, 'http.request.method': request.request.method };
  }
}
