/**
 * A fleet's copy of 2025-era MCP sessions' stream events (servers/mcp-event-store.ts keeps each
 * session's own; this one lets a session restored on another host replay, after `Last-Event-ID`,
 * what was sent before the client moved). Key (under the fleet's prefix):
 * `{mcp:events:<session>}` (a hash tag: one slot, for a Redis Cluster too), a list of
 * `<event id>\n<message JSON>`, trimmed in one Lua script to `maxEvents` entries and `maxBytes`
 * bytes (the oldest go first), living `ttlMs` after its last write.
 *
 * Best effort: a write that fails (Redis away) loses only the shared copy; a read that fails
 * answers as if the event were not held (the resume is refused, 410).
 */
import type { SharedEventLog } from '../core/session-directory.js';
import type { RedisLink } from './link.js';

export interface EventLogLimits {
  /** Events kept per session (default 1000). */
  maxEvents?: number;
  /** Bytes kept per session (default 262144). */
  maxBytes?: number;
  /** How long a session's events live after the last one (ms, default 600000). */
  ttlMs?: number;
}

/** KEYS: list, bytes; ARGV: entry, max events, max bytes, ttl. */
const APPEND = `local size = string.len(ARGV[1])
redis.call('RPUSH', KEYS[1], ARGV[1])
local bytes = redis.call('INCRBY', KEYS[2], size)
local count = redis.call('LLEN', KEYS[1])
while count > tonumber(ARGV[2]) or bytes > tonumber(ARGV[3]) do
  local old = redis.call('LPOP', KEYS[1])
  if not old then break end
  bytes = redis.call('INCRBY', KEYS[2], -string.len(old))
  count = count - 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return count`;

export class RedisEventLog implements SharedEventLog {
  readonly #link: RedisLink;
  readonly #prefix: string;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;

  constructor(link: RedisLink, options: { prefix: string } & EventLogLimits) {
    this.#link = link;
    this.#prefix = options.prefix;
    this.#maxEvents = options.maxEvents ?? 1000;
    this.#maxBytes = options.maxBytes ?? 262_144;
    this.#ttlMs = options.ttlMs ?? 600_000;
  }

  async append(sessionId: string, eventId: string, text: string): Promise<void> {
    if (this.#maxEvents === 0) return;
    await this.#link.script(APPEND, this.#keys(sessionId), [`${eventId}\n${text}`, this.#maxEvents, this.#maxBytes, this.#ttlMs]);
  }

  async from(sessionId: string, streamId: string, eventId: string): Promise<Array<{ id: string; text: string }> | undefined> {
    const entries = await this.#link.command<string[]>(['LRANGE', this.#keys(sessionId)[0]!, '0', '-1']);
    const parsed = entries.map((entry) => {
      const cut = entry.indexOf('\n');
      return { id: entry.slice(0, cut), text: entry.slice(cut + 1) };
    });
    const index = parsed.findIndex((entry) => entry.id === eventId);
    if (index < 0) return undefined;
    return parsed.slice(index).filter((entry) => entry.id.startsWith(`${streamId}_`));
  }

  #keys(sessionId: string): [string, string] {
    const tag = `{mcp:events:${sessionId}}`;
    return [`${this.#prefix}${tag}`, `${this.#prefix}${tag}:bytes`];
  }
}
