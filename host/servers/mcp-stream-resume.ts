/**
 * A 2025-era resume (`GET` with `Last-Event-ID`, Streamable HTTP), answered so
 * that no stream is held open for a request that is over, and no client is sent
 * into a reconnect loop.
 *
 * Why: the MCP SDK 1.x client reconnects (`GET`, `Last-Event-ID`) whenever a
 * request's stream that carried an event id ends without a *result* (it does
 * not count an error response as the answer), so it resumes after every call
 * that ended in a JSON-RPC error and after every call it cancelled. The SDK's
 * transport answered each such resume with a replay stream it then held open
 * for good (nothing would ever be sent on it again): the 100,000-call soak ran
 * out of connections that way. What the SDK clients do with each answer (1.x
 * and v2 alike): a stream that ends without a response makes them reconnect
 * (after the stream's `retry:` interval, attempt count reset); a `405` makes
 * them stop at once, silently; any other error status makes them retry
 * `maxRetries` times (default 2) and stop.
 *
 * So, for the stream the event belongs to (its state from mcp-event-store.ts):
 * - not held (dropped past `resume_events`/`resume_bytes`, or never this
 *   session's): `410` (OUTPUT_LIMIT_EXCEEDED, `resume_window`), as before;
 * - its request still runs on this host, or it is the session's standalone
 *   stream: the SDK transport replays and keeps the stream (it ends it with the
 *   response; a standalone stream is one per session, bounded like the
 *   sessions);
 * - ended (answered or cancelled) with messages left after the event: those,
 *   then the stream ends (a client that gets the result stops; one that got an
 *   error reconnects once more and gets the next case);
 * - ended with nothing left: `405` (the MCP spec's answer for "no stream for
 *   this GET"; the SDK clients and the conformance suite accept it as final);
 * - held only in a fleet's shared copy (the request runs, or ran, on another
 *   host): what is there, then the stream ends (or `405` as above).
 * A request answered while the SDK was registering its resumed stream is
 * caught after: that stream is dropped unsent and the answer built from the
 * store instead.
 *
 * What a cancel needs from the SDK: which stream a request id is on
 * (`streamOfRequest`), read from the SDK 1.x transport's private
 * `_requestToStreamMapping` (the only place toolhost reads it; a test fails if
 * an SDK update removes it: test/mcp-resume-hostile-clients.test.ts).
 *
 * Does not: bound how often a client resumes a stream that is still live (each
 * resume replaces the previous one: one open stream per request stream).
 */
import type { ServerResponse } from 'node:http';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { STANDALONE_STREAM_ID, type ResumePlan, type SessionEventStore } from './mcp-event-store.js';
import { rpcError } from './http-edges.js';
import type { ServerLimitMetrics } from './metrics.js';

export interface ResumeRequest {
  events: SessionEventStore;
  sessionId: string;
  lastEventId: string;
  res: ServerResponse;
  limitMetrics?: ServerLimitMetrics | undefined;
  /** Serve the request through the session's SDK transport, its response passed through `check` first. */
  delegate(check: (response: Response) => Promise<Response>): Promise<void>;
}

/** Answer a resume (see the header). */
export async function answerResume(request: ResumeRequest): Promise<void> {
  const { events, lastEventId, res, limitMetrics } = request;
  const plan = await events.plan(lastEventId);
  if (plan === undefined) {
    limitMetrics?.refused('mcp', 'resume_window');
    return rpcError(res, 410, -32000, 'Gone: that event is no longer held for replay (servers.mcp.http.resume_events / resume_bytes); reconnect without Last-Event-ID', { code: 'OUTPUT_LIMIT_EXCEEDED', reason: 'resume_window' });
  }
  if (plan.streamId === STANDALONE_STREAM_ID || (plan.local && !plan.ended)) {
    limitMetrics?.resumed?.('mcp', 'live');
    return request.delegate(async (response) => {
      if (plan.streamId === STANDALONE_STREAM_ID || response.status !== 200) return response;
      // Answered or cancelled while the SDK registered its stream: the store has it all, and the stream must end.
      const now = await events.plan(lastEventId);
      if (now === undefined || !now.ended) return response;
      await response.body?.cancel().catch(() => undefined);
      return finished(now, request.sessionId);
    });
  }
  const response = finished(plan, request.sessionId);
  limitMetrics?.resumed?.('mcp', response.status === 405 ? 'complete' : 'replayed');
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** The answer to a resume the store serves alone: what remains of the stream, then its end; or 405 when nothing does. */
function finished(plan: ResumePlan, sessionId: string): Response {
  if (plan.ended && plan.events.length === 0) {
    return new Response(JSON.stringify({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'That stream is complete: its request was answered or cancelled, and every event after Last-Event-ID was sent; nothing to replay', data: { reason: 'stream_complete' } },
      id: null,
    }), { status: 405, headers: { 'content-type': 'application/json', allow: 'GET, POST, DELETE', 'mcp-session-id': sessionId } });
  }
  let text = '';
  for (const event of plan.events) text += `event: message\nid: ${event.id}\ndata: ${JSON.stringify(event.message)}\n\n`;
  return new Response(text, { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'mcp-session-id': sessionId } });
}

/** The stream a request is answered on (the SDK 1.x transport's own table; see the header). */
export function streamOfRequest(transport: WebStandardStreamableHTTPServerTransport, requestId: RequestId): string | undefined {
  const table = (transport as unknown as { _requestToStreamMapping?: unknown })._requestToStreamMapping;
  if (!(table instanceof Map)) return undefined;
  const streamId: unknown = table.get(requestId);
  return typeof streamId === 'string' ? streamId : undefined;
}
