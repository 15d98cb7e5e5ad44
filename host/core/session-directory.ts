/**
 * Client sessions known beyond this host. A server that holds sessions (MCP
 * Streamable HTTP, 2025 era) keeps them in its own memory by default, so a load
 * balancer must pin each session to its host. With a directory (Redis, in
 * `host/fleet/`), a session is created where every host can see it: any host
 * can serve it, the fleet's session caps hold across hosts, and messages that
 * belong to the host holding a request (a client's answer, a cancel) are
 * relayed to it.
 *
 * Guarantees an implementation must keep: a session is bound to the principal
 * that created it (the caller compares, the directory stores it unchanged);
 * `create` is atomic with its caps (two hosts never both admit the last
 * place); a session unused for its TTL is gone.
 */
import type { TraceCarrier } from './tracing.js';

/** A session as the directory keeps it. */
export interface SharedSession {
  id: string;
  /** Who created it ('' for a server without authentication). */
  principal: string;
  /** What a host needs to serve it (opaque to the directory: JSON text, small). */
  state: string;
}

export type SessionAdmission = { ok: true } | { ok: false; reason: 'fleet_sessions_full' | 'principal_sessions_full' | 'session_exists'; message: string };

export interface SessionDirectory {
  /** How long an unused session lives, in ms. */
  readonly ttlMs: number;
  /**
   * Register a session within the caps (sessions in the fleet, per principal): a new one, or one a
   * host still holds whose record is gone (Redis restarted empty). `session_exists` when the id is
   * taken or its session was ended (a tombstone stays for the TTL). Rejects with FLEET_UNAVAILABLE.
   */
  create(session: SharedSession): Promise<SessionAdmission>;
  /** The session (its TTL renewed), or undefined when it ended or expired. Rejects with FLEET_UNAVAILABLE. */
  get(id: string): Promise<SharedSession | undefined>;
  /** Replace a session's state (best effort: resolves when it does not exist). */
  update(id: string, state: string): Promise<void>;
  /** End a session (its client said so); it cannot be created again for the TTL. */
  delete(id: string): Promise<void>;
  /** Send `message` to every host (the one holding what it answers takes it), with the relay's trace context when traced. */
  relay(sessionId: string, message: string, trace?: TraceCarrier): Promise<void>;
  /** Be told of relayed messages (this host's own included), with their trace context (capped: `carrierOf`). Returns a function that stops it. */
  onRelay(listener: (sessionId: string, message: string, trace: TraceCarrier | undefined) => void): () => void;
}

/**
 * A fleet's copy of sessions' stream events (2025-era resumability): a session restored on another
 * host replays, after `Last-Event-ID`, what was sent before the client moved. Best effort.
 */
export interface SharedEventLog {
  append(sessionId: string, eventId: string, text: string): Promise<void>;
  /**
   * The events of `streamId` from `eventId` on (that event first, then the later ones), oldest first; undefined
   * when `eventId` is not held. The event itself tells whether the stream had ended there (its final response).
   */
  from(sessionId: string, streamId: string, eventId: string): Promise<Array<{ id: string; text: string }> | undefined>;
}
