/**
 * What a tool's requests to its caller look like (MCP's shapes, as the gate checks them) and which of
 * the caller's hooks answers each: the gate's checks of shape, kept apart from its decisions
 * (client-gate.ts). Linear in the request; nothing here decides policy.
 */
import { elicitationSchemaProblem } from '../elicitation-schema.js';
import { CLIENT_REQUEST_METHODS, type CallClient, type ClientRequestKind, type ClientRequestOptions, type ElicitRequest, type KeyedAnswers, type KeyedRequest, type SamplingRequest } from '../client-requests.js';

const KINDS_BY_METHOD: ReadonlyMap<unknown, ClientRequestKind> = new Map(Object.entries(CLIENT_REQUEST_METHODS).map(([kind, method]) => [method, kind as ClientRequestKind]));

/** The kind of an MCP method a round may carry; undefined for anything else (a Map: no inherited names). */
export function kindOfMethod(method: unknown): ClientRequestKind | undefined {
  return KINDS_BY_METHOD.get(method);
}

/** One request of a round through the caller's hook for its kind (the round's admission checked the hook exists). */
export async function answerOne(client: CallClient, request: KeyedRequest, options: ClientRequestOptions): Promise<KeyedAnswers[string]> {
  switch (request.method) {
    case 'sampling/createMessage':
      return client.sample!(request.params, options);
    case 'elicitation/create':
      return client.elicit!(request.params, options);
    case 'roots/list':
      return client.listRoots!(options);
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A sampling request's shape: messages of text, image or audio content (what the hooks and the MCP SDK are handed). */
export function isSamplingRequest(value: unknown): value is SamplingRequest {
  if (!isRecord(value) || !Array.isArray(value.messages) || typeof value.maxTokens !== 'number') return false;
  for (const message of value.messages as unknown[]) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant') || !isRecord(message.content)) return false;
    const content = message.content;
    if (content.type === 'text' ? typeof content.text !== 'string' : (content.type !== 'image' && content.type !== 'audio') || typeof content.data !== 'string' || typeof content.mimeType !== 'string') return false;
  }
  return true;
}

/** An elicitation request's shape: a message and an object schema with properties (form mode). */
export function isElicitRequest(value: unknown): value is ElicitRequest {
  if (!isRecord(value) || typeof value.message !== 'string' || !isRecord(value.requestedSchema)) return false;
  // Again here (linear in the capped text): the SDK checks the client's answer against it on this thread.
  return elicitationSchemaProblem(value.requestedSchema) === undefined;
}
