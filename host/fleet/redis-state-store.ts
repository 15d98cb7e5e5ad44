/**
 * Conversation state in Redis, shared by every host of the fleet: one hash per
 * conversation (`<prefix>state:<conversation id>`, a field per key), so a
 * call can only ever address its own conversation's hash. Each write sets the
 * conversation's TTL again (a sliding expiry: a conversation nobody writes to
 * for `ttlSeconds` is forgotten). A value is at most `maxValueBytes`, a
 * conversation at most `maxKeys` keys (INVALID_INPUT past either).
 *
 * Bytes are capped too, per conversation (`maxBytesPerConversation`: keys plus
 * values) and over the whole fleet (`maxTotalBytes`: keys and values plus 64
 * bytes an entry and 256 bytes and the id a conversation, what Redis spends
 * beside them): a write past either is refused with the host's state-limit
 * error (OUTPUT_LIMIT_EXCEEDED, `state_bytes_per_conversation` or
 * `state_total_bytes`). Without them one hostile call added ~250 MiB to Redis.
 * The sizes live in Redis, updated by the same Lua scripts that write (so
 * hosts never race): `<prefix>state-sizes` (per conversation: `b:<id>` its
 * bytes, `c:<id>` its charge against the total), `<prefix>state-expiry` (a
 * sorted set of when each conversation's TTL runs out) and
 * `<prefix>state-total`. Each write first forgets up to 64 conversations whose
 * TTL ran out (Redis dropped their hashes), subtracting their charge; a write
 * the total would refuse first forgets up to 1024.
 * What it does not do: evict (a full fleet refuses writes until conversations
 * expire or are deleted; Redis's own `maxmemory` stays the last resort).
 *
 * Per principal (`maxBytesPerPrincipal`, off by default): the charges of each
 * principal's conversations (the principal read from the conversation's key,
 * as `principalOfScope` does; `(anonymous)` without one) are summed in
 * `<prefix>state-sizes` (`p:<principal>`), and a write that would take its
 * principal past the cap is refused (`state_total_bytes`, `principalShare`),
 * so one principal cannot fill the fleet's total and lock every other one out
 * of writing (issue 36, M7, on the fleet's side: refusals, not evictions).
 *
 * Redis down: `get` and `set` reject with FLEET_UNAVAILABLE; `ConversationState`
 * turns a failed get into the caller's fallback (logged) and reports a failed
 * set to the tool.
 *
 * On a Redis Cluster (issue 40) a script's keys must share a slot, so the
 * accounting is split into {@link CLUSTER_STATE_BUCKETS} buckets: a
 * conversation belongs to the bucket a hash of its key (without the component
 * namespace: every namespace of one conversation in one bucket) picks, and its
 * hashes and its bucket's `state-sizes`, `state-expiry` and `state-total` carry
 * the bucket's hash tag (`<prefix>{st<n>}state:<id>`, ...), so one script still
 * checks and writes them together. The total and per-principal caps hold per
 * bucket (each bucket a 1/16 share of them, rounded up): their sum is the cap,
 * and a principal whose conversations crowd into few buckets is refused
 * somewhat before its whole share. On one Redis there is one bucket and the
 * keys are the same as before.
 *
 * Acknowledged writes (`waitReplicas`): a `set` succeeds only once that many
 * replicas acknowledged it (WAIT, bounded by the command timeout); fewer is
 * FLEET_UNAVAILABLE (`details.reason: wait_replicas`: the value may or may not
 * have been kept). Default: 1 on a cluster seen with replicas, else 0.
 */
import { ToolhostError } from '../base/errors.js';
import { STATE_CONVERSATION_OVERHEAD_BYTES, STATE_ENTRY_OVERHEAD_BYTES, stateLimitError, type StateStore } from '../core/state.js';
import type { RedisLink } from './link.js';

export interface RedisStateOptions {
  /** Key prefix shared by the fleet (default `toolhost:`). */
  prefix?: string;
  /** Seconds a conversation lives after its last write (default one day). */
  ttlSeconds?: number;
  /** Largest value (bytes of JSON text; default 256 KiB). */
  maxValueBytes?: number;
  /** Most keys in one conversation (default 1000). */
  maxKeys?: number;
  /** Most bytes (keys plus values) in one conversation (default 16 MiB). */
  maxBytesPerConversation?: number;
  /** Most bytes the fleet's state holds in Redis in all (default 1 GiB; see the file's comment for what counts). */
  maxTotalBytes?: number;
  /** Most bytes one principal's conversations hold, counted as for the total (default: the total, i.e. no cap of its own). */
  maxBytesPerPrincipal?: number;
  /** Replicas that must acknowledge a write before `set` resolves (default: 1 on a cluster with replicas, else 0). */
  waitReplicas?: number;
}

