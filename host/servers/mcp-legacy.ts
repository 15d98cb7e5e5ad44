/**
 * The 2025-era leg of the MCP HTTP server: Streamable HTTP sessions (the SDK
 * 1.x's web-standard transport, one SDK Server per session over the shared
 * registry), bounded by the session table (mcp-sessions.ts).
 *
 * A session belongs to the principal of the token that initialized it: a
 * request with another principal's token gets 404, as if it did not exist.
 *
 * With a session directory (a fleet on Redis), a session is created in the
 * directory too (within its fleet-wide caps: sessions in the fleet, per
 * principal), so any host serves it: a host that gets a request for a session
 * it does not hold looks it up, checks its principal, and restores it by
 * replaying the client's `initialize` (and its log level) to a new server of
 * its own: the session's negotiated version, client capabilities and log
 * level are the same on every host. The directory is asked on every request
 * (it renews the TTL, and a session ended on one host ends on all); a client's
 * answers and cancels that belong to another host are relayed (mcp-relay.ts).
 * While the directory is unreachable, new sessions are local to their host
 * (as without a fleet), and local sessions keep being served.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport, type HandleRequestOptions } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest, type InitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { Logger } from '../base/logger.js';
import type { SessionDirectory } from '../core/session-directory.js';
import { closeCancelledStreams, EARLY_CANCELS_KEPT } from './mcp-cancellations.js';
import { DEFAULT_EVENT_STORE_LIMITS, SessionEventStore, type EventStoreLimits, type SharedEventLog } from './mcp-event-store.js';
import { deliverTraced, openRelaySpan, relayedKind, relayForeignMessages, type SessionRelay } from './mcp-relay.js';
import { answerResume, streamOfRequest } from './mcp-stream-resume.js';
import { createMcpServer, drainMcpServer, type McpServerOptions, type McpToolSource } from './mcp-server.js';
import { SessionTable, type Admit, type SessionEndReason, type SessionLimits } from './mcp-sessions.js';
import type { ServerLimitMetrics } from './metrics.js';
import { header, rpcError } from './http-edges.js';

interface Session {
  id: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** Why it is being closed, when the table closes it. */
  ending?: SessionEndReason;
  /** The principal of the token that opened it (undefined on a server without tokens). */
  principal: string | undefined;
  /** In the directory (else this host's alone). */
  shared: boolean;
  /** What the directory keeps: the client's initialize params and its log level. */
  state: SessionState;
  relay?: SessionRelay;
  /** Its events for `Last-Event-ID` replay (absent: resumption is off). */
  events?: SessionEventStore;
}

interface SessionState {
  init: InitializeRequest['params'];
  logLevel?: string;
}

export interface LegacyOptions {
  serverOptions: McpServerOptions;
  limits: SessionLimits;
  maxBodyBytes: number;
  logger: Logger;
  limitMetrics?: ServerLimitMetrics | undefined;
  /** Sessions shared by a fleet (absent: this host's memory only). */
  directory?: SessionDirectory | undefined;
  /** Events kept per session for `Last-Event-ID` replay (mcp-event-store.ts; absent: the defaults; maxEvents 0: none). */
  resume?: EventStoreLimits | undefined;
  /** The `retry:` (ms) a resumable stream's priming event asks clients to wait before resuming it (default 1000). */
  resumeRetryMs?: number | undefined;
  /** A fleet's shared copy of sessions' events (replay on another host). */
  eventLog?: SharedEventLog | undefined;
}

export interface LegacySessions {
  readonly size: number;
  /** Serve one request of the 2025 era (its body read, its principal authenticated). */
  handle(req: IncomingMessage, res: ServerResponse, method: string, body: unknown, principal: string | undefined): Promise<void>;
  /** New sessions are refused from now on; calls in flight get up to `ms`. */
  drain(ms: number): Promise<void>;
  /** Close every session here (the directory keeps shared ones: other hosts may serve them). */
  close(): Promise<void>;
}

const SYNTHETIC = 'http://toolhost.invalid/mcp';
/** How long a client waits before resuming a stream that ended (the priming event's `retry:`), unless configured. */
export const DEFAULT_RESUME_RETRY_MS = 1000;

/** A request's session: found, none (404), or no room here to restore it (503/429). */
type Found = Session | undefined | Extract<Admit, { ok: false }>;

/**
 * `response` with its body cancelled as soon as the client's connection closes. The Node adapter notices a closed
 * connection only at the body's next chunk, so a stream whose client left mid-call stayed registered in the SDK
 * transport until the call's next event: a resume (GET with Last-Event-ID) meanwhile got 409, and SDK clients gave up
 * after their retries. Cancelling the body runs the SDK's own cleanup for that stream at once.
 */
