/**
 * The 0.2.0 host functions that ask the calling client something: `sample`
 * (MCP sampling/createMessage) and `elicit` (MCP elicitation/create). Each
 * blocks the guest on the host bridge until the main thread answers.
 *
 * Everything a guest shapes is done here, on the guest's own thread, under
 * the call's CPU and wall budgets, and never on the main thread: in order,
 * (1) the request counts as a host call (past `host_calls_per_call` it is
 * refused); (2) with the call's allowances (its tool's grant and
 * `client_request_bytes`, in GuestOutputLimits.clientRequests) a kind the
 * grant does not allow, a request past the grant's `max_requests` and a
 * sampling request over its `max_tokens` are refused before anything else of
 * it is looked at; (3) the guest's shapes are converted to MCP's (media to
 * base64, the requested schema parsed and checked) into one JSON text, given
 * up as soon as it would pass `client_request_bytes` (media are measured
 * before they are encoded); (4) only that text crosses to the main thread,
 * which checks the grant, the count and the caller before reading it and its
 * size before parsing it (core/call/client-gate.ts). A refusal here posts one
 * fixed-size `client-refused` note (no guest data), so the main thread audits
 * and counts it as its own. The client's answer comes back in MCP shapes and
 * is converted to the guest's here too.
 *
 * Guarantees: a refusal reaches the guest as its `result`'s error (never a
 * trap); the main thread's work per request is linear in a size capped before
 * it is parsed; the wait is bounded by the call's wall clock, which stops the
 * worker (the bridge's own timeout is only a backstop); waiting uses no CPU,
 * so the call's CPU budget does not run meanwhile.
 * Does not: decide for the main thread (its gate checks everything again).
 */
import { DEFAULT_CLIENT_REQUEST_BYTES, type ClientRefusal, type ClientRequestKind, type SamplingContent, type SamplingResult } from '../../core/client-requests.js';
import type { ClientElicitAnswer, ClientSampleAnswer, GuestClientError, GuestElicitResult, GuestSampleResult, GuestSamplingContent, GuestSamplingRequest } from '../client-wire.js';
import { elicitationSchemaProblem } from '../../core/elicitation-schema.js';
import type { RpcRequest } from '../protocol.js';
import type { HostBridge } from './host-bridge.js';

/** Thrown into the glue as a `tool-error` (a plain object, never an Error: that traps). */
function guestError(code: string, message: string, details?: unknown): GuestClientError {
  const error: GuestClientError = { code, message };
  if (details !== undefined) error.details = JSON.stringify(details);
  return error;
}

/** Refuse here: the main thread gets one fixed-size note to audit and count, the guest its error. */
function refuse(bridge: HostBridge, kind: ClientRequestKind, reason: ClientRefusal, code: string, message: string, details?: Record<string, unknown>, bytes?: number): never {
  bridge.post({ type: 'client-refused', kind, reason, ...(bytes === undefined ? {} : { bytes }) });
  throw guestError(code, message, { reason: kind, ...details });
}

/** Count the request and refuse what the allowances do not allow; returns the byte limit. */
function admit(bridge: HostBridge, kind: ClientRequestKind, maxTokens?: number): number {
  try {
    bridge.countHostCall();
  } catch (error) {
    // The host-call limit: the main thread was told once (a `limit` event) and ends the call.
    throw guestError('OUTPUT_LIMIT_EXCEEDED', (error as Error).message.replace(/^[A-Z_]+: /, ''));
  }
  const allowed = bridge.clientRequests;
  if (allowed === undefined) return DEFAULT_CLIENT_REQUEST_BYTES;
  const grant = allowed[kind];
  if (grant === undefined) refuse(bridge, kind, 'grant', 'PERMISSION_DENIED', `the tool's grant does not allow ${kind} (grant.${kind})`);
  const count = ++bridge.clientCounts[kind];
  if (count > grant.maxRequests) {
    refuse(bridge, kind, 'requests', 'PERMISSION_DENIED', `the call made more than ${grant.maxRequests} ${kind} requests (grant.${kind}.max_requests)`, { limit: `${kind}_requests_per_call`, maxRequests: grant.maxRequests });
  }
  const tokens = allowed.sampling?.maxTokens;
  if (maxTokens !== undefined && tokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens > 0 && maxTokens <= tokens)) {
    refuse(bridge, kind, 'max_tokens', 'PERMISSION_DENIED', `the request asks for ${maxTokens} tokens; the tool's grant allows at most ${tokens} (grant.sampling.max_tokens)`, { limit: 'sampling_max_tokens', maxTokens: tokens });
  }
  return allowed.bytes;
}

function overSize(bridge: HostBridge, kind: ClientRequestKind, bytes: number, max: number): never {
  refuse(bridge, kind, 'bytes', 'OUTPUT_LIMIT_EXCEEDED', `the ${kind} request is ${bytes} bytes or more, over the limit of ${max} (host.guest_limits.client_request_bytes)`, { limit: 'client_request_bytes', bytes, max }, bytes);
}

/** Base64 characters of `bytes` bytes. */
function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/**
 * The guest's sampling request as MCP `sampling/createMessage` parameters in
 * JSON text, given up (with a lower bound of its size) as soon as it would be
 * over `max` bytes: the work is linear in min(the request, `max`).
 */
