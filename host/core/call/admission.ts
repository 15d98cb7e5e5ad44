/**
 * Admission: whether a call may start, decided before anything runs, in the
 * order ARCHITECTURE.md documents:
 *
 *   1. lookup    the tool exists                         TOOL_NOT_FOUND
 *   2. policy    parse the request, the tool's defaults   INVALID_INPUT
 *                fill in what it leaves out; host
 *                ceilings; grant ∩ request, then the      PERMISSION_DENIED, TOOL_PRIVILEGE_ESCALATION,
 *                caller's own label ceiling; a writable
 *                worktree off host-owned paths            WORKTREE_NOT_BOUND (each audited)
 *   3. validate  the arguments against the input schema   INVALID_INPUT (ajv path and message);
 *                (host-authored schemas only: a tool that
 *                `checksOwnArgs` validates in its runner)
 *   4. ids       the call id is usable: 1..maxLength      INVALID_INPUT
 *                visible ASCII characters (see ids.ts);
 *                a conversation id is not empty and holds
 *                no U+0000 (see principal-scope.ts)
 *
 * The answer is a value: the call's plan, or a refusal with the audit entry
 * to record (when the refusal is a policy decision). Nothing is started,
 * tracked or recorded here; whether the id is already in flight is known only
 * when the call is tracked (see `Call`).
 *
 * The plan is closed: everything below admission (the call, its layers, the
 * tool's context, the runners) reads the plan, never the caller's
 * `CallOptions` (test/call-plan.test.ts checks the imports). Who the caller is,
 * the tenant it counts against and the key its conversation lives under are
 * worked out here once.
 */
import type { CallCapabilities, CapabilityRequest, ResolvedCapabilities } from '../../policy/capabilities.js';
import { resolveCapabilities } from '../../policy/capabilities.js';
import type { AuditEntry } from '../../policy/audit.js';
import { parseExecutionPolicy, resolveBudgets, type CallBudgets, type ExecutionPolicy, type PolicyDefaults } from '../../policy/execution-policy.js';
import { ToolhostError, toErrorData } from '../../base/errors.js';
import type { Tool } from '../tool.js';
import type { CallClient } from '../client-requests.js';
import type { Extensions } from '../extensions.js';
import type { ArgsValidator } from '../schema.js';
import { CONVERSATION_SCOPE_MARK, conversationScope, tenantOf } from '../principal-scope.js';
import { callIdProblem } from './ids.js';
import type { CallOptions } from './options.js';

/** A tool as the registry holds it: with its input schema compiled (absent: the tool `checksOwnArgs`). */
export interface RegisteredTool {
  tool: Tool;
  validate?: ArgsValidator;
  /** The tool as `definitions` describe it, when that differs (an output schema published without its patterns). */
  described?: Tool;
}

/** What admission needs from the host. */
export interface AdmissionDeps {
  lookup(name: string): RegisteredTool | undefined;
  suggest(name: string): string[];
  defaults: PolicyDefaults;
  /** Where allowlisted env values come from last. */
  hostEnv: NodeJS.ProcessEnv;
  /** Longest accepted call id (characters). */
  maxCallIdLength: number;
  /** The paths a writable worktree must not overlap (PERMISSION_DENIED, audited). */
  hostOwned?: CapabilityRequest['hostOwned'];
  /** The worktrees the registered tools are granted (a call's own worktree must not nest with them). */
  grantedWorktrees?: CapabilityRequest['grantedWorktrees'];
}

/** A call that passed admission: everything the run needs to know, decided once. */
export interface CallPlan {
  readonly callId: string;
  readonly tool: Tool;
  readonly args: unknown;
  /** Who is calling, as a server authenticated them (absent: the library's caller, or no authentication). */
  readonly principal?: string;
  /** Whose fleet caps the call counts against: the principal, never a name the client chose (principal-scope.ts). */
  readonly tenant: string;
  /** The conversation as the caller named it (what the tool and the events show). */
  readonly conversationId?: string;
  /** Where the conversation's state and instances live: its id scoped by the principal. */
  readonly conversationKey?: string;
  readonly sessionId?: string;
  readonly agentName?: string;
  /** The caller's own cancel signal. */
  readonly signal?: AbortSignal;
  /** Typed values for native tools. */
  readonly extensions?: Extensions;
  /** How the caller answers its tool's requests (sampling, elicitation); absent: it cannot. */
  readonly client?: CallClient;
  /** The call's policy over the tool's default policy. */
  readonly policy: ExecutionPolicy;
  readonly budgets: CallBudgets;
  readonly capabilities: CallCapabilities;
  /** An approval the hook must give before the call runs (PRIVILEGED, FULL_ACCESS). */
  readonly approval?: ResolvedCapabilities['approval'];
  /** The entry to audit once the call is allowed (ELEVATED and up). */
  readonly audit?: ResolvedCapabilities['audit'];
  /** The worktree native tools see: the call's, else the tool's grant's (they are trusted code). */
  readonly workingDir?: string;
}

