/**
 * `approval: ask`: a call that needs approval (PRIVILEGED, FULL_ACCESS) asks
 * the human behind the calling client, through the client's elicitation (MCP
 * `elicitation/create`, form mode), and runs only on a yes.
 *
 * Guarantees:
 * - Yes means exactly: the client answered `accept` with `approve: true` (the
 *   form's one boolean field, default false). `decline`, `cancel`, an accept
 *   without `approve: true`, a failed or cancelled request, and a caller that
 *   cannot answer (gRPC, the CLI, the library without `CallOptions.client`,
 *   an MCP client that did not declare elicitation) are each a refusal with
 *   its reason; nothing approves by default.
 * - The question names the tool, the labels that need approval and what the
 *   call will be able to use (worktree and its mode, environment keys, the
 *   grant's egress allowlist), so the person approves what will run.
 * - The wait is part of the call: its wall budget runs (the deadline layer
 *   covers approval) and cancelling the call ends it.
 * - The answer is recorded by the approval layer in the audit log (allowed or
 *   denied, with the reason and who answered).
 *
 * Does not guarantee: that a human, rather than the client's software, gave
 * the answer (MCP cannot tell); use an embedder's approval hook where that
 * matters.
 */
import type { ApprovalDecision, ApprovalHook, ApprovalQuestion, ApprovalRequest } from './approval.js';

/** Who answers under `approval: ask` (named in refusals and the audit log). */
export const CALLER_APPROVER = 'the calling client\'s user (elicitation)';

/** The question put to the caller's user for a call needing approval. */
export function approvalQuestion(request: ApprovalRequest): ApprovalQuestion {
  const lines = [`Allow the tool "${request.tool}" to run with ${request.reasons.join(' and ')}?`];
  const grants = request.grants;
  lines.push(`Network: ${request.network}${grants !== undefined && grants.egressAllow.length > 0 ? ` (allowlist: ${grants.egressAllow.join(', ')})` : ''}.`);
  lines.push(`Privilege: ${request.privilege}.`);
  if (grants?.worktree !== undefined) lines.push(`Worktree: ${grants.worktree.root} (${grants.worktree.readOnly ? 'read-only' : 'read-write'}).`);
  if (grants !== undefined && grants.envKeys.length > 0) lines.push(`Environment: ${grants.envKeys.join(', ')}.`);
  if (request.agentName !== undefined) lines.push(`Asked by: ${request.agentName}.`);
  lines.push(`Call: ${request.callId}.`);
  return {
    message: lines.join('\n'),
    requestedSchema: {
      type: 'object',
      properties: { approve: { type: 'boolean', title: 'Allow this call', description: 'Run the tool with these permissions', default: false } },
      required: ['approve'],
    },
  };
}

/** The approval hook of `approval: ask` (see the header). */
export const askCallerApproval: ApprovalHook = async (request): Promise<ApprovalDecision> => {
  const by = CALLER_APPROVER;
  if (request.askCaller === undefined) {
    return { approved: false, by, reason: 'the calling client cannot answer elicitation requests, so nobody could be asked (approval: ask)' };
  }
  let answer;
  try {
    answer = await request.askCaller(approvalQuestion(request));
  } catch (error) {
    return { approved: false, by, reason: `the approval question failed: ${(error as Error)?.message ?? String(error)}` };
  }
  if (answer.action !== 'accept') return { approved: false, by, reason: `the calling client's user answered ${answer.action}` };
  if (answer.content?.approve !== true) return { approved: false, by, reason: 'the calling client\'s user accepted the form without approve: true' };
  return { approved: true, by };
};
