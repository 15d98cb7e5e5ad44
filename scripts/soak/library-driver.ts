/**
 * One soak call through the library (`registry.stream`), run inside the host
 * process. A cancelled kind is cancelled by aborting the caller's signal
 * (variant 0) or by the stream's own `cancel()` (variant 1).
 */
import { performance } from 'node:perf_hooks';
import type { ToolRegistry } from '../../host/index.js';
import { judge, type CallOutcome } from './outcome.js';
import type { PlannedCall } from './plan.js';

export async function libraryCall(registry: ToolRegistry, call: PlannedCall): Promise<CallOutcome> {
  const { kind, n } = call;
  const startedAt = performance.now();
  const controller = new AbortController();
  let answers = 0;
  let code = 'NO_ANSWER';
  let value: unknown;
  let detail: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const stream = registry.stream(kind.tool, kind.args(n), {
      callId: call.id,
      signal: controller.signal,
      ...(kind.policy === undefined ? {} : { policy: kind.policy }),
      ...(kind.conversation === undefined ? {} : { conversationId: kind.conversation(n) }),
    });
    if (kind.cancelAfterMs !== undefined) {
      timer = setTimeout(() => {
        if (call.variant === 0) controller.abort();
        else stream.cancel();
      }, kind.cancelAfterMs);
    }
    for await (const event of stream) {
      if (event.type === 'result') {
        answers += 1;
        code = 'ok';
        value = event.result.structuredContent;
      } else if (event.type === 'error') {
        answers += 1;
        code = event.code;
        detail = `${String((event.details as { reason?: unknown } | undefined)?.reason ?? '')} ${event.message}`.trim().slice(0, 160);
      }
    }
  } catch (error) {
    // stream() never throws for a call; this would be a bug in the soak or the registry, and is reported as such.
    code = `THROWN:${error instanceof Error ? error.message : String(error)}`.slice(0, 120);
  } finally {
    clearTimeout(timer);
  }
  const wrong = judge(kind, n, code, value);
  return { n, channel: 'library', kind: kind.name, code, answers, ...(wrong === undefined ? {} : { wrong }), ...(detail === undefined ? {} : { detail }), ms: performance.now() - startedAt };
}
