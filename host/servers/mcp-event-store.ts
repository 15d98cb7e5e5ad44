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
 *   refused before the SDK replays anything (`plan()` finds nothing):
 *   mcp-stream-resume.ts answers 410 with `data.code` OUTPUT_LIMIT_EXCEEDED, reason
 *   `resume_window`.
 * - With a shared store (a fleet: fleet/redis-event-log.ts behind
 *   `SharedEventLog`), events are also written there, so a session restored
 *   on another host replays what was sent before it moved.
 * - It knows when a stream is over (`plan`): a request stream ends with its
 *   response (kept as an event like the others; a response larger than
 *   `maxBytes` is kept as a small error saying so, so the stream's end is
 *   never lost), or with `end()` (the request was cancelled: no response will
 *   come), which keeps an end mark. mcp-stream-resume.ts answers a resume of
 *   an ended stream itself and ends it, instead of holding it open.
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
  /** The stream's last event: its request's response, or the end mark of a cancelled one. */
  final: boolean;
}

/** The SDK 1.x transport's id for a session's standalone (GET) stream. */
export const STANDALONE_STREAM_ID = '_GET_stream';

/** The event kept when a request stream ends without a response (its request was cancelled); never replayed. */
const END_MARK = '{"toolhost/streamEnded":true}';
/** A priming event's message (the SDK stores `{}`: empty data); never replayed. */
const PRIMING = '{}';

/** What a resume from one event id finds (`SessionEventStore.plan`). */
export interface ResumePlan {
  streamId: string;
  /** The messages after the event resumed from, oldest first (priming events and end marks left out). */
  events: Array<{ id: string; message: JSONRPCMessage }>;
  /** The stream is over: its request was answered (the response is the event resumed from or among `events`) or cancelled. */
  ended: boolean;
  /** Held by this host's store (else read from the fleet's shared copy: the stream's request is not running here). */
  local: boolean;
}

/** Split `<stream id>_<sequence>`; undefined for anything else. */
export function parseEventId(eventId: string): { streamId: string; seq: number } | undefined {
  const match = /^([A-Za-z0-9-]{1,64}|_GET_stream)_(\d{1,15})$/.exec(eventId);
  if (match === null) return undefined;
  return { streamId: match[1]!, seq: Number(match[2]) };
}

/** A JSON-RPC response (result or error): the last message of its request's stream. */
function isResponse(message: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false;
  return 'id' in message && ('result' in message || 'error' in message) && !('method' in message);
}

/** Whether a kept event's text ends its stream (a response, or the end mark). */
function isFinalText(text: string): boolean {
  if (text === END_MARK) return true;
  if (text === PRIMING) return false;
  try {
    return isResponse(JSON.parse(text));
  } catch {
    return false;
  }
}

/** A response too large to keep, replaced by one that says so (the stream's end is kept, its content is not). */
function standIn(message: JSONRPCMessage): string {
  const id = (message as { id: string | number }).id;
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    error: {
      code: -32000,
      message: 'The response was larger than servers.mcp.http.resume_bytes and is not held for replay: send the request again',
      data: { code: 'OUTPUT_LIMIT_EXCEEDED', reason: 'resume_window' },
    },
  });
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
    const final = isResponse(message);
    let text = JSON.stringify(message);
    if (final && Buffer.byteLength(text) > this.#limits.maxBytes) {
      // Its stream's end is kept, so a resume ends the stream rather than waiting for a response already sent.
      this.#onDropped(1);
      text = standIn(message);
    }
    return this.#keep(streamId, text, final);
  }

  /**
   * The request of `streamId` was cancelled: no response will come on it. Keeps an end mark (when the stream
   * has events held and has not ended), so a resume from it ends instead of waiting.
   */
  end(streamId: string): void {
    let held = false;
    for (let i = this.#events.length - 1; i >= this.#head; i -= 1) {
      const event = this.#events[i]!;
      if (event.streamId !== streamId) continue;
      if (event.final) return;
      held = true;
      break;
    }
    if (held) this.#keep(streamId, END_MARK, true);
  }

  #keep(streamId: string, text: string, final: boolean): string {
    this.#seq += 1;
    const id = `${streamId}_${this.#seq}`;
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#limits.maxBytes || this.#limits.maxEvents === 0) {
      this.#onDropped(1);
      return id;
    }
    this.#events.push({ id, streamId, seq: this.#seq, text, bytes, final });
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

  /**
   * What a resume from `lastEventId` would get: the stream's later messages, and whether the stream is over.
   * Undefined when the event is not held (here or in the shared copy): the resume is refused. Linear in the
   * events held (here: at most `maxEvents`; the shared copy: the same bound).
   */
  async plan(lastEventId: string): Promise<ResumePlan | undefined> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) return undefined;
    const { streamId } = parsed;
    const index = this.#indexOf(lastEventId);
    if (index >= 0) {
      const events: ResumePlan['events'] = [];
      let ended = false;
      for (let i = this.#head; i < this.#events.length; i += 1) {
        const event = this.#events[i]!;
        if (event.streamId !== streamId) continue;
        if (event.final) ended = true;
        if (i > index && event.text !== PRIMING && event.text !== END_MARK) events.push({ id: event.id, message: JSON.parse(event.text) as JSONRPCMessage });
      }
      return { streamId, events, ended, local: true };
    }
    if (this.#shared === undefined) return undefined;
    const shared = await this.#shared.log.from(this.#shared.sessionId, streamId, lastEventId).catch(() => undefined);
    if (shared === undefined) return undefined;
    this.#follow(shared);
    const events: ResumePlan['events'] = [];
    for (const event of shared.slice(1)) {
      if (event.text !== PRIMING && event.text !== END_MARK) events.push({ id: event.id, message: JSON.parse(event.text) as JSONRPCMessage });
    }
    return { streamId, events, ended: shared.some((event) => isFinalText(event.text)), local: false };
  }

  /** Continue this host's numbering after the shared log's, so ids stay unique in the session. */
  #follow(events: ReadonlyArray<{ id: string }>): void {
    for (const event of events) this.#seq = Math.max(this.#seq, parseEventId(event.id)?.seq ?? 0);
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) throw new Error('not an event id of this session');
    const index = this.#indexOf(lastEventId);
    let events: Array<{ id: string; text: string }>;
    if (index >= 0) {
      events = this.#events.slice(index + 1).filter((event) => event.streamId === parsed.streamId);
    } else {
      const shared = this.#shared === undefined ? undefined : await this.#shared.log.from(this.#shared.sessionId, parsed.streamId, lastEventId);
      if (shared === undefined) throw new Error('the event is no longer held');
      events = shared.slice(1);
      this.#follow(shared);
    }
    for (const event of events) {
      // A priming event (empty data) and an end mark are not replayed: they carry no message.
      if (event.text === PRIMING || event.text === END_MARK) continue;
      await send(event.id, JSON.parse(event.text) as JSONRPCMessage);
    }
    return parsed.streamId;
  }

  #indexOf(eventId: string): number {
    for (let i = this.#events.length - 1; i >= this.#head; i -= 1) if (this.#events[i]!.id === eventId) return i;
    return -1;
  }
}
