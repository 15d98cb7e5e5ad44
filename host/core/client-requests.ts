/**
 * What a tool may ask of the client that made its call: a completion from the
 * client's model (MCP `sampling/createMessage`), an answer from its user
 * (MCP `elicitation/create`, form mode) and the filesystem roots it exposes
 * (MCP `roots/list`), one at a time or several in a round under the tool's
 * keys. Shapes follow MCP (media as base64).
 *
 * A caller that can answer passes a `CallClient` in `CallOptions.client` (the
 * MCP server does, for clients that declared the capability; an embedder may
 * pass its own hooks). A tool reaches it through `ctx.client`, which the call
 * path wraps with the tool's grant, the per-call caps and the audit log
 * (core/call/client-gate.ts): nothing here decides policy.
 */

/** Content of a sampling message (MCP: text, image or audio; media base64-encoded). */
export type SamplingContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string };

export interface SamplingMessage {
  role: 'user' | 'assistant';
  content: SamplingContent;
}

/** MCP `sampling/createMessage` parameters. */
export interface SamplingRequest {
  messages: SamplingMessage[];
  systemPrompt?: string;
  maxTokens: number;
  temperature?: number;
  stopSequences?: string[];
  modelPreferences?: {
    hints?: Array<{ name: string }>;
    costPriority?: number;
    speedPriority?: number;
    intelligencePriority?: number;
  };
}

/** MCP `sampling/createMessage` result. */
export interface SamplingResult {
  role: 'user' | 'assistant';
  content: SamplingContent;
  model: string;
  stopReason?: string;
}

/** MCP `elicitation/create` parameters (form mode). */
export interface ElicitRequest {
  message: string;
  /** A JSON Schema object with flat primitive properties. */
  requestedSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  /** The user's answer, when the action is `accept`. */
  content?: Record<string, unknown>;
}

/** A filesystem root the client exposes (MCP `Root`). */
export interface Root {
  uri: string;
  name?: string;
}

/** MCP `roots/list` result. */
export interface ListRootsResult {
  roots: Root[];
}

/** The MCP method of each kind of request a tool may make of its caller. */
export const CLIENT_REQUEST_METHODS = {
  sampling: 'sampling/createMessage',
  elicitation: 'elicitation/create',
  roots: 'roots/list',
} as const;

export type ClientRequestMethod = (typeof CLIENT_REQUEST_METHODS)[ClientRequestKind];

/** One request of a round (`host.ask`, world 0.3.0), under the tool's key; `params` in MCP's shape for `method`. */
export type KeyedRequest =
  | { key: string; method: 'sampling/createMessage'; params: SamplingRequest }
  | { key: string; method: 'elicitation/create'; params: ElicitRequest }
  | { key: string; method: 'roots/list'; params: Record<string, never> };

/** The answers to a round, by key: each of the MCP result shape of its request's method. */
export type KeyedAnswers = Record<string, SamplingResult | ElicitResult | ListRootsResult>;

/**
 * Whether a tool may name a request by `key`: 1 to 64 characters of [A-Za-z0-9_.-], not `__proto__`
 * (JSON readers, the MCP SDK's among them, turn that key into a prototype: its answer would never arrive).
 */
export function isInputKey(key: unknown): key is string {
  return typeof key === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(key) && key !== '__proto__';
}

/** What a refused key is told. */
export const INPUT_KEY_RULE = 'each request of a round needs a key of 1 to 64 characters of [A-Za-z0-9_.-], other than __proto__';

/** What the hooks are given besides the request. */
export interface ClientRequestOptions {
  /** Aborts when the call ends (cancelled, out of budget): stop waiting for the client. */
  signal: AbortSignal;
  /** The call making the request. */
  callId: string;
  /** The tool making it. */
  tool: string;
}

/**
 * The calling client's answers. A hook left out means the caller cannot answer
 * that kind of request (the tool gets CLIENT_UNSUPPORTED). A hook that throws a
 * ToolhostError passes its code to the tool; anything else becomes TOOL_ERROR.
 */
