/**
 * toolhost: run WebAssembly component tools and native tools through one
 * registry and one call path.
 *
 * ```ts
 * import { createHost } from 'toolhost';
 * const host = await createHost(); // the installed example tools (exampleToolsDir()), on embedded defaults
 * const result = await host.registry.execute('sha256', { text: 'abc' });
 * await host.close();
 * ```
 *
 * This entry is the embedder's API: build a host, define native tools, call
 * tools, read results, errors and events, state the policy.
 * The subpaths hold the rest:
 * - `toolhost/runner`: for runners and sandbox embedders (the runner sink, the
 *   Wasm loader, the transpile cache, policy resolution, the egress checker).
 * - `toolhost/servers`: the MCP (stdio, Streamable HTTP) and gRPC servers, and
 *   MCP imports (they load the MCP SDK and grpc-js, so they live apart).
 * - `toolhost/authoring`: building a tool project into a component and
 *   starting a new one (`authoring/index.ts`).
 * - `toolhost/guest`: inside a JS/TS tool, the guest toolkit (not host code).
 * This file only re-exports; the host is assembled in `compose/`.
 */

// A host: assembled from a config, or a registry of your own.
export { createHost, loadHostConfig, openHost } from './compose/host.js';
export type { CreateHostOptions, Host, HostConfig, OpenHostOptions } from './compose/host.js';
export { createRegistry } from './compose/registry.js';
export type { RegistryOptions } from './compose/registry.js';
export { ToolRegistry } from './core/registry.js';
export type { ToolRegistryOptions, WasmLoadOptions, WasmLoadReport } from './core/registry.js';

// Calls: options, streams, events.
export type { CallOptions, CallStream } from './core/call/options.js';
export type { CallClient, ClientRequestKind, ClientRequestOptions, ElicitRequest, ElicitResult, GatedClient, KeyedAnswers, KeyedRequest, ListRootsResult, Root, SamplingRequest, SamplingResult } from './core/client-requests.js';
export type { CallTracer, TraceCarrier, TraceSpan, TraceSpanOptions, TraceRecording, SpanAttributes } from './core/tracing.js';
export { LOG_LEVELS, isTerminal } from './core/events.js';
export type { DeltaEvent, ErrorEvent, LogEvent, LogLevel, ProgressEvent, ResultEvent, StartEvent, TerminalEvent, ToolEvent, ToolEventSink } from './core/events.js';

// Native tools: define them, and what they see of their call.
export { defineNativeTool } from './core/tool.js';
export type { ExecutionMode, JsonSchema, NativeToolSpec, Tool, ToolDescriptor, ToolOutput } from './core/tool.js';
export type { ToolContext } from './core/context.js';
export { Extensions, extensionKey } from './core/extensions.js';
export type { ExtensionKey } from './core/extensions.js';
export { ConversationState, InMemoryStateStore } from './core/state.js';
export type { StateStore } from './core/state.js';
export { createHttpStreamingTool } from './tools/http-streaming-tool.js';
export type { HttpStreamingToolSpec, HttpStreamSummary, HttpToolMethod } from './tools/http-streaming-tool.js';
export { EgressError } from './net/errors.js';
export type { EgressFailure, EgressFailureKind } from './net/errors.js';
export { egressFetch, egressStream } from './net/pinned-client.js';
export type { EgressRequest, EgressResponse } from './net/pinned-client.js';

// Results and errors.
export { isRichResult, jsonResult, richResult } from './core/result.js';
export type { CallAccounting, ContentBlock, ImageContent, RichResult, TextContent, ToolResult } from './core/result.js';
export { ERROR_CODES, ToolhostError, TRANSIENT_CODES, isErrorCode, toErrorData, toolError } from './base/errors.js';
export type { CancelOutcome, ErrorCode, ToolErrorData } from './base/errors.js';

// Definitions for agent APIs.
export { MODEL_NAME, modelNames, modelSafeName, objectInputSchema, toDefinition } from './core/definitions.js';
export { toStrictSchema, type StrictSchemaResult } from './core/strict-schema.js';
export type {
  AnthropicDefinition,
  DefinitionFormat,
  DefinitionOptions,
  McpDefinition,
  ObjectJsonSchema,
  OpenAIDefinition,
  OpenAIResponsesDefinition,
  ToolhostDefinition,
} from './core/definitions.js';

// Policy: what a call asks for, what a tool is granted, who approves and who records.
export { NETWORK_LABELS, PRIVILEGE_LABELS } from './policy/labels.js';
export type { NetworkLabel, PrivilegeLabel } from './policy/labels.js';
export type { ExecutionPolicyInput } from './policy/execution-policy.js';
export type { ToolDefaultPolicy, ToolGrant } from './policy/grant.js';
export { denyAllApprovals } from './policy/approval.js';
export type { ApprovalHook, ApprovalRequest } from './policy/approval.js';
export { createAuditLog } from './policy/audit.js';
export { MemoryAuditLog } from './policy/memory-audit-log.js';
export type { AuditEntry, AuditLog } from './policy/audit.js';

// Logging and the config file.
export { createDefaultLogger, silentLogger } from './base/logger.js';
export type { Logger } from './base/logger.js';
export { ConfigError, embeddedConfig, findConfig, loadConfig } from './config/index.js';
export type { ConfigFile, LoadedConfig, ResolvedConfig } from './config/index.js';

// The example tools (what createHost() serves by default).
export { exampleToolsDir } from './authoring/paths.js';
