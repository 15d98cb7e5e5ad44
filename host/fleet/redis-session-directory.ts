/**
 * Client sessions in Redis (core/session-directory.ts), so that any host of a
 * fleet serves any session and no load balancer needs sticky routing.
 *
 * Keys (under the fleet's prefix): `mcp:session:<id>` holds `{ p, s }` (the
 * principal and the state) with a TTL renewed on every use; the sorted sets
 * `mcp:sessions` (every session) and `mcp:sessions:p:<principal>` (one
 * principal's) score each id by its expiry, so the caps count live sessions
 * only. Creating checks both caps and writes in one Lua script, with Redis's
 * clock (hosts' clocks may differ). Relayed messages go on one channel,
 * `mcp:relay`.
 */
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { SessionAdmission, SessionDirectory, SharedSession } from '../core/session-directory.js';
import type { RedisLink } from './redis-link.js';

export interface SessionDirectoryLimits {
  /** Sessions in the fleet at once (default 100000). */
  maxSessions?: number;
  /** Sessions one principal holds in the fleet at once (default 1000). */
  maxPerPrincipal?: number;
  /** How long an unused session lives, in ms (default 600000; the MCP server's idle time). */
  ttlMs?: number;
  /** Largest session state, in bytes (default 65536). */
  maxStateBytes?: number;
}

export const DEFAULT_SESSION_DIRECTORY_LIMITS = { maxSessions: 100_000, maxPerPrincipal: 1_000, ttlMs: 600_000, maxStateBytes: 65_536 } as const;

/** Redis's clock in ms. */
const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

const CREATE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[3]) then return 'principal' end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 'fleet' end
if not redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[1], 'NX') then return 'exists' end
local expiry = now + tonumber(ARGV[1])
redis.call('ZADD', KEYS[2], expiry, ARGV[5])
redis.call('ZADD', KEYS[3], expiry, ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return 'ok'`;

/** KEYS: session, all; ARGV: ttl, id, principal-set prefix. Returns the value, its TTL renewed (and its scores). */
const TOUCH = `${NOW}
local value = redis.call('GET', KEYS[1])
if not value then return false end
local principal = cjson.decode(value)['p']
if principal == nil then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local expiry = now + tonumber(ARGV[1])
redis.call('ZADD', KEYS[2], 'XX', expiry, ARGV[2])
local set = ARGV[3] .. principal
redis.call('ZADD', set, 'XX', expiry, ARGV[2])
redis.call('PEXPIRE', set, ARGV[1])
return value`;

/**
 * KEYS: session, all; ARGV: id, principal-set prefix, ttl. Leaves a tombstone for the TTL: a host
 * still holding the session must not create it again (it does when the record is merely gone, as
 * after a Redis restart).
 */
const DELETE = `local value = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], '{"ended":true}', 'PX', ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[1])
if value then
  local principal = cjson.decode(value)['p']
  if principal ~= nil then redis.call('ZREM', ARGV[2] .. principal, ARGV[1]) end
