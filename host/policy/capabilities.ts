/**
 * Policy resolution: the tool's grant ∩ the call's request → the capabilities
 * one call gets. A call asks for labels (or takes the tool's default policy,
 * then the host's default); asking above the grant is refused. The result is
 * what the capability layer builds the guest's WASI imports from.
 *
 * Decisions only: nothing here opens a file, a socket or a worker (a writable
 * worktree is checked against the host-owned paths by resolving paths only:
 * host-owned-paths.ts).
 */
import { isAbsolute, resolve } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import type { ApprovalRequest } from './approval.js';
import type { AuditEntry } from './audit.js';
import type { ExecutionPolicy, PolicyDefaults } from './execution-policy.js';
import type { ToolGrant } from './grant.js';
import { describeNesting, nestingWith, type GrantedWorktree } from './worktree-nesting.js';
import { describeOverlap, type HostOwnedOverlap } from './host-owned-paths.js';
import { NETWORK_LABELS, PRIVILEGE_LABELS, labelRank, type LabelCeiling, type NetworkLabel, type PrivilegeLabel } from './labels.js';

/** The guest path at which the worktree appears. */
export const WORKTREE_GUEST_PATH = '/worktree';

/** What one call may use. */
/** The allowlist of a grant without one: one array, so its parsed form is shared too. */
const NO_EGRESS_ALLOW: readonly string[] = Object.freeze([]);

export interface CallCapabilities {
  network: NetworkLabel;
  /** Egress allowlist entries (from the grant), as written. */
  /** The grant's allowlist itself (one array per grant: net's `checkerFor` parses it once). */
  egressAllow: readonly string[];
  privilege: PrivilegeLabel;
  /** The worktree the guest sees at {@link WORKTREE_GUEST_PATH}, if any. */
  filesystem?: { root: string; readOnly: boolean };
  /** The environment the guest sees. */
  env: Record<string, string>;
  /** The grant lets the guest's outgoing HTTP carry the call's trace context (`propagate_trace`). */
  propagateTrace?: boolean;
}

export interface CapabilityRequest {
  callId: string;
  tool: string;
  policy: ExecutionPolicy;
  /** The tool's default policy, applied where the call is silent. */
  toolDefaults: ExecutionPolicy;
  grant: ToolGrant;
  defaults: PolicyDefaults;
  /** The caller's own ceiling (an OAuth token's scopes), applied after the grant's. */
  callerCeiling?: LabelCeiling;
  /** The worktree the caller bound (otherwise the grant's). */
  workingDir?: string;
  /** Environment values the caller offered. */
  env?: Record<string, string>;
  /** Where env values come from last (the host's environment). */
  hostEnv: NodeJS.ProcessEnv;
  /** The paths a writable worktree must not overlap (host/policy/host-owned-paths.ts). */
  hostOwned?: { overlap(worktree: string): HostOwnedOverlap | undefined };
  /** The worktrees the registered tools are granted: a call's own worktree must not nest with them (policy/worktree-nesting.ts). */
  grantedWorktrees?: () => ReadonlyArray<GrantedWorktree>;
}

/** A resolved call, with what must be approved and audited before it runs. */
export interface ResolvedCapabilities {
  capabilities: CallCapabilities;
  /** Set when an approval hook must say yes first. */
  approval?: Omit<ApprovalRequest, 'conversationId' | 'agentName'>;
  /** The audit entry to record when the call is allowed (ELEVATED and up). */
  audit?: { entry: AuditEntry; level: 'info' | 'warn' };
}

/** A refused call: the error to answer with, and the audit entry of the denial. */
export interface CapabilityDenial {
  allowed: false;
  error: ToolhostError;
  audit: AuditEntry;
}

/** The decision on a call's capabilities: what it may use, or why not. */
export type CapabilityDecision = ({ allowed: true } & ResolvedCapabilities) | CapabilityDenial;

