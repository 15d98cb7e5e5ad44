/**
 * The main thread's side of a guest's `sample`, `elicit` (0.2.0) and `ask` (0.3.0): the
 * request arrives as JSON text the worker made from the guest's shapes and
 * size-checked under the call's budgets (worker/client-requests.ts); it goes
 * to the call's `ctx.client`, which checks the grant, the count and the
 * caller before it reads the text and its size before it parses it
 * (core/call/client-gate.ts). The client's answer goes back in MCP shapes
 * (size-checked by the gate); the worker makes the guest's shapes of it.
 * Every refusal becomes the `tool-error` the guest gets (`code` is a toolhost
 * error code). This file decides nothing and converts nothing a guest shaped.
 *
 * Guarantees: the answer is always data the worker can hand the glue (never a
 * rejected promise for a refusal), so the guest sees an error result, not a
 * trap; the main thread's work on a request is linear in a size capped before
 * parsing (`client_request_bytes`).
 */
import { ToolhostError } from '../base/errors.js';
import type { ToolContext } from '../core/context.js';
import type { ClientRequestKind, ElicitRequest, ElicitResult, KeyedAnswers, KeyedRequest, SamplingRequest, SamplingResult } from '../core/client-requests.js';
import type { ClientAskAnswer, ClientElicitAnswer, ClientSampleAnswer, GuestClientError } from './client-wire.js';

/** A refusal as the guest gets it: its request's error (`code` a toolhost error code), never a trap. */
export function failure(error: unknown): { ok: false; error: GuestClientError } {
  if (error instanceof ToolhostError) {
    const out: GuestClientError = { code: error.code, message: error.message };
    if (error.details !== undefined) out.details = JSON.stringify(error.details);
    return { ok: false, error: out };
  }
  return { ok: false, error: { code: 'INTERNAL', message: (error as Error)?.message ?? String(error) } };
}

/**
 * A gated client without the text entry points (an embedder's own runner
 * context): the text is size-checked here before it is parsed, and the object
 * goes through the ordinary entry point, which checks the rest.
 */
function parsed<T>(text: string, max: number): T {
  if (text.length > max || Buffer.byteLength(text) > max) {
    throw new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `the request is over the limit of ${max} bytes (host.guest_limits.client_request_bytes)`, { details: { limit: 'client_request_bytes', max } });
  }
  return JSON.parse(text) as T;
}

/** A guest's sampling request (JSON text), sent through the call's gated client. */
export async function answerSample(ctx: ToolContext, text: string, maxBytes: number): Promise<ClientSampleAnswer> {
  try {
    const client = ctx.client;
    const result: SamplingResult = client.sampleText ? await client.sampleText(text) : await client.sample(parsed<SamplingRequest>(text, maxBytes));
    return { ok: true, value: result };
  } catch (error) {
    return failure(error);
  }
}

/** A guest's elicitation request (JSON text), sent through the call's gated client. */
export async function answerElicit(ctx: ToolContext, text: string, maxBytes: number): Promise<ClientElicitAnswer> {
  try {
    const client = ctx.client;
    const result: ElicitResult = client.elicitText ? await client.elicitText(text) : await client.elicit(parsed<ElicitRequest>(text, maxBytes));
    return { ok: true, value: result };
  } catch (error) {
    return failure(error);
  }
}

/** A guest's round (JSON text, its kinds beside it), sent through the call's gated client. */
export async function answerAsk(ctx: ToolContext, kinds: ClientRequestKind[], text: string, maxBytes: number): Promise<ClientAskAnswer> {
  try {
    const client = ctx.client;
    const answers: KeyedAnswers = client.askText ? await client.askText(kinds, text) : await client.ask(parsed<{ requests: KeyedRequest[] }>(text, maxBytes).requests);
    return { ok: true, value: answers };
  } catch (error) {
    return failure(error);
  }
}