function cancelOnClose(response: Response, res: ServerResponse): Response {
  const body = response.body;
  if (body === null || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
  const reader = body.getReader();
  const onClose = (): void => void reader.cancel().catch(() => undefined);
  res.once('close', onClose);
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) {
        res.off('close', onClose);
        controller.close();
      } else {
        controller.enqueue(value);
      }
    },
    cancel(reason) {
      res.off('close', onClose);
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Run `expire` when the request's access token expires (`req.auth.expiresAt`, seconds); undefined without one. */
export function atExpiry(req: IncomingMessage, expire: () => void): NodeJS.Timeout | undefined {
  const expiresAt = (req as IncomingMessage & { auth?: { expiresAt?: number } }).auth?.expiresAt;
  if (expiresAt === undefined) return undefined;
  const timer = setTimeout(expire, Math.min(Math.max(0, expiresAt * 1000 - Date.now()), 2 ** 31 - 1));
  timer.unref();
  return timer;
}
const NOT_FOUND = 'Session not found (it ended or expired: initialize a new one)';

export function createLegacySessions(registry: McpToolSource, options: LegacyOptions): LegacySessions {
  const { serverOptions, limitMetrics, directory, logger } = options;
  const sessions = new SessionTable<Session>(options.limits, (_id, session, reason) => {
    session.ending = reason;
    limitMetrics?.sessionEnded('mcp', reason);
    logger.debug({ reason }, 'mcp http: session closed by the server');
    session.server.close().catch(() => undefined);
  });
  const pending = new Set<Session>();
  const restoring = new Map<string, Promise<Found>>();
  let closing = false;
  const sweeper = setInterval(() => sessions.sweep(), Math.min(options.limits.idleMs, 60_000));
  sweeper.unref();
  limitMetrics?.trackSessions('mcp', () => sessions.size);
  const tracer = registry.tracer;
  const stopRelay = directory?.onRelay((sessionId, text, trace) => {
    const session = sessions.get(sessionId);
    if (session?.relay === undefined) return;
    try {
      // Traced: a SERVER span here when this host delivers it, in the relaying host's trace (mcp-relay.ts).
      const delivered = deliverTraced(tracer, session.relay, JSON.parse(text) as JSONRPCMessage, sessionId, trace);
      if (delivered !== undefined) limitMetrics?.relayed('mcp', 'delivered', delivered);
    } catch {
      // not JSON: nothing to deliver
    }
  });

  const refuse = (res: ServerResponse, reason: string, message: string, status: number): void => {
    limitMetrics?.refused('mcp', reason);
    rpcError(res, status, -32000, message, { code: 'OVERLOADED', reason });
  };

  /** Serve one HTTP exchange on the session's transport (its response through `check` first, when given). */
  const serve = async (session: Session, req: IncomingMessage, res: ServerResponse, body: unknown, check?: (response: Response) => Promise<Response>): Promise<void> => {
    const node = toNodeHandler({
      fetch: async (request, extra) => {
        const response = await session.transport.handleRequest(request, extra as HandleRequestOptions | undefined);
        return cancelOnClose(check === undefined ? response : await check(response), res);
      },
    }, { maxRequestBodySize: options.maxBodyBytes });
    // The adapter's writeHead alone leaves an event stream's headers unsent until its first event
    // (a call's stream could wait 15 s, for the first keep-alive): send them at once.
    const flushing = {
      writeHead: (status: number, headers?: Record<string, string>) => res.writeHead(status, headers).flushHeaders(),
      write: (chunk: string | Uint8Array) => res.write(chunk),
      end: (chunk?: string | Uint8Array) => (chunk === undefined ? res.end() : res.end(chunk)),
      on: (event: string, listener: (...args: unknown[]) => void) => res.on(event, listener),
      get destroyed() {
        return res.destroyed;
      },
    };
    await node(req as IncomingMessage & { auth?: never }, flushing, body);
  };

  const resume = options.resume ?? DEFAULT_EVENT_STORE_LIMITS;
  const openSession = (id: string, client: string, principal: string | undefined, state: SessionState, shared: boolean): Session => {
    const events = resume.maxEvents === 0 ? undefined : new SessionEventStore(resume, (count) => limitMetrics?.resumeEventsDropped?.('mcp', count), shared && options.eventLog !== undefined ? { log: options.eventLog, sessionId: id } : undefined);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      // The `retry:` of each stream's priming event: how long a client waits before it resumes a stream that ended.
      ...(events === undefined ? {} : { eventStore: events, retryInterval: options.resumeRetryMs ?? DEFAULT_RESUME_RETRY_MS }),
      onsessioninitialized: (initialized) => {
        if (!closing) sessions.add(initialized, client, session);
      },
    });
    transport.onclose = () => {
      if (sessions.get(id) === session && sessions.delete(id)) limitMetrics?.sessionEnded('mcp', 'closed');
    };
    const session: Session = { id, transport, principal, shared, state, ...(events === undefined ? {} : { events }), server: createMcpServer(registry, principal === undefined ? serverOptions : { ...serverOptions, principal }) };
    session.server.onerror = (error) => logger.debug({ err: error.message }, 'mcp http: session error');
    return session;
  };

  /** Connect its server, and the wrappers that close cancelled streams and relay other hosts' messages. */
  const connect = async (session: Session): Promise<void> => {
    await session.server.connect(session.transport);
    closeCancelledStreams(session.transport, EARLY_CANCELS_KEPT, (requestId) => {
      const stream = session.events === undefined ? undefined : streamOfRequest(session.transport, requestId);
      if (stream !== undefined) session.events?.end(stream);
    });
    if (directory !== undefined && session.shared) {
      session.relay = relayForeignMessages(session.transport, (message, extra) => {
        const kind = relayedKind(message);
        if (kind !== undefined) limitMetrics?.relayed('mcp', 'sent', kind);
        // Traced: a CLIENT span in the message's own trace; its context goes with the message (mcp-relay.ts).
        const span = tracer === undefined || kind === undefined ? undefined : openRelaySpan(tracer, kind, message, extra, session.id);
        directory.relay(session.id, JSON.stringify(message), span?.carrier())
          .catch((error: unknown) => {
            span?.fail('FLEET_UNAVAILABLE');
            logger.debug({ err: (error as Error).message }, 'mcp http: could not relay a message');
          })
          .finally(() => span?.end());
      }, async (level) => {
        session.state.logLevel = level;
        await directory.update(session.id, JSON.stringify(session.state)).catch(() => undefined);
      });
    }
  };

  /** A synthetic request through the session's own transport (a replay); resolves when it is answered. */
  const replay = async (session: Session, message: Record<string, unknown>, initialized: boolean): Promise<number> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    // No MCP-Protocol-Version header: the transport then takes the negotiated one.
    if (initialized) headers['mcp-session-id'] = session.id;
    const response = await session.transport.handleRequest(new Request(SYNTHETIC, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...message }) }));
    await response.text();
    return response.status;
  };

  /** Serve a session another host created: restore it here from the directory's record. */
  const restore = async (id: string, client: string, principal: string | undefined, stateText: string): Promise<Found> => {
    const room = sessions.reserve(client);
    // This host is full of busy sessions: the client retries (a 404 would make it open yet another session).
    if (!room.ok) return room;
    const state = JSON.parse(stateText) as SessionState;
    const session = openSession(id, client, principal, state, true);
    try {
      await connect(session);
      const status = await replay(session, { id: `toolhost-restore-${randomUUID()}`, method: 'initialize', params: state.init }, false);
      if (status !== 200 || sessions.get(id) !== session) throw new Error(`the replayed initialize answered ${status}`);
      await replay(session, { method: 'notifications/initialized' }, true);
      if (state.logLevel !== undefined) await replay(session, { id: `toolhost-restore-${randomUUID()}`, method: 'logging/setLevel', params: { level: state.logLevel } }, true);
      limitMetrics?.sessionRestored('mcp', 'restored');
      return session;
    } catch (error) {
      limitMetrics?.sessionRestored('mcp', 'failed');
      logger.warn({ err: (error as Error).message }, 'mcp http: could not restore a shared session');
      sessions.delete(id);
      await session.server.close().catch(() => undefined);
      return undefined;
    } finally {
      sessions.release();
    }
  };

  /** The session `id` for this request, or undefined (answered 404 by the caller). */
  const find = async (id: string, client: string, principal: string | undefined): Promise<Found> => {
    const local = sessions.get(id);
    if (directory === undefined || (local !== undefined && !local.shared)) return local !== undefined && local.principal === principal ? local : undefined;
    let record;
    try {
      record = await directory.get(id);
    } catch (error) {
      // The directory is away: serve what this host holds.
      logger.debug({ err: (error as Error).message }, 'mcp http: session directory unreachable');
      return local !== undefined && local.principal === principal ? local : undefined;
    }
    if (record === undefined) {
      if (local === undefined) return undefined;
      // Held here but gone from the directory: ended on another host (a tombstone: end it here too), or lost
      // with a Redis restart, or expired while only a stream used it (register it again, within the caps).
      const again = local.principal === principal ? await directory.create({ id, principal: principal ?? '', state: JSON.stringify(local.state) }).catch(() => undefined) : undefined;
      if (again?.ok === true) return local;
      sessions.delete(id);
      await local.server.close().catch(() => undefined);
      return undefined;
    }
    if (record.principal !== (principal ?? '')) {
      limitMetrics?.refused('mcp', 'session_principal');
      return undefined;
    }
    if (local !== undefined) {
      const { logLevel } = JSON.parse(record.state) as SessionState;
      if (logLevel !== undefined && logLevel !== local.state.logLevel) {
        local.state.logLevel = logLevel;
        await replay(local, { id: `toolhost-sync-${randomUUID()}`, method: 'logging/setLevel', params: { level: logLevel } }, true);
      }
      return local;
    }
    if (closing) return undefined;
    let restored = restoring.get(id);
    if (restored === undefined) {
      restored = restore(id, client, principal, record.state).finally(() => restoring.delete(id));
      restoring.set(id, restored);
    }
    return restored;
  };

  return {
    get size() {
      return sessions.size;
    },

    async handle(req, res, method, body, principal) {
      const client = req.socket.remoteAddress ?? 'unknown';
      const sessionId = header(req, 'mcp-session-id');
      if (sessionId !== undefined) {
        const session = await find(sessionId, client, principal);
        // Another principal's session is not this client's to use, nor to learn about.
        if (session === undefined) return rpcError(res, 404, -32001, NOT_FOUND);
        if ('ok' in session) return refuse(res, session.reason, session.message, session.reason === 'sessions_full' ? 503 : 429);
        // Ended in the fleet before the client hears it is: its next request, on any host, gets 404.
        if (method === 'DELETE' && session.shared) await directory?.delete(sessionId).catch(() => undefined);
        const lastEventId = method === 'GET' ? header(req, 'last-event-id') : undefined;
        const { events } = session;
        const done = sessions.use(sessionId);
        // The session's event stream (GET) ends when the token that opened it expires: the client reconnects with a fresh one.
        const expiry = method === 'GET' ? atExpiry(req, () => {
          limitMetrics?.refused('mcp', 'token_expired');
          session.transport.closeStandaloneSSEStream();
        }) : undefined;
        try {
          // A resume: refused when not held, answered from the store when its stream is over (mcp-stream-resume.ts).
          if (lastEventId !== undefined && events !== undefined) {
            await answerResume({ events, sessionId, lastEventId, res, limitMetrics, delegate: (check) => serve(session, req, res, body, check) });
          } else {
            await serve(session, req, res, body);
          }
        } finally {
          clearTimeout(expiry);
          done();
        }
        return;
      }
      if (method !== 'POST' || !isInitializeRequest(body)) {
        return rpcError(res, 400, -32000, 'Bad Request: no valid session id (send initialize first)');
      }
      if (closing) return rpcError(res, 503, -32000, 'the server is closing', { code: 'OVERLOADED', reason: 'closing' });
      const room = sessions.reserve(client);
      if (!room.ok) return refuse(res, room.reason, room.message, room.reason === 'sessions_full' ? 503 : 429);
      const id = randomUUID();
      const state: SessionState = { init: body.params };
      let shared = false;
      try {
        if (directory !== undefined) {
          try {
            const admitted = await directory.create({ id, principal: principal ?? '', state: JSON.stringify(state) });
            if (!admitted.ok) return refuse(res, admitted.reason, admitted.message, admitted.reason === 'fleet_sessions_full' ? 503 : 429);
            shared = true;
          } catch (error) {
            logger.warn({ err: (error as Error).message }, 'mcp http: session directory unreachable; the new session is this host\'s alone');
          }
        }
        const session = openSession(id, client, principal, state, shared);
        pending.add(session);
        try {
          await connect(session);
          await serve(session, req, res, body);
        } finally {
          pending.delete(session);
          // An initialize that did not create a session leaves nothing behind.
          if (sessions.get(id) !== session) {
            await session.server.close().catch(() => undefined);
            if (shared) await directory?.delete(id).catch(() => undefined);
          }
        }
      } finally {
        sessions.release();
      }
    },

    async drain(ms) {
      closing = true;
      await Promise.all([...sessions.values(), ...pending].map((session) => drainMcpServer(session.server, ms)));
    },

    async close() {
      closing = true;
      clearInterval(sweeper);
      stopRelay?.();
      const all = [...sessions.clear(), ...pending];
      // Closing a session's server closes its transport, which aborts its requests: their calls end CANCELLED.
      await Promise.allSettled(all.map((session) => session.server.close()));
    },
  };
}
