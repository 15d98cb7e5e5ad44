/**
 * The SERVER span of a 2026-07-28 `subscriptions/listen` request. The SDK's
 * serving entry answers `subscriptions/listen` itself, outside the handler
 * table every other request is traced through (mcp-trace.ts
 * `traceMcpRequests`), so the HTTP server opens this span around the stream:
 * it starts when the request arrives and ends when the stream does (the
 * client closed it, its token expired, the server closed).
 *
 * What it holds is fixed in size however long the stream lives: no event per
 * notification, only the request's facts, how many resource subscriptions
 * and notification kinds it asked for (counts, never the URIs: one can name a
 * worktree file or carry a token), and how it ended.
 */
import type { IncomingMessage } from 'node:http';
import type { CallTracer, TraceSpan } from '../core/tracing.js';
import { header } from './http-edges.js';
import { listenedUrisOf } from './mcp-modern-surfaces.js';
import { clip, openMcpServerSpan } from './mcp-trace.js';

/** How a listen stream ended. */
export type ListenEnd = 'closed' | 'token_expired' | 'server_closing';

/** Open the span of the listen request `body` (undefined when the host does not trace). */
export function openListenSpan(tracer: CallTracer | undefined, req: IncomingMessage, body: unknown): TraceSpan | undefined {
  if (tracer === undefined) return undefined;
  const request = body as { id?: unknown; params?: { _meta?: unknown; notifications?: unknown } };
  const meta = request.params?._meta;
  const notifications = request.params?.notifications;
  const kinds = typeof notifications === 'object' && notifications !== null ? Object.keys(notifications).length : 0;
  const id = request.id;
  return openMcpServerSpan(tracer, {
    method: 'subscriptions/listen',
    header: (name) => header(req, name),
    transport: 'tcp',
    protocolVersion: '2026-07-28',
    ...(typeof meta === 'object' && meta !== null ? { meta: meta as Record<string, unknown> } : {}),
    ...(typeof id === 'string' || typeof id === 'number' ? { requestId: typeof id === 'string' ? clip(id) : id } : {}),
    attributes: {
      'toolhost.listen.resource_subscriptions': listenedUrisOf(body).length,
      'toolhost.listen.notification_kinds': Math.min(kinds, 64),
    },
  });
}

/** End a listen span with how its stream ended. */
export function endListenSpan(span: TraceSpan | undefined, end: ListenEnd): void {
  if (span === undefined) return;
  span.setAttributes({ 'toolhost.listen.end': end });
  span.end();
}