export interface CallClient {
  sample?(request: SamplingRequest, options: ClientRequestOptions): Promise<SamplingResult>;
  elicit?(request: ElicitRequest, options: ClientRequestOptions): Promise<ElicitResult>;
  listRoots?(options: ClientRequestOptions): Promise<ListRootsResult>;
  /**
   * Several requests in one round, under the tool's keys (MCP 2026-07-28: one input-required result).
   * Optional: without it a round's requests go through the hooks above side by side. Each request's
   * kind still needs its own hook (that is how a caller says what it can answer).
   */
  ask?(requests: readonly KeyedRequest[], options: ClientRequestOptions): Promise<KeyedAnswers>;
}

/** The client as a tool sees it (`ctx.client`): `sample`, `elicit` and `ask` always exist and throw a ToolhostError when the request is refused. */
export interface GatedClient {
  sample(request: SamplingRequest): Promise<SamplingResult>;
  elicit(request: ElicitRequest): Promise<ElicitResult>;
  /**
   * What a runner may decide before anything of a request reaches this
   * thread (the sandbox worker refuses what the grant does not allow, and
   * requests over `bytes`, without posting them: see sandbox/worker/client-requests.ts).
   */
  allowances?(): ClientAllowances;
  /**
   * A request as JSON text a runner made and size-checked off this thread
   * (the sandbox worker, under the call's budgets). The grant, the count and
   * whether the caller can answer are checked before the text is looked at;
   * its size before it is parsed, so parsing is linear in a capped size.
   */
  sampleText?(text: string): Promise<SamplingResult>;
  elicitText?(text: string): Promise<ElicitResult>;
  /** Several requests in one round (world 0.3.0's `ask`); refused whole when one of them is. */
  ask(requests: readonly KeyedRequest[]): Promise<KeyedAnswers>;
  /**
   * A round as JSON text (`{"requests":[{key, method, params}, ...]}`) a runner made and size-checked off
   * this thread; `kinds` are its requests' kinds in order, checked (grant, count, hook) before the text is
   * looked at, and held to what the text says once it is parsed.
   */
  askText?(kinds: readonly ClientRequestKind[], text: string): Promise<KeyedAnswers>;
  /**
   * A request the runner refused by itself (`allowances`): audited and counted here as if it had been refused
   * here; `counted` false when the runner did not count it (a round refused before it was admitted).
   */
  refused?(kind: ClientRequestKind, reason: ClientRefusal, bytes?: number, counted?: boolean): void;
}

export type ClientRequestKind = 'sampling' | 'elicitation' | 'roots';

/** Why a runner refused a request by itself: the grant, the count, sampling's `maxTokens`, the size, or a malformed request. */
export type ClientRefusal = 'grant' | 'requests' | 'max_tokens' | 'bytes' | 'invalid';

/** What one call's tool may ask its caller (from its grant and `client_request_bytes`); a kind left out is not granted. */
export interface ClientAllowances {
  /** Bytes the JSON of one request may take. */
  bytes: number;
  sampling?: { maxRequests: number; maxTokens: number };
  elicitation?: { maxRequests: number };
  roots?: { maxRequests: number };
}

/** Bytes a request to the client, or its answer, may take (JSON), unless configured (`guest_limits.client_request_bytes`). */
export const DEFAULT_CLIENT_REQUEST_BYTES = 1024 * 1024;
/** Sampling requests one call may make when its grant allows sampling without saying how many. */
export const DEFAULT_SAMPLING_REQUESTS = 5;
/** `maxTokens` one sampling request may ask for when the grant does not say. */
export const DEFAULT_SAMPLING_MAX_TOKENS = 4096;
/** Elicitation requests one call may make when its grant allows elicitation without saying how many. */
export const DEFAULT_ELICITATION_REQUESTS = 3;
/** `roots/list` requests one call may make when its grant allows roots without saying how many. */
export const DEFAULT_ROOTS_REQUESTS = 3;
