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
 * This file only re-exports; the host is assembled in `compose/`.
 */
export { createHost, loadHostConfig, openHost } from './compose/host.js';
export type { CreateHostOptions, Host, HostConfig, OpenHostOptions } from './compose/host.js';
export { approveAll, createRegistry, registryOptions } from './compose/registry.js';
export type { RegistryOptions } from './compose/registry.js';
export { registerAdminTools } from './compose/admin-tools.js';
export type { CallOptions, CallStream } from './core/call/options.js';
export type { ToolContext } from './core/context.js';
export { modelSafeName, toDefinition } from './core/definitions.js';
export type { AnthropicDefinition, DefinitionFormat, McpDefinition, OpenAIDefinition, ToolhostDefinition } from './core/definitions.js';
export { ERROR_CODES, ToolhostError, TRANSIENT_CODES, isErrorCode, toErrorData, toolError } from './core/errors.js';
export type { CancelOutcome, ErrorCode, ToolErrorData } from './core/errors.js';
export { LOG_LEVELS, isTerminal } from './core/events.js';
export type { ErrorEvent, LogLevel, ProgressEvent, ResultEvent, StartEvent, TerminalEvent, ToolEvent, ToolEventSink, RunnerSink, DeltaEvent, LogEvent } from './core/events.js';
export { Extensions, extensionKey } from './core/extensions.js';
export type { ExtensionKey } from './core/extensions.js';
export { createDefaultLogger, silentLogger } from './core/logger.js';
export type { Logger } from './core/logger.js';
export { ToolRegistry } from './core/registry.js';
export type { LoadedComponentTools, SandboxStats, ToolRegistryOptions, WasmLoadOptions, WasmLoadReport, WasmToolLoader } from './core/registry.js';
export { isRichResult, jsonResult, richResult } from './core/result.js';
export type { CallAccounting, ContentBlock, ImageContent, RichResult, TextContent, ToolResult } from './core/result.js';
export { ConversationState, InMemoryStateStore } from './core/state.js';
export type { StateStore } from './core/state.js';
export { defineNativeTool } from './core/tool.js';
export type { ExecutionMode, JsonSchema, NativeToolSpec, Tool, ToolDescriptor } from './core/tool.js';
export { NETWORK_LABELS, PRIVILEGE_LABELS } from './policy/labels.js';
export type { NetworkLabel, PrivilegeLabel } from './policy/labels.js';
export { parseDuration, parseExecutionPolicy, resolveBudgets } from './policy/execution-policy.js';
export type { CallBudgets, ExecutionPolicy, ExecutionPolicyInput, PolicyDefaults } from './policy/execution-policy.js';
export type { ToolDefaultPolicy, ToolGrant } from './policy/grant.js';
export { WORKTREE_GUEST_PATH, resolveCapabilities } from './policy/capabilities.js';
export type { CallCapabilities } from './policy/capabilities.js';
export { denyAllApprovals } from './policy/approval.js';
export type { ApprovalHook, ApprovalRequest } from './policy/approval.js';
export { MemoryAuditLog, createAuditLog } from './policy/audit.js';
export type { AuditEntry, AuditLog } from './policy/audit.js';
export { classifyAddress } from './net/addresses.js';
export { parseEgressAllowlist } from './net/allowlist.js';
export type { EgressRule } from './net/allowlist.js';
export { EgressChecker } from './net/egress-checker.js';
export type { EgressDecision, EgressPolicy } from './net/egress-checker.js';
export { EgressError } from './net/errors.js';
export type { EgressFailure, EgressFailureKind } from './net/errors.js';
export { egressFetch, egressStream } from './net/pinned-client.js';
export type { EgressRequest, EgressResponse } from './net/pinned-client.js';
export { followRedirects } from './net/redirects.js';
export { createHttpStreamingTool } from './native/http-streaming-tool.js';
export type { HttpStreamingToolSpec, HttpStreamSummary, HttpToolMethod } from './native/http-streaming-tool.js';
export { ConfigError, embeddedConfig, findConfig, loadConfig } from './config/index.js';
export type { LoadedConfig, ResolvedConfig } from './config/index.js';
export { SandboxLoader, TOOL_EXPORT } from './sandbox/loader.js';
export type { SandboxOptions } from './sandbox/loader.js';
export { ComponentCache, defaultCacheDir } from './sandbox/component-cache.js';
export { exampleToolsDir, cSdkDir, jsToolkitPath, worldWitPath } from './build/paths.js';
export { BuildError } from './build/errors.js';
export type { BuildFailure } from './build/errors.js';
export { buildProject, checkComponent, detectProject } from './build/project.js';
export type { BuildReport, ToolLanguage, ToolProject } from './build/project.js';
export { buildCComponent } from './build/c.js';
export type { CBuildOptions, CBuildResult } from './build/c.js';
export { buildJsComponent } from './build/js.js';
export type { JsBuildOptions, JsBuildResult } from './build/js.js';
export { initProject } from './init/scaffold.js';
export type { InitOptions, InitReport } from './init/scaffold.js';
