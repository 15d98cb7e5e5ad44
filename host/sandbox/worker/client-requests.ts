/**
 * The host functions that ask the calling client something: 0.2.0's `sample`
 * (MCP sampling/createMessage) and `elicit` (MCP elicitation/create), and
 * 0.3.0's `ask` (a round of those and `roots/list`, under the guest's keys).
 * Each blocks the guest on the host bridge until the main thread answers.
 *
 * Everything a guest shapes is done here, on the guest's own thread, under
 * the call's CPU and wall budgets, and never on the main thread: in order,
 * (1) the request counts as a host call (past `host_calls_per_call` it is
 * refused); (2) with the call's allowances (its tool's grant and
 * `client_request_bytes`, in GuestOutputLimits.clientRequests) a kind the
 * grant does not allow, a request past the grant's `max_requests` and a
 * sampling request over its `max_tokens` are refused before anything else of
 * it is looked at (a round is admitted whole, before any of it is counted;
 * its keys are checked first); (3) the guest's shapes are converted to MCP's (media to
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
import { CLIENT_REQUEST_METHODS, DEFAULT_CLIENT_REQUEST_BYTES, INPUT_KEY_RULE, isInputKey, type ClientRefusal, type ClientRequestKind, type ElicitResult, type KeyedAnswers, type ListRootsResult, type SamplingContent, type SamplingResult } from '../../core/client-requests.js';
import type { ClientElicitAnswer, ClientSampleAnswer, GuestClientError, GuestElicitResult, GuestKeyedRequest, GuestKeyedResponse, GuestSampleResult, GuestSamplingContent, GuestSamplingRequest } from '../client-wire.js';
import { elicitationSchemaProblem } from '../../core/elicitation-schema.js';
import type { RpcRequest } from '../protocol.js';
import type { HostBridge } from './host-bridge.js';

/** Thrown into the glue as a `tool-error` (a plain object, never an Error: that traps). */
function guestError(code: string, message: string, details?: unknown): GuestClientError {
  const error: GuestClientError = { code, message };
  if (details !== undefined) error.details = JSON.stringify(details);
  return error;
}

/**
 * Refuse here: the main thread gets one fixed-size note to audit and count, the guest its error.
 * `counted` false: the request was not counted against its kind (a round refused before it was admitted).
 */