end
return 1`;

/** KEYS: session; ARGV: the new value. Keeps the TTL. */
const UPDATE = `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1`;

export class RedisSessionDirectory implements SessionDirectory {
  readonly ttlMs: number;
  readonly #link: RedisLink;
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #maxSessions: number;
  readonly #maxPerPrincipal: number;
  readonly #maxStateBytes: number;
  readonly #listeners = new Set<(sessionId: string, message: string) => void>();
  #subscribed: Promise<void> | undefined;

  constructor(link: RedisLink, logger: Logger, options: SessionDirectoryLimits & { prefix: string }) {
    const positive = (value: number | undefined, name: string, fallback: number): number => {
      if (value === undefined) return fallback;
      if (!Number.isInteger(value) || value < 1) throw new TypeError(`options.${name} must be a positive integer`);
      return value;
    };
    this.#link = link;
    this.#logger = logger;
    this.#prefix = options.prefix;
    this.#maxSessions = positive(options.maxSessions, 'maxSessions', DEFAULT_SESSION_DIRECTORY_LIMITS.maxSessions);
    this.#maxPerPrincipal = positive(options.maxPerPrincipal, 'maxPerPrincipal', DEFAULT_SESSION_DIRECTORY_LIMITS.maxPerPrincipal);
    this.ttlMs = positive(options.ttlMs, 'ttlMs', DEFAULT_SESSION_DIRECTORY_LIMITS.ttlMs);
    this.#maxStateBytes = positive(options.maxStateBytes, 'maxStateBytes', DEFAULT_SESSION_DIRECTORY_LIMITS.maxStateBytes);
  }

  async create(session: SharedSession): Promise<SessionAdmission> {
    const value = JSON.stringify({ p: session.principal, s: session.state });
    if (Buffer.byteLength(session.state) > this.#maxStateBytes) {
      throw new ToolhostError('INVALID_INPUT', `a session's state is larger than ${this.#maxStateBytes} bytes`);
    }
    const answer = await this.#link.script<string>(CREATE, [this.#key(session.id), this.#allKey(), this.#principalKey(session.principal)], [this.ttlMs, this.#maxSessions, this.#maxPerPrincipal, value, session.id]);
    if (answer === 'ok') return { ok: true };
    if (answer === 'principal') return { ok: false, reason: 'principal_sessions_full', message: `this principal holds ${this.#maxPerPrincipal} sessions in the fleet (at most ${this.#maxPerPrincipal}); end one or let one expire` };
    if (answer === 'fleet') return { ok: false, reason: 'fleet_sessions_full', message: `${this.#maxSessions} sessions are open in the fleet; try again later` };
    return { ok: false, reason: 'session_exists', message: `session ${session.id} exists, or ended` };
  }

  async get(id: string): Promise<SharedSession | undefined> {
    const value = await this.#link.script<string | null>(TOUCH, [this.#key(id), this.#allKey()], [this.ttlMs, id, this.#principalKey('')]);
    if (typeof value !== 'string') return undefined;
    const parsed = JSON.parse(value) as { p?: unknown; s?: unknown };
    if (typeof parsed.p !== 'string' || typeof parsed.s !== 'string') return undefined;
    return { id, principal: parsed.p, state: parsed.s };
  }

  async update(id: string, state: string): Promise<void> {
    const current = await this.get(id);
    if (current === undefined || Buffer.byteLength(state) > this.#maxStateBytes) return;
    await this.#link.script(UPDATE, [this.#key(id)], [JSON.stringify({ p: current.principal, s: state })]);
  }

  async delete(id: string): Promise<void> {
    await this.#link.script(DELETE, [this.#key(id), this.#allKey()], [id, this.#principalKey(''), this.ttlMs]);
  }

  async relay(sessionId: string, message: string): Promise<void> {
    await this.#link.publish(this.#channel(), JSON.stringify({ s: sessionId, m: message }));
  }

  onRelay(listener: (sessionId: string, message: string) => void): () => void {
    this.#listeners.add(listener);
    this.#subscribed ??= this.#link.subscribe(this.#channel(), (text) => this.#deliver(text)).catch((error: unknown) => {
      this.#subscribed = undefined;
      this.#logger.warn({ err: (error as Error).message }, 'fleet: could not subscribe to relayed MCP session messages');
    });
    return () => this.#listeners.delete(listener);
  }

  /** Resolves once relayed messages are being received (tests). */
  async listening(): Promise<void> {
    await this.#subscribed;
  }

  #deliver(text: string): void {
    let parsed: { s?: unknown; m?: unknown };
    try {
      parsed = JSON.parse(text) as { s?: unknown; m?: unknown };
    } catch {
      return;
    }
    if (typeof parsed.s !== 'string' || typeof parsed.m !== 'string') return;
    for (const listener of this.#listeners) listener(parsed.s, parsed.m);
  }

  #key(id: string): string {
    return `${this.#prefix}mcp:session:${id}`;
  }

  #allKey(): string {
    return `${this.#prefix}mcp:sessions`;
  }

  #principalKey(principal: string): string {
    return `${this.#prefix}mcp:sessions:p:${principal}`;
  }

  #channel(): string {
    return `${this.#prefix}mcp:relay`;
  }
}
