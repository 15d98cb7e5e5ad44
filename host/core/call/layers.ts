/**
 * What happens around a tool's run, as ordered layers over one primitive
 * (`invoke`: race the tool against the call's hard stop). Each layer wraps
 * the next, like undici's dispatcher interceptors:
 *
 *   deadline → fleet → approval & audit → retries → invoke
 *
 * - deadline: the wall clock covers the whole call, approval wait and retries
 *   included; when it fires the call is stopped hard (TOOL_TIMEOUT, or
 *   WALL_TIMEOUT for `budget_wall_ms`).
 * - fleet (only with a CallDirectory): the call is registered fleet-wide
 *   within the fleet's per-tool and per-tenant caps (a full cap rejects it
 *   with OVERLOADED before `start`), and unregistered when its run is over.
 *   The tenant is the caller's principal (principal-scope.ts), never a name
 *   the client chose.
 * - approval & audit: a PRIVILEGED or FULL_ACCESS call waits for the approval
 *   hook, which may ask the calling client's user (`askCaller`, through its
 *   elicitation: policy/approval-elicitation.ts); a refusal is audited, with
 *   its reason and who gave it, and rejects the call; an allowed ELEVATED+ or
 *   approved call is audited; then the `start` event goes out.
 * - retries: transient failures (TOOL_CRASHED, OVERLOADED) of idempotent tools
 *   are tried again with backoff, up to the call's `max_retries`.
 *
 * A layer calls `next` before its first `await` when it has nothing to wait
 * for, so a call without an approval has sent `start` before `stream()`
 * returns, and a tool's first events always follow it.
 */
import { ToolhostError } from '../../base/errors.js';
import type { ApprovalAnswer, ApprovalDecision, ApprovalQuestion } from '../../policy/approval.js';
import { abortableDelay, backoffDelay, isTransient } from '../retry.js';
import type { ToolRun } from '../tool.js';
import { CallRejection, type Call } from './call.js';

/** Runs a call (or the rest of its layers) to its tool's output. */
export type CallHandler = (call: Call) => Promise<ToolRun>;
/** Wraps the rest of the call's run with one concern. */
export type CallLayer = (next: CallHandler) => CallHandler;

/** `layers[0]` outermost, `handler` innermost. */
export function compose(layers: readonly CallLayer[], handler: CallHandler): CallHandler {
  return layers.reduceRight<CallHandler>((next, layer) => layer(next), handler);
}

/** The wall-clock budget of the whole call. */
export const deadline: CallLayer = (next) => (call) => {
  const { budgets } = call.plan;
  const timer = setTimeout(() => {
    const what = budgets.wallCode === 'WALL_TIMEOUT' ? 'wall-clock budget' : 'timeout';
    call.stop(new ToolhostError(budgets.wallCode, `the call ran past its ${what} of ${budgets.wallMs} ms`, { callId: call.id, details: { limitMs: budgets.wallMs } }));
  }, budgets.wallMs);
  timer.unref?.();
  const clear = (): void => clearTimeout(timer);
  let run: Promise<ToolRun>;
  try {
    run = next(call);
  } catch (error) {
    clear();
    return Promise.reject(error);
  }
  // The timer goes when the run settles (registered first, so before anyone awaiting the run resumes).
  run.then(clear, clear);
  return run;
};

/** Fleet-wide registration and caps; nothing at all without a fleet (the embedded default). */
export const fleet: CallLayer = (next) => (call) => {
  const directory = call.deps.fleet;
  if (!directory) return next(call);
  return (async () => {
    const { tool, principal, tenant } = call.plan;
    // The tenant is who the caller is (admission set it), not what it calls itself: the agent is only shown.
    const agent = call.plan.agentName ?? call.plan.sessionId;
    // The fleet's admission (caps in Redis): a span of its own when the call is traced.
    const span = call.span?.child('fleet.enter', { attributes: { 'toolhost.fleet.tool': tool.name } });
    try {
      await directory.enter({
        callId: call.id,
        tool: tool.name,
        tenant,
        ...(principal === undefined ? {} : { principal }),
        ...(agent === undefined ? {} : { agent }),
      });
    } catch (error) {
      const refusal = error instanceof ToolhostError ? error.withCallId(call.id) : new ToolhostError('INTERNAL', `fleet admission failed: ${String(error)}`, { callId: call.id });
      span?.fail(refusal.code);
      span?.end();
      throw new CallRejection(refusal);
    }
    span?.end();
    try {
      return await next(call);
    } finally {
      // Awaited (one round trip, bounded by the store's command timeout): the terminal goes out with the places free.
      await directory.leave(call.id, principal);
    }
  })();
};