/** A denial decision, with its audit entry made here rather than rebuilt later from the error. */
export function denial(
  request: Pick<CapabilityRequest, 'callId' | 'tool'>,
  code: 'PERMISSION_DENIED' | 'TOOL_PRIVILEGE_ESCALATION' | 'WORKTREE_NOT_BOUND',
  message: string,
  labels: { network?: NetworkLabel; privilege?: PrivilegeLabel },
  details: Record<string, unknown> = {},
): CapabilityDenial {
  return {
    allowed: false,
    error: new ToolhostError(code, message, { callId: request.callId, details: { ...labels, ...details } }),
    audit: { callId: request.callId, tool: request.tool, ...labels, decision: 'denied', code, reason: message },
  };
}

/**
 * The caller's ceiling, beside the grant's: the labels the call would run
 * with (asked for, or the defaults) above what the caller may ask for are
 * refused, with the codes the grant's ceiling uses, never lowered in silence.
 */
function callerCeilingDenial(request: CapabilityRequest, labels: { network: NetworkLabel; privilege: PrivilegeLabel }): CapabilityDenial | undefined {
  const ceiling = request.callerCeiling;
  if (ceiling === undefined) return undefined;
  const source = ceiling.source ?? 'the caller\'s credentials';
  if (ceiling.network !== undefined && labelRank(NETWORK_LABELS, labels.network) > labelRank(NETWORK_LABELS, ceiling.network)) {
    return denial(request, 'PERMISSION_DENIED', `${source} allow network_policy ${ceiling.network} at most; the call to "${request.tool}" would run with ${labels.network}`, labels, { reason: 'caller-ceiling', ceiling: ceiling.network });
  }
  if (ceiling.privilege !== undefined && labelRank(PRIVILEGE_LABELS, labels.privilege) > labelRank(PRIVILEGE_LABELS, ceiling.privilege)) {
    return denial(request, 'TOOL_PRIVILEGE_ESCALATION', `${source} allow privilege_level ${ceiling.privilege} at most; the call to "${request.tool}" would run with ${labels.privilege}`, labels, { reason: 'caller-ceiling', ceiling: ceiling.privilege });
  }
  return undefined;
}

/**
 * Decide what one call may use: the labels it asked for (or the tool's
 * defaults, then the host's), checked against the tool's grant, the worktree
 * it needs, its environment. A refusal is a value, not an exception.
 */
