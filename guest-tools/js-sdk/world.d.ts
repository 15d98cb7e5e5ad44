/**
 * Types for the tool world (`toolhost:tool@0.1.0`, wit/tool.wit) as a
 * JavaScript or TypeScript guest sees it through componentize-js: the host
 * interface it imports and the `tool` interface it exports. WIT names become
 * camelCase, `option<T>` is `T | undefined`, an enum is a string union, and a
 * `result<_, string>` import returns on ok and throws on err.
 */
declare module 'toolhost:tool/host@0.1.0' {
  export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

  /** Who is calling (WIT `call-context`). */
  export interface CallContext {
    callId: string;
    conversationId: string | undefined;
    sessionId: string | undefined;
    agentName: string | undefined;
  }

  /** The current call's context. */
  export function context(): CallContext;
  /** Report progress: `pct` 0..100 (undefined when unknown) and an optional message. */
  export function progress(pct: number | undefined, message: string | undefined): void;
  /** Stream a piece of partial output: JSON text (e.g. `JSON.stringify({ line })`). */
  export function delta(data: string): void;
  /** A log line attributed to this call (a `log` event with source `guest`). */
  export function log(level: LogLevel, message: string): void;
  /** A conversation-scoped value (JSON text), or undefined when unset. */
  export function getState(key: string): string | undefined;
  /**
   * Save a conversation-scoped value (JSON text). Throws when the host refuses
   * it: built by `toolhost build`, the host's tool-error `{ code, message, details }`
   * (code OUTPUT_LIMIT_EXCEEDED past a state limit, PERMISSION_DENIED under
   * `grant.state.access: read`, INVALID_INPUT for a bad key); left uncaught, the
   * call ends with the host's error.
   */
  export function setState(key: string, value: string): void;
  /** Whether the caller asked this call to stop; check it in long loops. */
  export function cancelled(): boolean;
}

declare module 'toolhost:tool/types@0.1.0' {
  export type { CallContext, LogLevel } from 'toolhost:tool/host@0.1.0';

  /** One tool, as `describe()` reports it (WIT `tool-info`). */
  export interface ToolInfo {
    /** [A-Za-z0-9_][A-Za-z0-9_-]{0,63}, unique in the component. */
    name: string;
    description: string;
    /** JSON Schema text for the arguments (the host validates them before `call`). */
    inputSchema: string;
    /** JSON Schema text for the result, or undefined. */
    outputSchema: string | undefined;
    /** Whether the tool emits `delta` events. */
    streaming: boolean;
    /** Whether a call may be retried after a crash. */
    idempotent: boolean;
  }

  /** A failure of the tool's own (WIT `tool-error`): throw it from `call`. `details` is JSON text. */
  export interface ToolError {
    code: string;
    message: string;
    details: string | undefined;
  }

  /**
   * What a component exports as `tool`. `call` gets the arguments as JSON
   * text and returns the result as JSON text (or a promise of it); it throws
   * a ToolError for a failure of its own. Anything else it throws reaches the
   * caller as the tool-error UNCAUGHT_EXCEPTION with the message and stack.
   */
  export interface ToolExport {
    describe(): ToolInfo[];
    call(name: string, args: string): string | Promise<string>;
  }
}

/**
 * The 0.2.0 world's host interface (wit/v0.2/tool.wit): 0.1.0's calls plus
 * `sample` and `elicit`. Both block until the calling client answers and throw
 * the host's tool-error when it cannot: a plain `{ code, message, details }`
 * object (`details` JSON text; code PERMISSION_DENIED without the grant or past
 * its caps, CLIENT_UNSUPPORTED when the caller cannot answer,
 * OUTPUT_LIMIT_EXCEEDED, CANCELLED, or TOOL_ERROR when the client failed), as
 * `toolhost build` binds them. Left uncaught, it ends the call with the host's
 * error (the caller sees PERMISSION_DENIED, say), not UNCAUGHT_EXCEPTION.
 */
declare module 'toolhost:tool/host@0.2.0' {
  export type { CallContext, LogLevel } from 'toolhost:tool/host@0.1.0';
  export { context, progress, delta, log, getState, setState, cancelled } from 'toolhost:tool/host@0.1.0';

