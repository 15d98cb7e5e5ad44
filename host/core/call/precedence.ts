/**
 * Which error a failed call ends with, when several things went wrong at once
 * (a budget fired while the caller cancelled, a tool crashed after the network
 * policy refused it, ...). One table, read top to bottom; the first rule that
 * applies decides. The runners only report facts (their error, what the
 * network policy refused); they never decide precedence themselves.
 */
import type { NetworkLabel } from '../../policy/labels.js';
import { ToolhostError, toErrorData, type ToolErrorData } from '../../base/errors.js';
import type { HostRefusals } from './refusals.js';

/** What was known when the run failed. */
export interface FailureFacts {
  callId: string;
  tool: string;
  /** The reason the host stopped the call hard (its wall clock, or a cancel past its grace), if it did. */
  hardStop: unknown;
  /** Whether the caller asked to cancel. */
  cancelRequested: boolean;
  /** What the run threw. */
  error: unknown;
  /** Outgoing requests the network policy refused during the call. */
  networkDenied: ReadonlyArray<{ url: string; reason: string }>;
  network: NetworkLabel;
  /** Deltas the caller already received (a cancelled call says whether its output is partial). */
  deltas: number;
  /** The call never left the sandbox's queue (a timeout then says so: the cause is load, not the tool). */
  waitingForWorker?: boolean;
  /** What the host refused the tool during the call (sampling, elicitation, state writes). */
  refusals?: HostRefusals;
}

/** The host's refusal a tool's TOOL_ERROR relays (its `details.code` is the refusal's code), if any. */
function relayedRefusal(facts: FailureFacts): ToolErrorData | undefined {
  const { error, refusals } = facts;
  if (refusals === undefined || !(error instanceof ToolhostError) || error.code !== 'TOOL_ERROR') return undefined;
  return refusals.match((error.details as { code?: unknown } | undefined)?.code, error.message);
}

interface PrecedenceRule {
  /** What the rule stands for, for people reading the table. */
  readonly rule: string;
  applies(facts: FailureFacts): boolean;
  error(facts: FailureFacts): ToolErrorData;
}

/** The error precedence, highest first. */
export const ERROR_PRECEDENCE: readonly PrecedenceRule[] = [
  {
    rule: 'the host stopped the call (wall clock, or a cancel past its grace): the reason it stopped it',
    applies: (facts) => facts.hardStop !== undefined,
    error: (facts) => {
      const data = toErrorData(facts.hardStop, facts.callId);
      if (facts.waitingForWorker === true && (data.code === 'WALL_TIMEOUT' || data.code === 'TOOL_TIMEOUT')) {
        data.message = `${data.message}, while it still waited for a sandbox worker (every worker was busy; the tool never ran)`;
        data.details = { ...(data.details as Record<string, unknown> | undefined), waitingForWorker: true };
      }
      return data;
    },
  },
  {
    rule: 'the caller cancelled: CANCELLED',
    applies: (facts) => facts.cancelRequested,
    error: (facts) => ({ code: 'CANCELLED', message: 'the call was cancelled by its caller', callId: facts.callId }),
  },
  {
    rule: 'the tool failed (TOOL_ERROR, TOOL_CRASHED) after the network policy refused one of its requests: NETWORK_DENIED',
    applies: (facts) => facts.networkDenied.length > 0 && facts.error instanceof ToolhostError && (facts.error.code === 'TOOL_ERROR' || facts.error.code === 'TOOL_CRASHED'),
    error: (facts) => {
      const first = facts.networkDenied[0]!;
      return {
        code: 'NETWORK_DENIED',
        message: `the tool failed after the network policy (${facts.network}) refused ${first.url}: ${first.reason}`,
        callId: facts.callId,
        details: { denied: facts.networkDenied, cause: (facts.error as ToolhostError).toData() },
      };
    },
  },
  {
    rule: 'the tool failed with a refusal the host gave it during the call (its TOOL_ERROR carries the refusal\'s code, e.g. an uncaught refused sample()): the host\'s refusal, as the host made it',
    applies: (facts) => relayedRefusal(facts) !== undefined,
    error: (facts) => {
      const refusal = relayedRefusal(facts)!;
      const details = refusal.details !== null && typeof refusal.details === 'object' ? refusal.details : {};
      return { code: refusal.code, message: `${refusal.message} (the tool ended with this refusal)`, callId: facts.callId, details: { ...details, relayedBy: facts.tool } };
    },
  },
  {
    rule: 'a coded error from the runner (the tool\'s TOOL_ERROR; the sandbox\'s CPU, memory, output limits, crash, overload): as it is',
    applies: (facts) => facts.error instanceof ToolhostError,
    error: (facts) => (facts.error as ToolhostError).withCallId(facts.callId).toData(),
  },
  {
    rule: 'anything else thrown: TOOL_CRASHED',
    applies: () => true,
    error: (facts) => ({
      code: 'TOOL_CRASHED',
      message: `tool "${facts.tool}" threw: ${facts.error instanceof Error ? facts.error.message : String(facts.error)}`,
      callId: facts.callId,
    }),
  },
];

/** The error a failed call ends with. A CANCELLED call (soft or hard) says whether its output was partial. */
export function failureOf(facts: FailureFacts): ToolErrorData {
  const rule = ERROR_PRECEDENCE.find((candidate) => candidate.applies(facts))!;
  const data = rule.error(facts);
  if (data.code === 'CANCELLED') data.details = { partial: facts.deltas > 0, deltas: facts.deltas };
  return data;
}
