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
 *
 * Every script gets its keys in KEYS. Renewing or ending a session first
 * touches its own key (a script that answers its value, so its principal),
 * then the two sets, as independent commands. On a Redis Cluster (issue 40)
 * the session, the fleet's set and the principal's set are three slots, so
 * creating is three single-slot steps (`SET NX` the session, then a place in
 * the principal's set, then in the fleet's, each a check-and-add on its one
 * key: a cap is never exceeded), giving back what was taken when a later step
 * refuses; a spurious refusal under contention for the last place is possible,
 * one session too many is not. The relay channel is sharded pub/sub there.
 */
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { SessionAdmission, SessionDirectory, SharedSession } from '../core/session-directory.js';
import { carrierOf, type TraceCarrier } from '../core/tracing.js';
import type { RedisLink } from './link.js';

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

/** A place in one of the session sets. KEYS: the set; ARGV: ttl, id, cap, '1' to expire the set with its last session. 1: taken; 0: full. */
const TAKE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if ARGV[4] == '1' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`;

/** KEYS: session; ARGV: ttl. The value, its TTL renewed, and Redis's clock (ms); false when it ended or expired. */
const TOUCH = `${NOW}
local value = redis.call('GET', KEYS[1])
if not value then return false end
if cjson.decode(value)['p'] == nil then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {value, tostring(now)}`;

/**
 * KEYS: session; ARGV: ttl. Leaves a tombstone for the TTL (a host still holding the session must
 * not create it again, as it does when the record is merely gone after a Redis restart); answers the
 * value it replaced (its principal names the set to leave).
 */
const DELETE = `local value = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], '{"ended":true}', 'PX', ARGV[1])
return value`;

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
  readonly #listeners = new Set<(sessionId: string, message: string, trace: TraceCarrier | undefined) => void>();
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
    const keys = [this.#key(session.id), this.#allKey(), this.#principalKey(session.principal)] as const;
    const answer = this.#link.mode === 'cluster'
      ? await this.#createInSteps(session.id, value, ...keys)
      : await this.#link.script<string>(CREATE, [...keys], [this.ttlMs, this.#maxSessions, this.#maxPerPrincipal, value, session.id]);
    if (answer === 'ok') return { ok: true };
    if (answer === 'principal') return { ok: false, reason: 'principal_sessions_full', message: `this principal holds ${this.#maxPerPrincipal} sessions in the fleet (at most ${this.#maxPerPrincipal}); end one or let one expire` };
    if (answer === 'fleet') return { ok: false, reason: 'fleet_sessions_full', message: `${this.#maxSessions} sessions are open in the fleet; try again later` };
    return { ok: false, reason: 'session_exists', message: `session ${session.id} exists, or ended` };
  }

  /** CREATE's answer in single-slot steps (a cluster): see the file's comment. */
  async #createInSteps(id: string, value: string, key: string, all: string, mine: string): Promise<string> {
    if ((await this.#link.command(['SET', key, value, 'PX', String(this.ttlMs), 'NX'])) === null) return 'exists';
    const giveBack = (commands: string[][]): void => {
      this.#link.batch(commands).catch((error: unknown) => this.#logger.debug({ err: (error as Error).message }, 'fleet: could not give back a refused session\'s places (they lapse with its TTL)'));
    };
    try {
      if (Number(await this.#link.script(TAKE, [mine], [this.ttlMs, id, this.#maxPerPrincipal, '1'])) !== 1) {
        giveBack([['DEL', key]]);
        return 'principal';
      }
      if (Number(await this.#link.script(TAKE, [all], [this.ttlMs, id, this.#maxSessions, '0'])) !== 1) {
        giveBack([['ZREM', mine, id], ['DEL', key]]);
        return 'fleet';
      }
    } catch (error) {
      giveBack([['ZREM', mine, id], ['DEL', key]]);
      throw error;
    }
    return 'ok';
  }

  async get(id: string): Promise<SharedSession | undefined> {
    const touched = await this.#link.script<[string, string] | null>(TOUCH, [this.#key(id)], [this.ttlMs]);
    if (!Array.isArray(touched) || typeof touched[0] !== 'string') return undefined;
    const parsed = JSON.parse(touched[0]) as { p?: unknown; s?: unknown };
    if (typeof parsed.p !== 'string' || typeof parsed.s !== 'string') return undefined;
    // The sets' scores follow the session's expiry (by the clock of the session's Redis), so the caps count it while it lives.
    const expiry = String(Number(touched[1]) + this.ttlMs);
    const mine = this.#principalKey(parsed.p);
    this.#link.batch([['ZADD', this.#allKey(), 'XX', expiry, id], ['ZADD', mine, 'XX', expiry, id], ['PEXPIRE', mine, String(this.ttlMs)]]).catch((error: unknown) => {
      this.#logger.debug({ err: (error as Error).message }, 'fleet: could not renew a session\'s place in the caps');
    });
    return { id, principal: parsed.p, state: parsed.s };
  }

  async update(id: string, state: string): Promise<void> {
    const current = await this.get(id);
    if (current === undefined || Buffer.byteLength(state) > this.#maxStateBytes) return;
    await this.#link.script(UPDATE, [this.#key(id)], [JSON.stringify({ p: current.principal, s: state })]);
  }

  async delete(id: string): Promise<void> {
    const value = await this.#link.script<string | null>(DELETE, [this.#key(id)], [this.ttlMs]);
    const commands: string[][] = [['ZREM', this.#allKey(), id]];
    if (typeof value === 'string') {
      const principal = (JSON.parse(value) as { p?: unknown }).p;
      if (typeof principal === 'string') commands.push(['ZREM', this.#principalKey(principal), id]);
    }
    await this.#link.batch(commands);
  }

  async relay(sessionId: string, message: string, trace?: TraceCarrier): Promise<void> {
    await this.#link.publish(this.#channel(), JSON.stringify({ s: sessionId, m: message, ...(trace === undefined ? {} : { t: trace }) }));
  }

  onRelay(listener: (sessionId: string, message: string, trace: TraceCarrier | undefined) => void): () => void {
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
    let parsed: { s?: unknown; m?: unknown; t?: unknown };
    try {
      parsed = JSON.parse(text) as { s?: unknown; m?: unknown; t?: unknown };
    } catch {
      return;
    }
    if (typeof parsed.s !== 'string' || typeof parsed.m !== 'string') return;
    // The relaying host's trace context, capped as any other (W3C's sizes).
    const trace = typeof parsed.t === 'object' && parsed.t !== null ? carrierOf(parsed.t as Record<string, unknown>) : undefined;
    for (const listener of this.#listeners) listener(parsed.s, parsed.m, trace);
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