function samplingText(guest: GuestSamplingRequest, max: number): string | { over: number } {
  const rest: Record<string, unknown> = { maxTokens: guest.maxTokens };
  if (guest.systemPrompt !== undefined) rest.systemPrompt = guest.systemPrompt;
  if (guest.temperature !== undefined) rest.temperature = guest.temperature;
  if (guest.stopSequences.length > 0) rest.stopSequences = guest.stopSequences;
  const preferences = guest.modelPreferences;
  if (preferences !== undefined) {
    rest.modelPreferences = {
      ...(preferences.hints.length === 0 ? {} : { hints: preferences.hints.map((name) => ({ name })) }),
      ...(preferences.costPriority === undefined ? {} : { costPriority: preferences.costPriority }),
      ...(preferences.speedPriority === undefined ? {} : { speedPriority: preferences.speedPriority }),
      ...(preferences.intelligencePriority === undefined ? {} : { intelligencePriority: preferences.intelligencePriority }),
    };
  }
  // A string's length is a lower bound of its UTF-8 bytes: over `max` in characters is over in bytes.
  const tail = JSON.stringify(rest);
  let size = tail.length + 16;
  if (size > max) return { over: size };
  const parts: string[] = [];
  for (const message of guest.messages) {
    const content = message.content;
    // The bulk of a message, measured before it is encoded.
    const bulk = content.tag === 'text' ? content.val.length : base64Length(content.val.data.length);
    if (size + bulk > max) return { over: size + bulk };
    const part = JSON.stringify({ role: message.role, content: toMcpContent(content) });
    size += part.length + 1;
    if (size > max) return { over: size };
    parts.push(part);
  }
  return `{"messages":[${parts.join(',')}],${tail.slice(1)}`;
}

function toMcpContent(content: GuestSamplingContent): SamplingContent {
  if (content.tag === 'text') return { type: 'text', text: content.val };
  return { type: content.tag, data: Buffer.from(content.val.data.buffer, content.val.data.byteOffset, content.val.data.byteLength).toString('base64'), mimeType: content.val.mimeType };
}

function toGuestContent(content: SamplingContent): GuestSamplingContent {
  switch (content.type) {
    case 'text':
      return { tag: 'text', val: content.text };
    case 'image':
    case 'audio':
      return { tag: content.type, val: { data: new Uint8Array(Buffer.from(content.data, 'base64')), mimeType: content.mimeType } };
    default:
      throw guestError('TOOL_ERROR', `the client answered with content of type ${JSON.stringify((content as { type?: unknown }).type)}, which the tool world cannot carry`);
  }
}

/** Ask the main thread (the request was counted by `admit`); its refusals and failures become the guest's error. */
function ask<T>(bridge: HostBridge, request: RpcRequest): T {
  let answer: { ok: true; value: T } | { ok: false; error: GuestClientError };
  try {
    answer = bridge.request(request, undefined, true) as typeof answer;
  } catch (error) {
    // The main thread failed or did not answer: the guest still gets an error it can read.
    const message = (error as Error).message;
    const code = /^[A-Z_]+(?=:)/.exec(message)?.[0] ?? 'INTERNAL';
    throw guestError(code, message);
  }
  if (answer.ok) return answer.value;
  const error: GuestClientError = { code: answer.error.code, message: answer.error.message };
  if (answer.error.details !== undefined) error.details = answer.error.details;
  throw error;
}

function sample(bridge: HostBridge | undefined, guest: GuestSamplingRequest): GuestSampleResult {
  if (!bridge) throw guestError('CLIENT_UNSUPPORTED', 'no call is running');
  const max = admit(bridge, 'sampling', guest.maxTokens);
  const text = samplingText(guest, max);
  if (typeof text !== 'string') overSize(bridge, 'sampling', text.over, max);
  const bytes = Buffer.byteLength(text);
  if (bytes > max) overSize(bridge, 'sampling', bytes, max);
  const result = ask<Extract<ClientSampleAnswer, { ok: true }>['value']>(bridge, { op: 'sample', request: text }) as SamplingResult;
  const value: GuestSampleResult = { role: result.role, content: toGuestContent(result.content), model: String(result.model) };
  if (typeof result.stopReason === 'string') value.stopReason = result.stopReason;
  return value;
}

function elicit(bridge: HostBridge | undefined, message: string, requestedSchema: string): GuestElicitResult {
  if (!bridge) throw guestError('CLIENT_UNSUPPORTED', 'no call is running');
  const max = admit(bridge, 'elicitation');
  // Lengths first: nothing over the limit is parsed.
  if (message.length + requestedSchema.length > max) overSize(bridge, 'elicitation', message.length + requestedSchema.length, max);
  let schema: unknown;
  try {
    schema = JSON.parse(requestedSchema);
  } catch {
    schema = undefined;
  }
  // MCP's flat subset only: the SDK checks the client's answer against this schema on the main thread.
  const problem = elicitationSchemaProblem(schema);
  if (problem !== undefined) refuse(bridge, 'elicitation', 'invalid', 'INVALID_INPUT', problem);
  const record = schema;
  let text = '';
  try {
    text = JSON.stringify({ message, requestedSchema: record });
  } catch {
    // Nested deeper than the stack allows: no client could read it either.
    refuse(bridge, 'elicitation', 'invalid', 'INVALID_INPUT', 'requested-schema is nested too deeply');
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > max) overSize(bridge, 'elicitation', bytes, max);
  const result = ask<Extract<ClientElicitAnswer, { ok: true }>['value']>(bridge, { op: 'elicit', request: text });
  const value: GuestElicitResult = { action: result.action };
  if (result.action === 'accept' && result.content !== undefined) value.content = JSON.stringify(result.content);
  return value;
}

/** The `sample` and `elicit` imports, answering for whichever call the instance serves. */
export function clientRequestImports(bridge: () => HostBridge | undefined): Record<string, unknown> {
  return {
    sample: (request: GuestSamplingRequest): GuestSampleResult => sample(bridge(), request),
    elicit: (message: string, requestedSchema: string): GuestElicitResult => elicit(bridge(), message, requestedSchema),
  };
}
