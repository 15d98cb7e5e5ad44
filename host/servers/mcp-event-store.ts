/**
 * Resumable streams for 2025-era MCP sessions (Streamable HTTP, SSE event
 * ids and `Last-Event-ID`): the SDK 1.x transport's `EventStore`, one per
 * session, bounded. Every message the session's server sends on a stream
 * (a call's progress, log lines, its response; the standalone GET stream's
 * notifications) is kept with an id, so a client whose stream dropped
 * mid-call reconnects (GET with `Last-Event-ID`) and receives the events it
 * missed, then the rest of the call on the new stream.
 *
 * Guarantees:
 * - Bounded per session: at most `maxEvents` events and `maxBytes` bytes of
 *   message JSON (`servers.mcp.http.resume_events`, `resume_bytes`); past
 *   either, the oldest are dropped (counted by `onDropped`). A message larger
 *   than `maxBytes` by itself is sent but not kept.
 * - An event id is `<stream id>_<sequence>`, both minted here (the stream id
 *   by the SDK, random); a replay reads only its session's store and only
 *   that stream, so a client can never replay another session's or stream's
 *   events. A resume from an event no longer held (dropped, or never ours) is
 *   refused before the SDK replays anything (`resumable()` is false):
 *   mcp-legacy.ts answers 410 with `data.code` OUTPUT_LIMIT_EXCEEDED, reason
 *   `resume_window`.
 * - With a shared store (a fleet: fleet/redis-event-log.ts behind
 *   `SharedEventLog`), events are also written there, so a session restored
 *   on another host replays what was sent before it moved.
 *
 * Does not: keep events past the session's life, or replay across hosts the
 * events a call sends after the client moved (those reach the host running
 * the call only).
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { SharedEventLog } from '../core/session-directory.js';

export interface EventStoreLimits {
  /** Events kept (default 1000; 0: none, no resumption). */
  maxEvents: number;
  /** Bytes of message JSON kept (default 262144). */
  maxBytes: number;
}

export const DEFAULT_EVENT_STORE_LIMITS: EventStoreLimits = { maxEvents: 1000, maxBytes: 262_144 };

export type { SharedEventLog } from '../core/session-directory.js';

interface Kept {
  id: string;
  streamId: string;
  seq: number;
  text: string;
  bytes: number;
}

/** Split `<stream id>_<sequence>`; undefined for anything else. */
export function parseEventId(eventId: string): { streamId: string; seq: number } | undefined {
  const match = /^([A-Za-z0-9-]{1,64})_(\d{1,15})$/.exec(eventId);
  if (match === null) return undefined;
  return { streamId: match[1]!, seq: Number(match[2]) };
}

/** One session's events (see the header). */
export class SessionEventStore implements EventStore {
  readonly #limits: EventStoreLimits;
  readonly #onDropped: (count: number) => void;
  readonly #shared: { log: SharedEventLog; sessionId: string } | undefined;
  #events: Kept[] = [];
  #head = 0;
  #bytes = 0;
  #seq = 0;

  constructor(limits: EventStoreLimits, onDropped: (count: number) => void = () => undefined, shared?: { log: SharedEventLog; sessionId: string }) {
    if (!Number.isInteger(limits.maxEvents) || limits.maxEvents < 0) throw new TypeError('limits.maxEvents must be a non-negative integer');
    if (!Number.isInteger(limits.maxBytes) || limits.maxBytes < 1) throw new TypeError('limits.maxBytes must be a positive integer');
    this.#limits = limits;
    this.#onDropped = onDropped;
    this.#shared = shared;
  }

  /** Events held now. */
  get size(): number {
    return this.#events.length - this.#head;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    this.#seq += 1;
    const id = `${streamId}_${this.#seq}`;
    const text = JSON.stringify(message);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#limits.maxBytes || this.#limits.maxEvents === 0) {
      this.#onDropped(1);
      return id;
    }
    this.#events.push({ id, streamId, seq: this.#seq, text, bytes });
    this.#bytes += bytes;
    let dropped = 0;
    while (this.size > this.#limits.maxEvents || this.#bytes > this.#limits.maxBytes) {
      this.#bytes -= this.#events[this.#head]!.bytes;
      this.#head += 1;
      dropped += 1;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#events.length) {
      this.#events = this.#events.slice(this.#head);
      this.#head = 0;
    }
    if (dropped > 0) this.#onDropped(dropped);
    // Not awaited (a slow or absent Redis must not hold the stream); one connection keeps the order.
    if (this.#shared !== undefined) this.#shared.log.append(this.#shared.sessionId, id, text).catch(() => undefined);
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return parseEventId(eventId)?.streamId;
  }

  /** Whether a resume from `eventId` can be served (held here, or in the shared log). */
  async resumable(eventId: string): Promise<boolean> {
    const parsed = parseEventId(eventId);
    if (parsed === undefined) return false;
    if (this.#indexOf(eventId) >= 0) return true;
    if (this.#shared === undefined) return false;
    return (await this.#shared.log.after(this.#shared.sessionId, parsed.streamId, eventId).catch(() => undefined)) !== undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) throw new Error('not an event id of this session');
    const index = this.#indexOf(lastEventId);
    let events: Array<{ id: string; text: string }>;
    if (index >= 0) {
      events = this.#events.slice(index + 1).filter((event) => event.streamId === parsed.streamId);
    } else {
      const shared = this.#shared === undefined ? undefined : await this.#shared.log.after(this.#shared.sessionId, parsed.streamId, lastEventId);
      if (shared === undefined) throw new Error('the event is no longer held');
      events = shared;
      // Continue this host's numbering after the shared log's, so ids stay unique in the session.
      for (const event of shared) this.#seq = Math.max(this.#seq, parseEventId(event.id)?.seq ?? 0);
    }
    for (const event of events) {
      // A priming event (empty data) is not replayed: it carries no message.
      if (event.text === '{}') continue;
      await send(event.id, JSON.parse(event.text) as JSONRPCMessage);
    }
    return parsed.streamId;
  }

  #indexOf(eventId: string): number {
    for (let i = this.#events.length - 1; i >= this.#head; i -= 1) if (this.#events[i]!.id === eventId) return i;
    return -1;
  }
}