/** The approval hook for calls that need one, the audit entry, then `start`. */
export const approvalAndAudit: CallLayer = (next) => (call) => {
  const { approval, audit } = call.plan;
  if (!approval) {
    if (audit) call.audit(audit.entry, audit.level);
    call.announce();
    return next(call);
  }
  return (async () => {
    const { tool, capabilities, conversationId, agentName, client } = call.plan;
    let decision: ApprovalDecision = { approved: false };
    const span = call.span?.child('approval', { attributes: { 'toolhost.approval.reasons': approval.reasons.join(',') } });
    try {
      const elicit = client?.elicit;
      const askCaller = elicit === undefined
        ? undefined
        : (question: ApprovalQuestion): Promise<ApprovalAnswer> => elicit.call(client, question, { signal: call.softSignal, callId: call.id, tool: tool.name });
      const answer = await call.deps.approve({
        ...approval,
        ...(conversationId === undefined ? {} : { conversationId }),
        ...(agentName === undefined ? {} : { agentName }),
        ...(askCaller === undefined ? {} : { askCaller }),
      });
      decision = typeof answer === 'object' && answer !== null ? answer : { approved: answer === true };
    } catch (error) {
      call.logger.warn({ callId: call.id, err: (error as Error).message }, 'the approval hook failed; treating it as a refusal');
    }
    span?.setAttributes({ 'toolhost.approval.approved': decision.approved === true });
    if (decision.approved !== true) span?.fail('PERMISSION_DENIED');
    span?.end();
    const by = decision.by === undefined ? {} : { approvedBy: decision.by };
    if (decision.approved !== true && call.softSignal.aborted) {
      // Stopped while waiting (wall clock, cancel): the call ends for that reason (precedence.ts), not as a refusal.
      throw new ToolhostError('CANCELLED', 'the call ended while waiting for its approval', { callId: call.id });
    }
    if (decision.approved !== true) {
      const reason = `the call needs approval (${approval.reasons.join(', ')}) and ${decision.reason ?? 'the approval hook did not give it'}`;
      call.audit({ callId: call.id, tool: tool.name, network: capabilities.network, privilege: capabilities.privilege, decision: 'denied', code: 'PERMISSION_DENIED', reason, ...(decision.by === undefined ? {} : { grants: by }) });
      throw new CallRejection(new ToolhostError('PERMISSION_DENIED', reason, { callId: call.id, details: { reason: 'approval', ...by } }));
    }
    if (audit) call.audit(decision.by === undefined ? audit.entry : { ...audit.entry, grants: { ...audit.entry.grants, ...by } }, audit.level);
    else if (decision.by !== undefined) call.audit({ callId: call.id, tool: tool.name, network: capabilities.network, privilege: capabilities.privilege, decision: 'allowed', reason: approval.reasons.join(', '), grants: by });
    call.announce();
    return next(call);
  })();
};

/** Transient failures of idempotent tools, tried again with exponential backoff and jitter. */
export const retries: CallLayer = (next) => (call) => {
  const { tool, budgets } = call.plan;
  const allowed = tool.idempotent ? budgets.maxRetries : 0;
  const attempt = (): Promise<ToolRun> => {
    const number = call.beginAttempt();
    // A retry is a span of its own (child of the call's), and the runner's spans go under it.
    const span = number > 1 ? call.span?.child('retry', { attributes: { 'toolhost.call.attempt': number } }) : undefined;
    if (span !== undefined) call.attemptSpan = span;
    let run: Promise<ToolRun>;
    try {
      run = next(call);
    } catch (error) {
      // A layer that threw instead of rejecting fails this attempt the same way.
      run = Promise.reject(error);
    }
    if (span !== undefined) {
      run.then(() => span.end(), (error: unknown) => {
        span.fail(error instanceof ToolhostError ? error.code : 'INTERNAL');
        span.end();
      });
    }
    // The last attempt allowed is the run itself: no handler, no extra promise.
    if (number > allowed) return run;
    return run.catch(async (error: unknown) => {
      if (!isTransient(error) || call.softSignal.aborted) throw error;
      const delay = backoffDelay(number, call.deps.retry);
      call.sink.log('warn', `attempt ${number} failed with ${(error as ToolhostError).code}; retrying in ${Math.round(delay)} ms`, 'native');
      const backoff = call.span?.child('retry.backoff', { attributes: { 'toolhost.call.attempt': number, 'error.type': (error as ToolhostError).code, 'toolhost.retry.delay_ms': Math.round(delay) } });
      try {
        await abortableDelay(delay, call.softSignal);
      } finally {
        backoff?.end();
      }
      return attempt();
    });
  };
  return attempt();
};

/**
 * The primitive: the tool's own run, raced against the call's hard stop.
 * At the stop, the tool has until the next turn of the event loop to settle
 * (a sandboxed tool stops its task at once and reports what it measured, e.g.
 * that the call was still waiting for a worker); then the stop settles it,
 * and whatever the tool does later is ignored. One promise, not an async
 * function around Promise.race and a second promise for the stop: ~1.7 KiB
 * less garbage and fewer turns a call.
 */
export const invoke: CallHandler = (call) => {
  const stop = call.hardStop;
  if (stop) return Promise.reject(stop.reason);
  return new Promise<ToolRun>((resolve, reject) => {
    // Watched without the hard signal itself: making it costs more than most sandboxed calls (see Call.watch).
    const unwatch = call.watch({ hard: (reason) => setImmediate(reject, reason) });
    let run: Promise<ToolRun>;
    try {
      run = call.plan.tool.invoke(call.plan.args, call.context, call.sink);
    } catch (error) {
      // A tool that throws instead of rejecting (a Tool written by hand) fails the same way.
      unwatch();
      reject(error);
      return;
    }
    run.then(
      (value) => {
        unwatch();
        resolve(value);
      },
      (error: unknown) => {
        unwatch();
        reject(error);
      },
    );
  });
};

/** The layers every call runs through, outermost first. */
export const CALL_LAYERS: readonly CallLayer[] = [deadline, fleet, approvalAndAudit, retries];
