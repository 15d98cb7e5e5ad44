/**
 * toolhost: run WebAssembly component tools and native tools through one
 * registry and one call path.
 *
 * ```ts
 * import { ToolRegistry } from 'toolhost';
 * const registry = new ToolRegistry();
 * await registry.registerWasmTools('guest-tools/dist');
 * const result = await registry.execute('sha256', { text: 'abc' });
 * await registry.close();
 * ```
 */
import { ToolRegistry as CoreToolRegistry, type ToolRegistryOptions as CoreRegistryOptions } from './core/registry.js';
import { SandboxLoader, type SandboxOptions } from './sandbox/loader.js';

export interface ToolRegistryOptions extends Omit<CoreRegistryOptions, 'wasmLoader'> {
  /** The sandbox: worker threads, queue bound, transpile cache directory, output caps. */
  sandbox?: SandboxOptions;
}

/** What the sandbox pool is doing (for metrics and health checks). */
export interface SandboxStats {
  threads: number;
  queueSize: number;
  /** Share of worker time spent running tasks (0..1). */
  utilization: number;
}

/** The registry with the sandbox wired in: `registerWasmTools` loads components into the worker pool. */
export class ToolRegistry extends CoreToolRegistry {
  readonly #loader: { current?: SandboxLoader };

  constructor(options: ToolRegistryOptions = {}) {
    const { sandbox = {}, ...rest } = options;
    const holder: { current?: SandboxLoader } = {};
    super({
      ...rest,
      wasmLoader: ({ logger }) => {
        holder.current = new SandboxLoader(sandbox, logger);
        return holder.current;
      },
    });
    this.#loader = holder;
  }

  /** The pool's state, once a component has been loaded (undefined before). */
  sandboxStats(): SandboxStats | undefined {
    const loader = this.#loader.current;
    if (!loader) return undefined;
    const pool = loader.pool;
    return { threads: pool.threads, queueSize: pool.queueSize, utilization: pool.utilization };
  }
}

export type { CallOptions, CallStream } from './core/call-path.js';
export type { ToolContext } from './core/context.js';
export { modelSafeName, toDefinition } from './core/definitions.js';
export type { AnthropicDefinition, DefinitionFormat, McpDefinition, OpenAIDefinition, ToolhostDefinition } from './core/definitions.js';
export { ERROR_CODES, ToolhostError, TRANSIENT_CODES, isErrorCode, toErrorData, toolError } from './core/errors.js';
export type { CancelOutcome, ErrorCode, ToolErrorData } from './core/errors.js';
export { LOG_LEVELS, isTerminal } from './core/events.js';
export type { ErrorEvent, LogLevel, ProgressEvent, ResultEvent, StartEvent, TerminalEvent, ToolEvent, ToolEventSink, DeltaEvent, LogEvent } from './core/events.js';
export { Extensions, extensionKey } from './core/extensions.js';
export type { ExtensionKey } from './core/extensions.js';
export { createDefaultLogger, silentLogger } from './core/logger.js';
export type { Logger } from './core/logger.js';
export { ToolRegistry as CoreToolRegistry } from './core/registry.js';
export type { LoadedComponentTools, WasmLoadOptions, WasmLoadReport, WasmToolLoader } from './core/registry.js';
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
export { ConfigError, embeddedConfig, findConfig, loadConfig, registryOptions } from './config/index.js';
export type { LoadedConfig, ResolvedConfig } from './config/index.js';
export { SandboxLoader, TOOL_EXPORT } from './sandbox/loader.js';
export type { SandboxOptions } from './sandbox/loader.js';
export { ComponentCache, defaultCacheDir } from './sandbox/component-cache.js';
