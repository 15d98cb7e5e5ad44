/**
 * Approval of the most powerful calls: PRIVILEGED privilege and FULL_ACCESS
 * network run only when the host's approval hook says yes. Without a hook the
 * answer is no.
 */
import type { NetworkLabel, PrivilegeLabel } from './labels.js';

export interface ApprovalRequest {
  callId: string;
  tool: string;
  network: NetworkLabel;
  privilege: PrivilegeLabel;
  conversationId?: string;
  agentName?: string;
  /** Why approval is needed, e.g. `privilege_level PRIVILEGED`. */
  reasons: string[];
}

/** Returns true to let the call run. Throwing or rejecting counts as no. */
export type ApprovalHook = (request: ApprovalRequest) => boolean | Promise<boolean>;

/** The default: never approve. */
export const denyAllApprovals: ApprovalHook = () => false;
