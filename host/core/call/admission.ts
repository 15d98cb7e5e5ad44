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
 *   3. validate  the arguments against the input schema   INVALID_INPUT (ajv path and message)
 *   4. ids       the call id is usable: 1..maxLength      INVALID_INPUT
 *                visible ASCII characters (see ids.ts);
 *                a conversation id is not empty and holds
 *                no U+0000 (see principal-scope.ts)
 *
 * The answer is a value: an admitted call, or a refusal with the audit entry
 * to record (when the refusal is a policy decision). Nothing is started,
 * tracked or recorded here; whether the id is already in flight is known only
 * when the call is tracked (see `Call`).
 */
import type { CallCapabilities, CapabilityRequest, ResolvedCapabilities } from '../../policy/capabilities.js';
import { resolveCapabilities } from '../../policy/capabilities.js';
import type { AuditEntry } from '../../policy/audit.js';
import { ceilingDenial, parseExecutionPolicy, resolveBudgets, type CallBudgets, type ExecutionPolicy, type PolicyDefaults } from '../../policy/execution-policy.js';
import { ToolhostError, toErrorData } from '../../base/errors.js';
import type { Tool } from '../tool.js';
import type { ArgsValidator } from '../schema.js';
import { CONVERSATION_SCOPE_MARK } from '../principal-scope.js';
import { callIdProblem } from './ids.js';
import type { CallOptions } from './options.js';

/** A tool as the registry holds it: with its input schema compiled. */
export interface RegisteredTool {
  tool: Tool;
  validate: ArgsValidator;
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
}

/** A call that passed admission: everything the run needs to know, decided. */
export interface AdmittedCall {
  callId: string;
  tool: Tool;
  args: unknown;
  options: CallOptions;
  /** The call's policy over the tool's default policy. */
  policy: ExecutionPolicy;
  budgets: CallBudgets;
  capabilities: CallCapabilities;
  /** An approval the hook must give before the call runs (PRIVILEGED, FULL_ACCESS). */
  approval?: ResolvedCapabilities['approval'];
  /** The entry to audit once the call is allowed (ELEVATED and up). */
  audit?: ResolvedCapabilities['audit'];
  /** The worktree native tools see: the call's, else the tool's grant's (they are trusted code). */
  workingDir?: string;
}

export type Admission =
  | { admitted: true; call: AdmittedCall }
  | { admitted: false; error: ToolhostError; audit?: AuditEntry };

function refuse(error: ToolhostError, audit?: AuditEntry): Admission {
  return audit === undefined ? { admitted: false, error } : { admitted: false, error, audit };
}

/** Decide whether the call `name(args)` may start. */
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
  const overCeiling = ceilingDenial(policy, deps.defaults);
  if (overCeiling) {
    return refuse(overCeiling, { callId, tool: tool.name, decision: 'denied', code: overCeiling.code, reason: overCeiling.message });
  }
  const budgets = resolveBudgets(policy, deps.defaults, tool.grant);
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
  });
  if (!decision.allowed) return refuse(decision.error, decision.audit);

  // 3. validate
  const invalid = registered.validate.check(args, callId);
  if (invalid) return refuse(invalid);

  // 4. ids
  // A caller's id is checked; one the host made (a UUID: options.callId unset) always fits.
  const badId = options.callId === undefined ? undefined : callIdProblem(callId, deps.maxCallIdLength);
  if (badId !== undefined) return refuse(new ToolhostError('INVALID_INPUT', badId, { details: { reason: 'call_id' } }));
  // An empty conversation id would make every such caller share one conversation (and one instance).
  if (options.conversationId === '') return refuse(new ToolhostError('INVALID_INPUT', 'conversationId must not be empty: leave it out for no conversation', { details: { reason: 'conversation_id' } }));
  // U+0000 delimits a principal's conversation keys: an id holding it could name one (principal-scope.ts).
  if (options.conversationId?.includes(CONVERSATION_SCOPE_MARK)) return refuse(new ToolhostError('INVALID_INPUT', 'conversationId must not contain U+0000', { details: { reason: 'conversation_id' } }));

  const workingDir = options.workingDir ?? tool.grant?.worktree;
  const call: AdmittedCall = { callId, tool, args, options, policy, budgets, capabilities: decision.capabilities };
  if (decision.approval) call.approval = decision.approval;
  if (decision.audit) call.audit = decision.audit;
  if (workingDir !== undefined) call.workingDir = workingDir;
  return { admitted: true, call };
}
