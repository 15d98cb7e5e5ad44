/** A traced call's own span at its end (core/tracing.ts): what the call path writes on it. */
import type { TerminalEvent } from '../events.js';
import type { TraceSpan } from '../tracing.js';

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
