/**
 * `toolhost/runner`: the runner API, for code that runs tools rather than
 * writes them: a `Tool.invoke` of your own (the runner sink with the call's
 * hard signal and accounting), the Wasm loader and its transpile cache, policy
 * resolution (grant ∩ request, budgets), the egress checker, and the pieces the
 * composition root is made of. Tool authors need only `toolhost`.
 */
export type { RunnerSink } from './core/events.js';
export type { LoadedComponentTools, SandboxStats, WasmToolLoader } from './core/registry.js';
export { SandboxLoader, TOOL_EXPORT } from './sandbox/loader.js';
export type { SandboxOptions } from './sandbox/loader.js';
export { ComponentCache, defaultCacheDir } from './sandbox/load/component-cache.js';
export { approveAll, registryOptions } from './compose/registry.js';
export { registerAdminTools } from './tools/admin-tools.js';
export type { AdminAccess } from './tools/admin-tools.js';
export { parseDuration, parseExecutionPolicy, resolveBudgets } from './policy/execution-policy.js';
export type { CallBudgets, ExecutionPolicy, PolicyDefaults } from './policy/execution-policy.js';
export { WORKTREE_GUEST_PATH, resolveCapabilities } from './policy/capabilities.js';
export type { CallCapabilities, CapabilityDecision } from './policy/capabilities.js';
export { classifyAddress } from './net/addresses.js';
export { parseEgressAllowlist } from './net/allowlist.js';
export type { EgressRule } from './net/allowlist.js';
export { EgressChecker } from './net/egress-checker.js';
export type { EgressDecision, EgressPolicy } from './net/egress-checker.js';
export { followRedirects } from './net/redirects.js';