/** Buckets of the state's accounting on a Redis Cluster (one slot each; see the file's comment). */
export const CLUSTER_STATE_BUCKETS = 16;

/** The conversation a state key belongs to, without its namespace (principal-scope.ts `stateScope`). */
function conversationOf(scope: string): string {
  const mark = '\u0000';
  const from = scope.startsWith(`${mark}principal:`) ? scope.indexOf(mark, scope.indexOf(mark, 1) + 1) : scope.indexOf(mark);
  return from < 0 ? scope : scope.slice(0, from);
}

/** FNV-1a of `text`'s UTF-16 units: the same bucket on every host. */
function bucketOf(text: string, buckets: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % buckets;
}

export const DEFAULT_STATE_TTL_SECONDS = 86_400;
export const DEFAULT_STATE_MAX_VALUE_BYTES = 256 * 1024;
export const DEFAULT_STATE_MAX_KEYS = 1000;
export const DEFAULT_STATE_MAX_BYTES_PER_CONVERSATION = 16 * 1024 * 1024;
export const DEFAULT_STATE_MAX_TOTAL_BYTES = 1024 * 1024 * 1024;

/**
 * Forget conversations whose TTL ran out (up to ARGV[n] of them), then drop the
 * stale sizes of this conversation if Redis already dropped its hash.
 * KEYS: hash, sizes, expiry, total. Leaves `now` (ms, Redis's clock) set.
 */
const SWEEP = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function owner(id)
  if string.sub(id, 1, 11) == '\\0principal:' then
    local e = string.find(id, '\\0', 12, true)
    if e then return 'p:' .. string.sub(id, 12, e - 1) end
  end
  return 'p:(anonymous)'
end
local function charged(p, delta)
  if redis.call('HINCRBY', KEYS[2], p, delta) <= 0 then redis.call('HDEL', KEYS[2], p) end
end
local function forget(id)
  local charge = tonumber(redis.call('HGET', KEYS[2], 'c:' .. id) or '0')
  redis.call('HDEL', KEYS[2], 'b:' .. id, 'c:' .. id)
  redis.call('ZREM', KEYS[3], id)
  if charge ~= 0 then
    redis.call('DECRBY', KEYS[4], charge)
    charged(owner(id), -charge)
  end
end
local function sweep(n)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, n)) do forget(id) end
end
`;

/**
 * Set one field unless the hash is full or a byte cap would be passed, then
 * refresh the hash's TTL and the sizes. ARGV: field, value, maxKeys, ttlMs,
 * maxBytes, maxTotal, conversation id, entry overhead, conversation overhead,
 * max bytes per principal.
 */
const SET_SCRIPT = `${SWEEP}
local id = ARGV[7]
sweep(64)
if redis.call('EXISTS', KEYS[1]) == 0 then forget(id) end
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return {'FULL'} end
local bytes = tonumber(redis.call('HGET', KEYS[2], 'b:' .. id) or '0')
local charge = tonumber(redis.call('HGET', KEYS[2], 'c:' .. id) or '0')
local delta = #ARGV[2] - (old and #old or -#ARGV[1])
local after = bytes + delta
if after > tonumber(ARGV[5]) then return {'CONVERSATION', after} end
local added = delta
if not old then added = added + tonumber(ARGV[8]) end
if charge == 0 then added = added + tonumber(ARGV[9]) + #id end
local total = tonumber(redis.call('GET', KEYS[4]) or '0')
if added > 0 and total + added > tonumber(ARGV[6]) then
  sweep(1024)
  total = tonumber(redis.call('GET', KEYS[4]) or '0')
  if total + added > tonumber(ARGV[6]) then return {'TOTAL', total + added} end
end
local p = owner(id)
local held = tonumber(redis.call('HGET', KEYS[2], p) or '0')
if added > 0 and held + added > tonumber(ARGV[10]) then
  sweep(1024)
  held = tonumber(redis.call('HGET', KEYS[2], p) or '0')
  if held + added > tonumber(ARGV[10]) then return {'PRINCIPAL', held + added} end
