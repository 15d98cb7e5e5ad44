/**
 * What a guest's requests to its caller (0.2.0's `sample`, `elicit`; 0.3.0's `ask`) look like
 * on each side of the worker: as jco's glue lifts them from the guest and
 * lowers the answers into it, and as the main thread answers them (MCP
 * shapes; the worker converts both ways, see worker/client-requests.ts).
 * The requests themselves cross as JSON text (protocol.ts `RpcRequest`).
 */
import type { ElicitResult, KeyedAnswers, SamplingResult } from '../core/client-requests.js';

/** A 0.2.0 guest's `sample` request as the glue lifted it (see wit/v0.2/tool.wit). */
export interface GuestSamplingRequest {
  messages: Array<{ role: 'user' | 'assistant'; content: GuestSamplingContent }>;
  systemPrompt?: string;
  maxTokens: number;
  temperature?: number;
  stopSequences: string[];
  modelPreferences?: { hints: string[]; costPriority?: number; speedPriority?: number; intelligencePriority?: number };
}

export type GuestSamplingContent = { tag: 'text'; val: string } | { tag: 'image' | 'audio'; val: { data: Uint8Array; mimeType: string } };

/** The `tool-error` a refused or failed client request gives the guest (`code` is a toolhost error code). */
export interface GuestClientError {
  code: string;
  message: string;
  details?: string;
}

/** What the main thread answers a `sample` with: the client's result (MCP shapes, size-checked; the worker makes the guest's), or the error the guest sees. */
export type ClientSampleAnswer = { ok: true; value: SamplingResult } | { ok: false; error: GuestClientError };

/** What the main thread answers an `elicit` with. */
export type ClientElicitAnswer = { ok: true; value: ElicitResult } | { ok: false; error: GuestClientError };

/** A `sample` result as the guest gets it (the glue lowers it). */
export interface GuestSampleResult {
  role: 'user' | 'assistant';
  content: GuestSamplingContent;
  model: string;
  stopReason?: string;
}

/** An `elicit` result as the guest gets it. */
export interface GuestElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: string;
}

/** A 0.3.0 guest's request of a round (`ask`), as the glue lifts it. */
export interface GuestKeyedRequest {
  key: string;
  request:
    | { tag: 'elicitation'; val: { message: string; requestedSchema: string } }
    | { tag: 'sampling'; val: GuestSamplingRequest }
    | { tag: 'roots'; val?: undefined };
}

/** A root as the guest gets it. */
export interface GuestRoot {
  uri: string;
  name?: string;
}

/** The answer to one request of a round, as the glue lowers it. */
export interface GuestKeyedResponse {
  key: string;
  response: { tag: 'elicitation'; val: GuestElicitResult } | { tag: 'sampling'; val: GuestSampleResult } | { tag: 'roots'; val: GuestRoot[] };
}

/** What the main thread answers a round with: the answers by key (MCP shapes, size-checked by the gate), or the error the guest sees. */
export type ClientAskAnswer = { ok: true; value: KeyedAnswers } | { ok: false; error: GuestClientError };