export type Admission =
  | { admitted: true; call: CallPlan }
  | { admitted: false; error: ToolhostError; audit?: AuditEntry };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function refuse(error: ToolhostError, audit?: AuditEntry): Admission {
  return audit === undefined ? { admitted: false, error } : { admitted: false, error, audit };
}

/** Decide whether the call `name(args)` may start. */
/** Whether admission refused a call above its caller's own label ceiling (an OAuth token's scopes: step-up's case). */
export function overCallerCeiling(error: ToolhostError): boolean {
  return (error.details as { reason?: unknown } | undefined)?.reason === 'caller-ceiling';
}

export function admit(deps: AdmissionDeps, callId: string, name: string, args: unknown, options: CallOptions): Admission {
  // 1. lookup
  const registered = deps.lookup(name);
  if (!registered) {
    const suggestions = deps.suggest(name);
    const hint = suggestions.length > 0 ? `; did you mean ${suggestions.map((s) => `"${s}"`).join(' or ')}?` : '';
    return refuse(new ToolhostError('TOOL_NOT_FOUND', `no tool named "${name}"${hint}`, { details: { name } }));
  }
  const { tool } = registered;

  // 2. policy
  let toolDefaults: ExecutionPolicy;
  let policy: ExecutionPolicy;
  try {
    toolDefaults = parseExecutionPolicy(tool.defaultPolicy);
    // The tool's default policy fills in what the call leaves out; the grant caps both.
    policy = { ...toolDefaults, ...parseExecutionPolicy(options.policy) };
  } catch (error) {
    // A policy that does not parse is a malformed request (INVALID_INPUT), not a decision to audit.
    return refuse(ToolhostError.fromData(toErrorData(error, callId)));
  }
  let budgets: CallBudgets;
  try {
    // The one check of the host's ceilings (asking above one is a decision: audited).
    budgets = resolveBudgets(policy, deps.defaults, tool.grant, toolDefaults);
  } catch (error) {
    const overCeiling = ToolhostError.fromData(toErrorData(error, callId));
    return refuse(overCeiling, { callId, tool: tool.name, decision: 'denied', code: overCeiling.code, reason: overCeiling.message });
  }
  const decision = resolveCapabilities({
    callId,
    tool: tool.name,
    policy,
    toolDefaults,
    grant: tool.grant ?? {},
    defaults: deps.defaults,
    ...(options.labelCeiling === undefined ? {} : { callerCeiling: options.labelCeiling }),
    ...(options.workingDir === undefined ? {} : { workingDir: options.workingDir }),
    ...(options.env === undefined ? {} : { env: options.env }),
    hostEnv: deps.hostEnv,
    ...(deps.hostOwned === undefined ? {} : { hostOwned: deps.hostOwned }),
    ...(deps.grantedWorktrees === undefined ? {} : { grantedWorktrees: deps.grantedWorktrees }),
  });
  if (!decision.allowed) return refuse(decision.error, decision.audit);

  // 3. validate
  const invalid = registered.validate?.check(args, callId);
  if (invalid) return refuse(invalid);

  // 4. ids
  // A caller's id is checked; one the host made (a UUID: options.callId unset) always fits.
  const badId = options.callId === undefined ? undefined : callIdProblem(callId, deps.maxCallIdLength);
  if (badId !== undefined) return refuse(new ToolhostError('INVALID_INPUT', badId, { details: { reason: 'call_id' } }));
  // An empty conversation id would make every such caller share one conversation (and one instance).
  if (options.conversationId === '') return refuse(new ToolhostError('INVALID_INPUT', 'conversationId must not be empty: leave it out for no conversation', { details: { reason: 'conversation_id' } }));
  // U+0000 delimits a principal's conversation keys: an id holding it could name one (principal-scope.ts).
  if (options.conversationId?.includes(CONVERSATION_SCOPE_MARK)) return refuse(new ToolhostError('INVALID_INPUT', 'conversationId must not contain U+0000', { details: { reason: 'conversation_id' } }));

  const { principal, conversationId, sessionId, agentName, signal, extensions, client } = options;
  const workingDir = options.workingDir ?? tool.grant?.worktree;
  const plan: Mutable<CallPlan> = { callId, tool, args, tenant: tenantOf(principal, options.tenant), policy, budgets, capabilities: decision.capabilities };
  if (principal !== undefined) plan.principal = principal;
  if (conversationId !== undefined) {
    plan.conversationId = conversationId;
    plan.conversationKey = conversationScope(principal, conversationId);
  }
  if (sessionId !== undefined) plan.sessionId = sessionId;
  if (agentName !== undefined) plan.agentName = agentName;
  if (signal !== undefined) plan.signal = signal;
  if (extensions !== undefined) plan.extensions = extensions;
  if (client !== undefined) plan.client = client;
  if (decision.approval) plan.approval = decision.approval;
  if (decision.audit) plan.audit = decision.audit;
  if (workingDir !== undefined) plan.workingDir = workingDir;
  return { admitted: true, call: plan };
}