end
if added ~= 0 then charged(p, added) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('HSET', KEYS[2], 'b:' .. id, after, 'c:' .. id, charge + added)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), id)
redis.call('INCRBY', KEYS[4], added)
return {'OK'}
`;

/** Delete one field and give its bytes back. ARGV: field, conversation id, entry overhead. */
const DELETE_SCRIPT = `${SWEEP}
local id = ARGV[2]
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then forget(id) return 1 end
local freed = #old + #ARGV[1]
redis.call('HINCRBY', KEYS[2], 'b:' .. id, -freed)
redis.call('HINCRBY', KEYS[2], 'c:' .. id, -(freed + tonumber(ARGV[3])))
redis.call('DECRBY', KEYS[4], freed + tonumber(ARGV[3]))
charged(owner(id), -(freed + tonumber(ARGV[3])))
return 1
`;

export class RedisStateStore implements StateStore {
  readonly #link: RedisLink;
  readonly #prefix: string;
  readonly #ttlMs: number;
  readonly #maxValueBytes: number;
  readonly #maxKeys: number;
  readonly #maxBytes: number;
  readonly #maxTotal: number;
  readonly #maxPerPrincipal: number;
  readonly #buckets: number;
  readonly #waitReplicas: number | undefined;

  constructor(link: RedisLink, options: RedisStateOptions = {}) {
    this.#link = link;
    this.#prefix = options.prefix ?? 'toolhost:';
    const ttl = options.ttlSeconds ?? DEFAULT_STATE_TTL_SECONDS;
    const maxValue = options.maxValueBytes ?? DEFAULT_STATE_MAX_VALUE_BYTES;
    const maxKeys = options.maxKeys ?? DEFAULT_STATE_MAX_KEYS;
    if (!(Number.isInteger(ttl) && ttl > 0)) throw new TypeError('options.ttlSeconds must be a positive integer');
    if (!(Number.isInteger(maxValue) && maxValue > 0)) throw new TypeError('options.maxValueBytes must be a positive integer');
    if (!(Number.isInteger(maxKeys) && maxKeys > 0)) throw new TypeError('options.maxKeys must be a positive integer');
    const maxBytes = options.maxBytesPerConversation ?? DEFAULT_STATE_MAX_BYTES_PER_CONVERSATION;
    const maxTotal = options.maxTotalBytes ?? DEFAULT_STATE_MAX_TOTAL_BYTES;
    if (!(Number.isInteger(maxBytes) && maxBytes > 0)) throw new TypeError('options.maxBytesPerConversation must be a positive integer');
    if (!(Number.isInteger(maxTotal) && maxTotal > 0)) throw new TypeError('options.maxTotalBytes must be a positive integer');
    this.#ttlMs = ttl * 1000;
    this.#maxValueBytes = maxValue;
    this.#maxKeys = maxKeys;
    this.#maxBytes = maxBytes;
    this.#maxTotal = maxTotal;
    const perPrincipal = options.maxBytesPerPrincipal ?? maxTotal;
    if (!(Number.isInteger(perPrincipal) && perPrincipal > 0)) throw new TypeError('options.maxBytesPerPrincipal must be a positive integer');
    this.#maxPerPrincipal = perPrincipal;
    const wait = options.waitReplicas;
    if (wait !== undefined && !(Number.isInteger(wait) && wait >= 0)) throw new TypeError('options.waitReplicas must be a non-negative integer');
    this.#waitReplicas = wait;
    this.#buckets = link.mode === 'cluster' ? CLUSTER_STATE_BUCKETS : 1;
  }

  /** Replicas a write waits for: the option, else on a cluster 1 when it has replicas (or is not reached yet: never less safe), else 0. */
  get waitReplicas(): number {
    if (this.#waitReplicas !== undefined) return this.#waitReplicas;
    return this.#link.mode === 'cluster' && (this.#link.replicated || !this.#link.up) ? 1 : 0;
  }

  /** The prefix of a bucket's keys: the fleet's prefix and the bucket's hash tag (none on one Redis). */
  #bucketPrefix(bucket: number): string {
    return this.#buckets === 1 ? this.#prefix : `${this.#prefix}${this.#link.slotTag(`st${bucket}`)}`;
  }

  /** The keys a script reads and writes for `conversationId`: its hash, then its bucket's sizes, expiry and total (one slot). */
  #keys(conversationId: string): string[] {
    const at = this.#bucketPrefix(this.#bucket(conversationId));
    return [`${at}state:${conversationId}`, `${at}state-sizes`, `${at}state-expiry`, `${at}state-total`];
  }

  #bucket(conversationId: string): number {
    return this.#buckets === 1 ? 0 : bucketOf(conversationOf(conversationId), this.#buckets);
  }

  /** A cap as each bucket holds it (the whole cap on one Redis). */
  #share(cap: number): number {
    return Math.ceil(cap / this.#buckets);
  }

  /** Bytes the fleet's state holds, as counted against `maxTotalBytes` (conversations whose TTL ran out may still count until a write forgets them). */
  async totalBytes(): Promise<number> {
    const totals = await Promise.all(Array.from({ length: this.#buckets }, (_, bucket) => this.#link.command<string | null>(['GET', `${this.#bucketPrefix(bucket)}state-total`])));
    return totals.reduce((sum: number, total) => sum + Number(total ?? 0), 0);
  }

  #key(conversationId: string): string {
    return this.#keys(conversationId)[0]!;
  }

  async get(conversationId: string, key: string): Promise<string | undefined> {
    const value = await this.#link.command<string | null>(['HGET', this.#key(conversationId), key]);
    return value === null ? undefined : String(value);
  }

  async set(conversationId: string, key: string, value: string): Promise<void> {
    if (Buffer.byteLength(value) > this.#maxValueBytes) {
      throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is larger than the fleet's limit of ${this.#maxValueBytes} bytes`);
    }
    const maxTotal = this.#share(this.#maxTotal);
    const maxPerPrincipal = this.#share(this.#maxPerPrincipal);
    const args = [key, value, this.#maxKeys, this.#ttlMs, this.#maxBytes, maxTotal, conversationId, STATE_ENTRY_OVERHEAD_BYTES, STATE_CONVERSATION_OVERHEAD_BYTES, maxPerPrincipal];
    const replicas = this.waitReplicas;
    const { reply: [outcome, bytes], acknowledged } = await this.#link.acknowledgedScript<[string, number?]>(SET_SCRIPT, this.#keys(conversationId), args, replicas);
    if (String(outcome) === 'FULL') {
      throw new ToolhostError('INVALID_INPUT', `the conversation already holds ${this.#maxKeys} state keys (the fleet's limit)`);
    }
    if (String(outcome) === 'CONVERSATION') {
      throw stateLimitError('state_bytes_per_conversation', `the conversation's state would hold ${bytes} bytes, over the fleet's limit of ${this.#maxBytes}`, { bytes, max: this.#maxBytes, store: 'redis' });
    }
    if (String(outcome) === 'PRINCIPAL') {
      throw stateLimitError('state_total_bytes', `the principal's state in the fleet would hold ${bytes} bytes, over its cap of ${maxPerPrincipal}${this.#buckets === 1 ? '' : ` (its share in this conversation's bucket, 1/${this.#buckets} of ${this.#maxPerPrincipal})`}`, { bytes, max: maxPerPrincipal, principalShare: true, store: 'redis' });
    }
    if (String(outcome) === 'TOTAL') {
      throw stateLimitError('state_total_bytes', `the fleet's state would hold ${bytes} bytes, over its total of ${maxTotal}${this.#buckets === 1 ? '' : ` (this conversation's bucket's share, 1/${this.#buckets} of ${this.#maxTotal})`}`, { bytes, max: maxTotal, store: 'redis' });
    }
    if (acknowledged < replicas) {
      throw new ToolhostError('FLEET_UNAVAILABLE', `the state write of "${key}" was acknowledged by ${acknowledged} of the ${replicas} replicas it must reach within ${this.#link.commandTimeoutMs} ms (cluster.state.wait_replicas); it may or may not have been kept`, {
        details: { reason: 'wait_replicas', acknowledged, required: replicas },
      });
    }
  }

  async delete(conversationId: string, key: string): Promise<void> {
    await this.#link.script(DELETE_SCRIPT, this.#keys(conversationId), [key, conversationId, STATE_ENTRY_OVERHEAD_BYTES]);
  }
}
