/**
 * Approval of the most powerful calls: PRIVILEGED privilege and FULL_ACCESS
 * network run only when the host's approval hook says yes. Without a hook the
 * answer is no.
 */
import type { NetworkLabel, PrivilegeLabel } from './labels.js';

/** What a call that needs approval will be able to use (for the person asked). */
export interface ApprovalGrants {
  /** The worktree the call gets, and whether it may write there. */
  worktree?: { root: string; readOnly: boolean };
  /** Environment keys it will see. */
  envKeys: string[];
  /** Destinations its network label is allowed to reach beyond its default, as written in the grant. */
  egressAllow: readonly string[];
}

/** A question to the calling client's user (MCP `elicitation/create`, form mode). */
export interface ApprovalQuestion {
  message: string;
  requestedSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

/** The user's answer (MCP elicitation result). */
export interface ApprovalAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}

export interface ApprovalRequest {
  callId: string;
  tool: string;
  network: NetworkLabel;
  privilege: PrivilegeLabel;
  conversationId?: string;
  agentName?: string;
  /** Why approval is needed, e.g. `privilege_level PRIVILEGED`. */
  reasons: string[];
  /** What the call will be able to use. */
  grants?: ApprovalGrants;
  /**
   * Asks the user of the client that made the call, when that client can answer
   * (an MCP client that declared elicitation, or an embedder's `CallOptions.client.elicit`);
   * absent otherwise. Bounded by the call (its wall budget, its cancellation).
   */
  askCaller?: (question: ApprovalQuestion) => Promise<ApprovalAnswer>;
}

/** A decision with its reason (named in the refusal and the audit log) and who made it. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
  /** Who approved or refused, e.g. `the calling client's user`. */
  by?: string;
}

/** Returns true (or an approving decision) to let the call run. Throwing or rejecting counts as no. */
export type ApprovalHook = (request: ApprovalRequest) => boolean | ApprovalDecision | Promise<boolean | ApprovalDecision>;

/** The default: never approve. */
export const denyAllApprovals: ApprovalHook = () => false;
