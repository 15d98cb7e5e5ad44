/**
 * Conversation state in Redis, shared by every host of the fleet: one hash per
 * conversation (`<prefix>state:<conversation id>`, a field per key), so a
 * call can only ever address its own conversation's hash. Each write sets the
 * conversation's TTL again (a sliding expiry: a conversation nobody writes to
 * for `ttlSeconds` is forgotten). A value is at most `maxValueBytes`, a
 * conversation at most `maxKeys` keys (INVALID_INPUT past either).
 *
 * Redis down: `get` and `set` reject with FLEET_UNAVAILABLE; `ConversationState`
 * turns a failed get into the caller's fallback (logged) and reports a failed
 * set to the tool.
 */
import { ToolhostError } from '../core/errors.js';
import type { StateStore } from '../core/state.js';
import type { RedisLink } from './redis-link.js';

export interface RedisStateOptions {
  /** Key prefix shared by the fleet (default `toolhost:`). */
  prefix?: string;
  /** Seconds a conversation lives after its last write (default one day). */
  ttlSeconds?: number;
  /** Largest value (bytes of JSON text; default 256 KiB). */
  maxValueBytes?: number;
  /** Most keys in one conversation (default 1000). */
  maxKeys?: number;
}

export const DEFAULT_STATE_TTL_SECONDS = 86_400;
export const DEFAULT_STATE_MAX_VALUE_BYTES = 256 * 1024;
export const DEFAULT_STATE_MAX_KEYS = 1000;

/** Set one field unless the hash is full, then refresh the hash's TTL. */
const SET_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 'FULL'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'OK'
`;

export class RedisStateStore implements StateStore {
  readonly #link: RedisLink;
  readonly #prefix: string;
  readonly #ttlMs: number;
  readonly #maxValueBytes: number;
  readonly #maxKeys: number;

  constructor(link: RedisLink, options: RedisStateOptions = {}) {
    this.#link = link;
    this.#prefix = options.prefix ?? 'toolhost:';
    const ttl = options.ttlSeconds ?? DEFAULT_STATE_TTL_SECONDS;
    const maxValue = options.maxValueBytes ?? DEFAULT_STATE_MAX_VALUE_BYTES;
    const maxKeys = options.maxKeys ?? DEFAULT_STATE_MAX_KEYS;
    if (!(Number.isInteger(ttl) && ttl > 0)) throw new TypeError('options.ttlSeconds must be a positive integer');
    if (!(Number.isInteger(maxValue) && maxValue > 0)) throw new TypeError('options.maxValueBytes must be a positive integer');
    if (!(Number.isInteger(maxKeys) && maxKeys > 0)) throw new TypeError('options.maxKeys must be a positive integer');
    this.#ttlMs = ttl * 1000;
    this.#maxValueBytes = maxValue;
    this.#maxKeys = maxKeys;
  }

  #key(conversationId: string): string {
    return `${this.#prefix}state:${conversationId}`;
  }

  async get(conversationId: string, key: string): Promise<string | undefined> {
    const value = await this.#link.command<string | null>(['HGET', this.#key(conversationId), key]);
    return value === null ? undefined : String(value);
  }

  async set(conversationId: string, key: string, value: string): Promise<void> {
    if (Buffer.byteLength(value) > this.#maxValueBytes) {
      throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is larger than the fleet's limit of ${this.#maxValueBytes} bytes`);
    }
    const outcome = await this.#link.script<string>(SET_SCRIPT, [this.#key(conversationId)], [key, value, this.#maxKeys, this.#ttlMs]);
    if (String(outcome) === 'FULL') {
      throw new ToolhostError('INVALID_INPUT', `the conversation already holds ${this.#maxKeys} state keys (the fleet's limit)`);
    }
  }

  async delete(conversationId: string, key: string): Promise<void> {
    await this.#link.command(['HDEL', this.#key(conversationId), key]);
  }
}