  export type Role = 'user' | 'assistant';
  /** Bytes with their media type. */
  export interface Media { data: Uint8Array; mimeType: string }
  export type SamplingContent = { tag: 'text'; val: string } | { tag: 'image'; val: Media } | { tag: 'audio'; val: Media };
  export interface SamplingMessage { role: Role; content: SamplingContent }
  export interface ModelPreferences {
    /** Model names or families, most preferred first. */
    hints: string[];
    costPriority: number | undefined;
    speedPriority: number | undefined;
    intelligencePriority: number | undefined;
  }
  /** MCP `sampling/createMessage` parameters (every field present; `undefined` for none). */
  export interface SamplingRequest {
    messages: SamplingMessage[];
    systemPrompt: string | undefined;
    maxTokens: number;
    temperature: number | undefined;
    stopSequences: string[];
    modelPreferences: ModelPreferences | undefined;
  }
  export interface SamplingResult { role: Role; content: SamplingContent; model: string; stopReason: string | undefined }
  export type ElicitAction = 'accept' | 'decline' | 'cancel';
  /** `content` is the user's answer (a JSON object's text) when the action is `accept`. */
  export interface ElicitResult { action: ElicitAction; content: string | undefined }

  /** Ask the calling client's model for a completion (the grant must allow sampling). */
  export function sample(request: SamplingRequest): SamplingResult;
  /** Ask the calling client's user (form mode): `requestedSchema` is JSON Schema text of flat primitive properties. */
  export function elicit(message: string, requestedSchema: string): ElicitResult;
}

/**
 * The 0.3.0 world's host interface (wit/v0.3/tool.wit): 0.2.0's calls plus `ask`, a round of requests to the
 * calling client under keys the tool chooses (1 to 64 characters of [A-Za-z0-9_.-] other than __proto__, unique in the round). MCP
 * 2026-07-28 clients see one input-required result with those keys; 2025 clients get the requests side by side.
 * `ask` blocks until every request is answered and returns the answers in the order of the requests; it throws
 * the host's tool-error as `sample` does, for the whole round (nothing is asked when one request is refused).
 * `roots` needs `grant.roots`, as sampling needs `grant.sampling`.
 */
declare module 'toolhost:tool/host@0.3.0' {
  export type {
    CallContext, LogLevel, Role, Media, SamplingContent, SamplingMessage, ModelPreferences, SamplingRequest, SamplingResult, ElicitAction, ElicitResult,
  } from 'toolhost:tool/host@0.2.0';
  export { context, progress, delta, log, getState, setState, cancelled, sample, elicit } from 'toolhost:tool/host@0.2.0';
  import type { SamplingRequest, SamplingResult, ElicitResult } from 'toolhost:tool/host@0.2.0';

  /** An elicitation request (form mode): `requestedSchema` is JSON Schema text of flat primitive properties. */
  export interface ElicitationRequest { message: string; requestedSchema: string }
  export type InputRequest = { tag: 'elicitation'; val: ElicitationRequest } | { tag: 'sampling'; val: SamplingRequest } | { tag: 'roots' };
  export interface KeyedRequest { key: string; request: InputRequest }
  /** A filesystem root the client exposes (a `file://` URI). */
  export interface Root { uri: string; name: string | undefined }
  export type InputResponse = { tag: 'elicitation'; val: ElicitResult } | { tag: 'sampling'; val: SamplingResult } | { tag: 'roots'; val: Root[] };
  export interface KeyedResponse { key: string; response: InputResponse }

  /** Ask the calling client several things in one round; the answers come back in the order of `requests`. */
  export function ask(requests: KeyedRequest[]): KeyedResponse[];
}

// WASI a guest may import directly (`toolhost build` adds what the bundle imports to the component's world and
// binds it to the version its engine imports; any 0.2.x specifier works). Typed by the WASI shim's declarations.
declare module 'wasi:filesystem/types@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-filesystem-types';
}
declare module 'wasi:filesystem/preopens@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-filesystem-preopens';
}
declare module 'wasi:io/streams@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-io-streams';
}
declare module 'wasi:io/error@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-io-error';
}
declare module 'wasi:io/poll@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-io-poll';
}
declare module 'wasi:clocks/wall-clock@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-clocks-wall-clock';
}
declare module 'wasi:clocks/monotonic-clock@0.2.3' {
  export * from '@bytecodealliance/preview2-shim/interfaces/wasi-clocks-monotonic-clock';
}