export function resolveCapabilities(request: CapabilityRequest): CapabilityDecision {
  const { grant, defaults, policy, toolDefaults } = request;
  const network = policy.networkPolicy ?? toolDefaults.networkPolicy ?? defaults.networkPolicy;
  const privilege = policy.privilegeLevel ?? toolDefaults.privilegeLevel ?? defaults.privilegeLevel;
  const maxNetwork = grant.network ?? 'DENY_ALL';
  const maxPrivilege = grant.privilege ?? 'MINIMAL';
  const labels = { network, privilege };

  if (labelRank(NETWORK_LABELS, network) > labelRank(NETWORK_LABELS, maxNetwork)) {
    return denial(request, 'PERMISSION_DENIED', `tool "${request.tool}" is granted network_policy ${maxNetwork} at most; the call asked for ${network}`, labels);
  }
  if (labelRank(PRIVILEGE_LABELS, privilege) > labelRank(PRIVILEGE_LABELS, maxPrivilege)) {
    return denial(request, 'TOOL_PRIVILEGE_ESCALATION', `tool "${request.tool}" is granted privilege_level ${maxPrivilege} at most; the call asked for ${privilege}`, labels);
  }
  const callerDenied = callerCeilingDenial(request, labels);
  if (callerDenied) return callerDenied;

  const worktreeRequired = policy.worktreeRequired ?? toolDefaults.worktreeRequired ?? false;
  const bound = request.workingDir ?? grant.worktree;
  if (worktreeRequired && bound === undefined) {
    return denial(request, 'WORKTREE_NOT_BOUND', `tool "${request.tool}" requires a worktree, but none is bound to the call (bind one with --worktree or the call's workingDir)`, labels);
  }
  if (bound !== undefined && !isAbsolute(resolve(bound))) {
    return denial(request, 'WORKTREE_NOT_BOUND', `the worktree "${bound}" is not a directory path`, labels);
  }

  const rank = labelRank(PRIVILEGE_LABELS, privilege);
  const capabilities: CallCapabilities = { network, egressAllow: grant.egressAllow ?? NO_EGRESS_ALLOW, privilege, env: {} };
  if (grant.propagateTrace === true) capabilities.propagateTrace = true;
  // MINIMAL: no filesystem; DEFAULT: the worktree read-only; ELEVATED and up: read-write.
  if (bound !== undefined && rank >= labelRank(PRIVILEGE_LABELS, 'DEFAULT')) {
    capabilities.filesystem = { root: resolve(bound), readOnly: rank < labelRank(PRIVILEGE_LABELS, 'ELEVATED') };
    // A guest that can write where the host reads code or configuration could run code as the host.
    const overlap = capabilities.filesystem.readOnly ? undefined : request.hostOwned?.overlap(capabilities.filesystem.root);
    if (overlap !== undefined) {
      return denial(request, 'PERMISSION_DENIED', `${describeOverlap(overlap)}: a guest must never be able to write what the host reads code or configuration from; bind a worktree that does not overlap it, or call at DEFAULT (read-only)`, labels, {
        reason: 'host-owned-path',
        kind: overlap.owned.kind,
        worktree: overlap.worktree,
        owned: overlap.owned.path,
        ...(overlap.entry === undefined ? {} : { entry: overlap.entry }),
      });
    }
    // A worktree bound to this call only: not inside another tool's writable one, nor (writable) holding one.
    if (request.workingDir !== undefined && request.grantedWorktrees !== undefined) {
      const call: GrantedWorktree = { name: `this call of "${request.tool}"`, worktree: capabilities.filesystem.root, privilege };
      const nested = nestingWith(call, request.grantedWorktrees());
      if (nested !== undefined) {
        return denial(request, 'PERMISSION_DENIED', describeNesting(nested), labels, { reason: 'nested-worktree', outer: nested.outer.worktree, inner: nested.inner.worktree });
      }
    }
  }
  // The environment: empty below ELEVATED; then only allowlisted keys, from
  // configured values, the caller's env, or the host's environment, in that order.
  if (rank >= labelRank(PRIVILEGE_LABELS, 'ELEVATED')) {
    for (const key of grant.envAllow ?? []) {
      const value = grant.env?.[key] ?? request.env?.[key] ?? request.hostEnv[key];
      if (value !== undefined) capabilities.env[key] = value;
    }
  }

  const resolved: { allowed: true } & ResolvedCapabilities = { allowed: true, capabilities };
  const reasons: string[] = [];
  if (privilege === 'PRIVILEGED') reasons.push('privilege_level PRIVILEGED');
  if (network === 'FULL_ACCESS') reasons.push('network_policy FULL_ACCESS');
  if (reasons.length > 0) {
    const grants = { envKeys: Object.keys(capabilities.env), egressAllow: capabilities.egressAllow, ...(capabilities.filesystem ? { worktree: { ...capabilities.filesystem } } : {}) };
    resolved.approval = { callId: request.callId, tool: request.tool, network, privilege, reasons, grants };
  }
  if (rank >= labelRank(PRIVILEGE_LABELS, 'ELEVATED')) {
    resolved.audit = {
      level: privilege === 'PRIVILEGED' ? 'warn' : 'info',
      entry: {
        callId: request.callId,
        tool: request.tool,
        network,
        privilege,
        decision: 'allowed',
        grants: {
          envKeys: Object.keys(capabilities.env),
          ...(capabilities.filesystem ? { worktree: capabilities.filesystem.root, readOnly: capabilities.filesystem.readOnly } : {}),
        },
      },
    };
  }
  return resolved;
}
