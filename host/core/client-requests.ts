/**
 * What a tool may ask of the client that made its call: a completion from the
 * client's model (MCP `sampling/createMessage`) and an answer from its user
 * (MCP `elicitation/create`, form mode). Shapes follow MCP (media as base64).
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
}

/** The client as a tool sees it (`ctx.client`): both methods always exist and throw a ToolhostError when the request is refused. */
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
  /** A request the runner refused by itself (`allowances`): audited and counted here as if it had been refused here. */
  refused?(kind: ClientRequestKind, reason: ClientRefusal, bytes?: number): void;
}

export type ClientRequestKind = 'sampling' | 'elicitation';

/** Why a runner refused a request by itself: the grant, the count, sampling's `maxTokens`, the size, or a malformed request. */
export type ClientRefusal = 'grant' | 'requests' | 'max_tokens' | 'bytes' | 'invalid';

/** What one call's tool may ask its caller (from its grant and `client_request_bytes`); a kind left out is not granted. */
export interface ClientAllowances {
  /** Bytes the JSON of one request may take. */
  bytes: number;
  sampling?: { maxRequests: number; maxTokens: number };
  elicitation?: { maxRequests: number };
}

/** Bytes a request to the client, or its answer, may take (JSON), unless configured (`guest_limits.client_request_bytes`). */
export const DEFAULT_CLIENT_REQUEST_BYTES = 1024 * 1024;
/** Sampling requests one call may make when its grant allows sampling without saying how many. */
export const DEFAULT_SAMPLING_REQUESTS = 5;
/** `maxTokens` one sampling request may ask for when the grant does not say. */
export const DEFAULT_SAMPLING_MAX_TOKENS = 4096;
/** Elicitation requests one call may make when its grant allows elicitation without saying how many. */
export const DEFAULT_ELICITATION_REQUESTS = 3;
