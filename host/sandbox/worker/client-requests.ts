/**
 * The 0.2.0 host functions that ask the calling client something: `sample`
 * (MCP sampling/createMessage) and `elicit` (MCP elicitation/create). Each
 * blocks the guest on the host bridge until the main thread answers; the
 * main thread decides everything (the grant, the caps, whether the caller can
 * answer at all: see sandbox/client-requests.ts) and answers with the result
 * or the `tool-error` the guest gets.
 *
 * Guarantees: a refusal reaches the guest as its `result`'s error (never a
 * trap); the wait is bounded by the call's wall clock, which stops the worker
 * (the bridge's own timeout is only a backstop); waiting uses no CPU, so the
 * call's CPU budget does not run meanwhile. Does not: check sizes or counts
 * (the main thread does, where the grant is known).
 */
import type { GuestElicitAnswer, GuestSampleAnswer, GuestSamplingRequest } from '../protocol.js';
import type { HostBridge } from './host-bridge.js';

/** A `tool-error` as jco's glue lowers a thrown value into a result's error: a plain object, never an Error (that traps). */
interface GuestError {
  code: string;
  message: string;
  details?: string;
}

function ask<T>(bridge: HostBridge | undefined, request: Parameters<HostBridge['request']>[0]): T {
  if (!bridge) throw { code: 'CLIENT_UNSUPPORTED', message: 'no call is running' } satisfies GuestError;
  let answer: { ok: true; value: T } | { ok: false; error: GuestError };
  try {
    answer = bridge.request(request) as typeof answer;
  } catch (error) {
    // The host-call limit, or the main thread failed: the guest still gets an error it can read.
    const message = (error as Error).message;
    const code = /^[A-Z_]+(?=:)/.exec(message)?.[0] ?? 'INTERNAL';
    throw { code, message } satisfies GuestError;
  }
  if (answer.ok) return answer.value;
  const error: GuestError = { code: answer.error.code, message: answer.error.message };
  if (answer.error.details !== undefined) error.details = answer.error.details;
  throw error;
}

/** The `sample` and `elicit` imports, answering for whichever call the instance serves. */
export function clientRequestImports(bridge: () => HostBridge | undefined): Record<string, unknown> {
  return {
    sample: (request: GuestSamplingRequest): Extract<GuestSampleAnswer, { ok: true }>['value'] => ask(bridge(), { op: 'sample', request }),
    elicit: (message: string, requestedSchema: string): Extract<GuestElicitAnswer, { ok: true }>['value'] => ask(bridge(), { op: 'elicit', message, requestedSchema }),
  };
}