function refuse(bridge: HostBridge, kind: ClientRequestKind, reason: ClientRefusal, code: string, message: string, details?: Record<string, unknown>, bytes?: number, counted = true): never {
  bridge.post({ type: 'client-refused', kind, reason, ...(bytes === undefined ? {} : { bytes }), ...(counted ? {} : { uncounted: true }) });
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

function overSize(bridge: HostBridge, kind: ClientRequestKind, bytes: number, max: number, counted = true): never {
  refuse(bridge, kind, 'bytes', 'OUTPUT_LIMIT_EXCEEDED', `the ${kind} request is ${bytes} bytes or more, over the limit of ${max} (host.guest_limits.client_request_bytes)`, { limit: 'client_request_bytes', bytes, max }, bytes, counted);
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
  return toGuestSample(ask<Extract<ClientSampleAnswer, { ok: true }>['value']>(bridge, { op: 'sample', request: text }));
}

function toGuestSample(result: SamplingResult): GuestSampleResult {
  const value: GuestSampleResult = { role: result.role, content: toGuestContent(result.content), model: String(result.model) };
  if (typeof result.stopReason === 'string') value.stopReason = result.stopReason;
  return value;
}

const KIND_OF_TAG: Record<GuestKeyedRequest['request']['tag'], ClientRequestKind> = { elicitation: 'elicitation', sampling: 'sampling', roots: 'roots' };

/**
 * Admit a round whole: one host call; keys valid and unique; every kind granted and within its
 * requests left. Returns what the round would spend of each kind: `askRound` counts it once the round
 * is made and sent (a refused round spends none of the grant's requests).
 */
function admitRound(bridge: HostBridge, requests: readonly GuestKeyedRequest[]): { kinds: ClientRequestKind[]; tally: Record<ClientRequestKind, number>; max: number } {
  try {
    bridge.countHostCall();
  } catch (error) {
    throw guestError('OUTPUT_LIMIT_EXCEEDED', (error as Error).message.replace(/^[A-Z_]+: /, ''));
  }
  const list: readonly GuestKeyedRequest[] = Array.isArray(requests) ? requests : [];
  if (list.length === 0) refuse(bridge, 'elicitation', 'invalid', 'INVALID_INPUT', 'a round must ask at least one thing', undefined, undefined, false);
  const allowed = bridge.clientRequests;
  const tally: Record<ClientRequestKind, number> = { sampling: 0, elicitation: 0, roots: 0 };
  const keys = new Set<string>();
  const kinds: ClientRequestKind[] = [];
  for (const { key, request } of list) {
    const kind = KIND_OF_TAG[request.tag];
    if (!isInputKey(key)) refuse(bridge, kind, 'invalid', 'INVALID_INPUT', INPUT_KEY_RULE, undefined, undefined, false);
    if (keys.has(key)) refuse(bridge, kind, 'invalid', 'INVALID_INPUT', `the round names the key ${JSON.stringify(key)} twice`, undefined, undefined, false);
    keys.add(key);
    kinds.push(kind);
    if (allowed === undefined) continue;
    const grant = allowed[kind];
    if (grant === undefined) refuse(bridge, kind, 'grant', 'PERMISSION_DENIED', `the tool's grant does not allow ${kind} (grant.${kind})`, undefined, undefined, false);
    tally[kind] += 1;
    if (bridge.clientCounts[kind] + tally[kind] > grant.maxRequests) {
      refuse(bridge, kind, 'requests', 'PERMISSION_DENIED', `the round asks for more ${kind} requests than the call has left (grant.${kind}.max_requests: ${grant.maxRequests} a call)`, { limit: `${kind}_requests_per_call`, maxRequests: grant.maxRequests }, undefined, false);
    }
    const tokens = allowed.sampling?.maxTokens;
    if (request.tag === 'sampling' && tokens !== undefined && !(Number.isInteger(request.val.maxTokens) && request.val.maxTokens > 0 && request.val.maxTokens <= tokens)) {
      refuse(bridge, kind, 'max_tokens', 'PERMISSION_DENIED', `the request ${JSON.stringify(key)} asks for ${request.val.maxTokens} tokens; the tool's grant allows at most ${tokens} (grant.sampling.max_tokens)`, { limit: 'sampling_max_tokens', maxTokens: tokens }, undefined, false);
    }
  }
  return { kinds, tally, max: allowed?.bytes ?? DEFAULT_CLIENT_REQUEST_BYTES };
}

/**
 * A round (0.3.0's `ask`): admitted whole, converted to one JSON text given up as soon as it would pass
 * `client_request_bytes`, asked in one host call; the answers come back in the order of the requests.
 */
function askRound(bridge: HostBridge | undefined, requests: GuestKeyedRequest[]): GuestKeyedResponse[] {
  if (!bridge) throw guestError('CLIENT_UNSUPPORTED', 'no call is running');
  const { kinds, tally, max } = admitRound(bridge, requests);
  const parts: string[] = [];
  let size = 16;
  for (const [index, { key, request }] of requests.entries()) {
    const kind = kinds[index]!;
    const room = max - size;
    let params: string;
    if (request.tag === 'sampling') {
      const text = samplingText(request.val, room);
      if (typeof text !== 'string') overSize(bridge, kind, size + text.over, max, false);
      params = text;
    } else if (request.tag === 'elicitation') {
      // Checked against the whole limit (its message names it); the round's size is checked below.
      params = elicitationText(bridge, request.val.message, request.val.requestedSchema, max, false);
    } else {
      params = '{}';
    }
    const part = `{"key":${JSON.stringify(key)},"method":${JSON.stringify(CLIENT_REQUEST_METHODS[kind])},"params":${params}}`;
    size += part.length + 1;
    if (size > max) overSize(bridge, kind, size, max, false);
    parts.push(part);
  }
  const text = `{"requests":[${parts.join(',')}]}`;
  const bytes = Buffer.byteLength(text);
  if (bytes > max) overSize(bridge, kinds[0]!, bytes, max, false);
  for (const kind of Object.keys(tally) as ClientRequestKind[]) bridge.clientCounts[kind] += tally[kind];
  const answers = ask<KeyedAnswers>(bridge, { op: 'ask', kinds, request: text });
  return requests.map(({ key, request }) => ({ key, response: toGuestResponse(request.tag, Object.hasOwn(answers, key) ? answers[key] : undefined) }));
}

function toGuestResponse(tag: GuestKeyedRequest['request']['tag'], answer: KeyedAnswers[string] | undefined): GuestKeyedResponse['response'] {
  if (answer === undefined) throw guestError('TOOL_ERROR', 'the client gave no answer to a request of the round');
  switch (tag) {
    case 'sampling':
      return { tag, val: toGuestSample(answer as SamplingResult) };
    case 'elicitation':
      return { tag, val: toGuestElicit(answer as ElicitResult) };
    case 'roots': {
      const roots = (answer as ListRootsResult).roots;
      if (!Array.isArray(roots)) throw guestError('TOOL_ERROR', 'the client answered roots/list without a list of roots');
      return { tag, val: roots.map((root) => ({ uri: String(root.uri), ...(typeof root.name === 'string' ? { name: root.name } : {}) })) };
    }
  }
}

function elicit(bridge: HostBridge | undefined, message: string, requestedSchema: string): GuestElicitResult {
  if (!bridge) throw guestError('CLIENT_UNSUPPORTED', 'no call is running');
  const max = admit(bridge, 'elicitation');
  const text = elicitationText(bridge, message, requestedSchema, max);
  const bytes = Buffer.byteLength(text);
  if (bytes > max) overSize(bridge, 'elicitation', bytes, max);
  return toGuestElicit(ask<Extract<ClientElicitAnswer, { ok: true }>['value']>(bridge, { op: 'elicit', request: text }));
}

function toGuestElicit(result: ElicitResult): GuestElicitResult {
  const value: GuestElicitResult = { action: result.action };
  if (result.action === 'accept' && result.content !== undefined) value.content = JSON.stringify(result.content);
  return value;
}

/** MCP `elicitation/create` parameters in JSON text (form mode); lengths are checked before anything is parsed. */
function elicitationText(bridge: HostBridge, message: string, requestedSchema: string, max: number, counted = true): string {
  // Lengths first: nothing over the limit is parsed.
  if (message.length + requestedSchema.length > max) overSize(bridge, 'elicitation', message.length + requestedSchema.length, max, counted);
  let schema: unknown;
  try {
    schema = JSON.parse(requestedSchema);
  } catch {
    schema = undefined;
  }
  // MCP's flat subset only: the SDK checks the client's answer against this schema on the main thread.
  const problem = elicitationSchemaProblem(schema);
  if (problem !== undefined) refuse(bridge, 'elicitation', 'invalid', 'INVALID_INPUT', problem, undefined, undefined, counted);
  const record = schema;
  let text = '';
  try {
    text = JSON.stringify({ message, requestedSchema: record });
  } catch {
    // Nested deeper than the stack allows: no client could read it either.
    refuse(bridge, 'elicitation', 'invalid', 'INVALID_INPUT', 'requested-schema is nested too deeply', undefined, undefined, counted);
  }
  return text;
}

/** The `sample`, `elicit` and `ask` imports, answering for whichever call the instance serves. */
export function clientRequestImports(bridge: () => HostBridge | undefined): Record<string, unknown> {
  return {
    sample: (request: GuestSamplingRequest): GuestSampleResult => sample(bridge(), request),
    elicit: (message: string, requestedSchema: string): GuestElicitResult => elicit(bridge(), message, requestedSchema),
    ask: (requests: GuestKeyedRequest[]): GuestKeyedResponse[] => askRound(bridge(), requests),
  };
}
