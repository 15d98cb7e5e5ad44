/** A traced call's spans (core/tracing.ts): the one it hangs under, its admission, and what the call path writes at its end. */
import type { TerminalEvent } from '../events.js';
import { epochNow, epochOf, type CallTracer, type TraceCarrier, type TraceSpan } from '../tracing.js';
import type { Admission } from './admission.js';

/**
 * The span a call's spans hang under: the entry point's (`options.span`), or an `execute_tool <tool>` span of
 * the call's own continuing `options.trace` (the entry's options: only what this needs of them, never the options type
 * itself, which stops at admission). Its attributes name the tool and the call, never the arguments
 * (their size only when `telemetry.record.argument_sizes` asks), the principal as `telemetry.record.principal` says.
 */
export function openCallSpan(tracer: CallTracer | undefined, name: string, args: unknown, options: { span?: TraceSpan; trace?: TraceCarrier; principal?: string }, callId: string, startedAt: number): { span: TraceSpan; owned: boolean } | undefined {
  const attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': callId,
    'enduser.id': tracer?.principalAttribute(options.principal),
    'toolhost.arguments.size': tracer?.recording.argumentSizes === true ? Buffer.byteLength(JSON.stringify(args) ?? '') : undefined,
  };
  if (options.span !== undefined) {
    options.span.setAttributes(attributes);
    return { span: options.span, owned: false };
  }
  if (tracer === undefined) return undefined;
  const span = tracer.startSpan(`execute_tool ${name}`, { kind: 'internal', attributes, startTime: epochOf(startedAt), ...(options.trace === undefined ? {} : { parent: options.trace }) });
  return { span, owned: true };
}

/** Admission ran synchronously from `startedAt` to now: its span, drawn from the times taken around it. */
export function admissionSpan(span: TraceSpan, startedAt: number, admission: Admission): void {
  const child = span.child('admission', {
    startTime: epochOf(startedAt),
    attributes: admission.admitted
      ? { 'toolhost.policy.network': admission.call.capabilities.network, 'toolhost.policy.privilege': admission.call.capabilities.privilege }
      : { 'error.type': admission.error.code },
  });
  if (!admission.admitted) child.fail(admission.error.code);
  child.end(epochNow());
}

/** What a call's span says when the call ends: its outcome (toolhost's code as `error.type`) and accounting. */
export function endCallSpan(span: TraceSpan, event: TerminalEvent, owned: boolean): void {
  const { accounting } = event;
  span.setAttributes({
    'toolhost.call.wall_ms': accounting.wallMs,
    'toolhost.call.attempts': accounting.attempts,
    'toolhost.call.events': accounting.events,
    'toolhost.call.stage': event.type === 'error' ? event.stage : undefined,
  });
  if (event.type === 'error') span.fail(event.code);
  if (owned) span.end();
}
