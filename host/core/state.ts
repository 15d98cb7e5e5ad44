/**
 * Conversation-scoped state. Values are JSON text, keyed by conversation and
 * key. The store sits behind {@link StateStore} so a networked store can
 * replace the in-memory default; all access happens on the main thread
 * (workers reach it through the host bridge), so every worker sees one state.
 */
import { getHeapStatistics } from 'node:v8';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { StateAccess } from '../policy/grant.js';
import { ANONYMOUS_TENANT } from './principal-scope.js';
import { ownerOf, planRoom, type ShareOwner } from './state-shares.js';

/**
 * Where conversation state lives. Implementations may be remote (hence async);
 * they may throw a ToolhostError (its code is kept: FLEET_UNAVAILABLE, or
 * INVALID_INPUT for a store's own size limits), anything else becomes INTERNAL.
 */
export interface StateStore {
  get(conversationId: string, key: string): Promise<string | undefined>;
  /** Resolves to what the write cost others (conversations evicted to make room), when the store says. */
  set(conversationId: string, key: string, value: string): Promise<void | StateWriteOutcome>;
  delete(conversationId: string, key: string): Promise<void>;
}

/** What a write did beside storing the value. */
export interface StateWriteOutcome {
  /** Conversations the store dropped (least recently used first) to stay within its conversation cap. */
  evictedConversations: number;
  /** Conversations the store dropped (least recently used first) to stay within its total bytes. */
  evictedForBytes?: number;
}

/**
 * Caps on what a conversation's state may hold, so no guest (and no caller)
 * can grow the host's memory without bound. A write past one is refused with
 * OUTPUT_LIMIT_EXCEEDED, `details: { reason: 'state', limit }` (a guest's
 * `set-state` gets it as its error, a string starting with the code and the
 * limit's name; the call goes on).
 */
export interface StateLimits {
  /** Bytes of one value (JSON text). Checked on the host side for every store. */
  maxValueBytes: number;
  /** Keys one conversation may hold. */
  maxKeysPerConversation: number;
  /** Bytes (keys plus values) one conversation may hold. */
  maxBytesPerConversation: number;
  /**
   * Conversations the in-memory store keeps (clients choose conversation ids, so without it any
   * client could make the host hold any number); at the cap the least recently used one is evicted.
   */
  maxConversations: number;
  /**
   * Bytes the in-memory store holds in all: every conversation's keys and values, plus
   * {@link STATE_ENTRY_OVERHEAD_BYTES} an entry and {@link STATE_CONVERSATION_OVERHEAD_BYTES} and the
   * id's bytes a conversation (what the maps themselves cost, so tiny entries are not free). A write
   * that would pass it evicts the least recently used other conversations first; one that would pass
   * it alone is refused. Default: a quarter of the main thread's heap limit.
   */
  maxTotalBytes: number;
}

/** What the in-memory store charges an entry beyond its key and value bytes (map slot, string headers). */
export const STATE_ENTRY_OVERHEAD_BYTES = 64;
/** What the in-memory store charges a conversation beyond its entries and id (its map and record). */
export const STATE_CONVERSATION_OVERHEAD_BYTES = 256;

/** The default total: a quarter of this thread's V8 heap limit (the rest stays for calls, sessions and the host). */
export function defaultStateTotalBytes(): number {
  return Math.max(1, Math.floor(getHeapStatistics().heap_size_limit / 4));
}

export const DEFAULT_STATE_LIMITS: Readonly<StateLimits> = Object.freeze({
  maxValueBytes: 1024 * 1024,
  maxKeysPerConversation: 1000,
  maxBytesPerConversation: 16 * 1024 * 1024,
  maxConversations: 10_000,
  maxTotalBytes: defaultStateTotalBytes(),
});

/** Which state limit a write hit (the name of its config key, for metrics and details). */
export type StateLimitName = 'state_value_bytes' | 'state_keys_per_conversation' | 'state_bytes_per_conversation' | 'state_conversations' | 'state_total_bytes';

/** Check user-given state limits (messages name the option); returns them merged over the defaults. */
export function resolveStateLimits(limits: Partial<StateLimits> = {}, option = 'options.stateLimits'): StateLimits {
  const resolved = { ...DEFAULT_STATE_LIMITS, ...limits };
  for (const key of ['maxValueBytes', 'maxKeysPerConversation', 'maxBytesPerConversation', 'maxConversations', 'maxTotalBytes'] as const) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < 1) throw new TypeError(`${option}.${key} must be a positive integer`);
  }
  return resolved;
}

export function stateLimitError(limit: StateLimitName, message: string, details: Record<string, unknown> = {}): ToolhostError {
  return new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `${message} (${limit})`, { details: { reason: 'state', limit, ...details } });
}

/**
 * The embedded default: a map in the main thread, which enforces every
 * {@link StateLimits} itself (it knows each conversation's keys and bytes).
 *
 * At `maxConversations`, a write to a new conversation evicts a least
 * recently used one (read or written last) rather than being refused: clients
 * choose conversation ids, so refusing would let one client that names many
 * conversations lock every other client out of new ones for good (the MCP
 * session table made the same choice). The cost, an evicted conversation
 * starting empty again, falls on conversations nobody used for the longest;
 * a deployment that needs state to outlive that runs a fleet store (Redis,
 * with its own TTL). Each eviction is reported (`state_conversations`).
 *
 * The bytes held in all are capped too (`maxTotalBytes`, sized to the heap by
 * default): the conversation cap alone let 10,000 conversations of 16 MiB each
 * outgrow a 4 GiB heap, which aborted the host. A write that would pass it
 * evicts least recently used other conversations first (each eviction a
 * `state_total_bytes` limit hit); the conversation being written is never
 * evicted for it, and a write that would take that conversation alone past the
 * total is refused (`state_total_bytes`).
 *
 * Both limits are shared fairly between principals (./state-shares.ts): each
 * principal holding state has a share of them, a writer over its share makes
 * room from its own conversations, and another principal loses conversations
 * only while it is over its share. Without principals (a library) every
 * conversation has one owner and the order is one least-recently-used list.
 */
export class InMemoryStateStore implements StateStore {
  /** Each owner's conversations (./state-shares.ts), least recently used first: a use moves a conversation to the end. */
  readonly #owners = new Map<string, ShareOwner<Conversation>>();
  readonly #limits: StateLimits;
  /** The sum of every conversation's {@link chargeOf}, and how many conversations there are. */
  #heldBytes = 0;
  #count = 0;

  constructor(limits: Partial<StateLimits> = {}) {
    this.#limits = resolveStateLimits(limits);
  }

  /** Conversations held. */
  get conversations(): number {
    return this.#count;
  }

  /** Bytes held in all, as counted against `maxTotalBytes` (keys, values and the per-entry and per-conversation overheads). */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Bytes one principal's conversations hold (`undefined`: every caller without a principal). */
  heldBytesOf(principal: string | undefined): number {
    return this.#owners.get(principal ?? ANONYMOUS_TENANT)?.bytes ?? 0;
  }

  async get(conversationId: string, key: string): Promise<string | undefined> {
    const owner = this.#owners.get(ownerOf(conversationId));
    const conversation = owner?.conversations.get(conversationId);
    if (owner === undefined || conversation === undefined) return undefined;
    touch(owner, conversationId, conversation);
    return conversation.entries.get(key);
  }

  async set(conversationId: string, key: string, value: string): Promise<void | StateWriteOutcome> {
    const limits = this.#limits;
    const valueBytes = Buffer.byteLength(value);
    if (valueBytes > limits.maxValueBytes) {
      throw stateLimitError('state_value_bytes', `state value for "${key}" is ${valueBytes} bytes, over the limit of ${limits.maxValueBytes}`, { bytes: valueBytes, max: limits.maxValueBytes });
    }
    const ownerName = ownerOf(conversationId);
    const existing = this.#owners.get(ownerName)?.conversations.get(conversationId);
    const conversation = existing ?? { entries: new Map<string, string>(), bytes: 0, idBytes: Buffer.byteLength(conversationId) };
    const previous = conversation.entries.get(key);
    const keyBytes = Buffer.byteLength(key);
    const bytes = conversation.bytes - (previous === undefined ? 0 : keyBytes + Buffer.byteLength(previous)) + keyBytes + valueBytes;
    if (previous === undefined && conversation.entries.size >= limits.maxKeysPerConversation) {
      throw stateLimitError('state_keys_per_conversation', `the conversation's state already holds ${conversation.entries.size} keys, the limit`, { max: limits.maxKeysPerConversation });
    }
    if (bytes > limits.maxBytesPerConversation) {
      throw stateLimitError('state_bytes_per_conversation', `the conversation's state would hold ${bytes} bytes, over the limit of ${limits.maxBytesPerConversation}`, { bytes, max: limits.maxBytesPerConversation });
    }
    const chargeBefore = existing === undefined ? 0 : chargeOf(existing);
    const chargeAfter = chargeOf({ bytes, idBytes: conversation.idBytes, entries: conversation.entries.size + (previous === undefined ? 1 : 0) });
    if (chargeAfter > limits.maxTotalBytes) {
      throw stateLimitError('state_total_bytes', `the conversation's state would take ${chargeAfter} bytes, over the store's total of ${limits.maxTotalBytes}`, { bytes: chargeAfter, max: limits.maxTotalBytes });
    }
    // Make room first, within the principals' shares (state-shares.ts); never the conversation being written.
    const plan = planRoom(this.#owners, { bytes: this.#heldBytes, conversations: this.#count }, limits, {
      owner: ownerName, conversationId, isNew: existing === undefined, addedBytes: chargeAfter - chargeBefore,
    }, chargeOf);
    if ('refuse' in plan) {
      throw stateLimitError(plan.refuse, `the principal's state is over its share (${plan.share}) of the store's ${plan.refuse === 'state_total_bytes' ? `total of ${limits.maxTotalBytes} bytes` : `${limits.maxConversations} conversations`}, and holds no other conversation to make room with`, {
        share: plan.share, principalShare: true,
      });
    }
    let evicted = 0;
    let evictedForBytes = 0;
    for (const eviction of plan.evict) {
      const owner = this.#owners.get(eviction.owner) as ShareOwner<Conversation>;
      const dropped = owner.conversations.get(eviction.conversationId) as Conversation;
      owner.conversations.delete(eviction.conversationId);
      const charge = chargeOf(dropped);
      owner.bytes -= charge;
      this.#heldBytes -= charge;
      this.#count -= 1;
      if (owner.conversations.size === 0) this.#owners.delete(eviction.owner);
      if (eviction.limit === 'state_conversations') evicted += 1;
      else evictedForBytes += 1;
    }
    let owner = this.#owners.get(ownerName);
    if (owner === undefined) {
      owner = { conversations: new Map(), bytes: 0 };
      this.#owners.set(ownerName, owner);
    }
    conversation.entries.set(key, value);
    conversation.bytes = bytes;
    owner.bytes += chargeAfter - chargeBefore;
    this.#heldBytes += chargeAfter - chargeBefore;
    if (existing === undefined) this.#count += 1;
    touch(owner, conversationId, conversation);
    if (evicted === 0 && evictedForBytes === 0) return undefined;
    return evictedForBytes === 0 ? { evictedConversations: evicted } : { evictedConversations: evicted, evictedForBytes };
  }

  async delete(conversationId: string, key: string): Promise<void> {
    const ownerName = ownerOf(conversationId);
    const owner = this.#owners.get(ownerName);
    const conversation = owner?.conversations.get(conversationId);
    const previous = conversation?.entries.get(key);
    if (owner === undefined || conversation === undefined || previous === undefined) return;
    const before = chargeOf(conversation);
    conversation.entries.delete(key);
    conversation.bytes -= Buffer.byteLength(key) + Buffer.byteLength(previous);
    const after = conversation.entries.size === 0 ? 0 : chargeOf(conversation);
    owner.bytes += after - before;
    this.#heldBytes += after - before;
    if (conversation.entries.size === 0) {
      owner.conversations.delete(conversationId);
      this.#count -= 1;
      if (owner.conversations.size === 0) this.#owners.delete(ownerName);
    }
  }
}

function touch(owner: ShareOwner<Conversation>, conversationId: string, conversation: Conversation): void {
  owner.conversations.delete(conversationId);
  owner.conversations.set(conversationId, conversation);
}

/** Where a conversation's state lives for a principal (see principal-scope.ts), and in which namespace (state-namespace.ts). */
export { conversationScope, stateScope } from './principal-scope.js';
export { stateNamespace } from './state-namespace.js';

interface Conversation {
  entries: Map<string, string>;
  /** Keys plus values (what `maxBytesPerConversation` caps). */
  bytes: number;
  /** Bytes of the conversation's id (its key in the store's map). */
  idBytes: number;
}

/** What a conversation counts against the store's total. */
function chargeOf(conversation: { bytes: number; idBytes: number; entries: Map<string, string> | number }): number {
  const entries = typeof conversation.entries === 'number' ? conversation.entries : conversation.entries.size;
  return conversation.bytes + conversation.idBytes + STATE_CONVERSATION_OVERHEAD_BYTES + entries * STATE_ENTRY_OVERHEAD_BYTES;
}

/** Longest key accepted, so a guest cannot grow host memory without bound. */
export const MAX_STATE_KEY_BYTES = 256;

/**
 * One call's view of its conversation's state. A call without a conversation
 * id gets a scratch scope that lives only as long as the call.
 */
export class ConversationState {
  readonly #store: StateStore;
  readonly #scope: string;
  readonly #logger: Logger;
  readonly #maxValueBytes: number;
  readonly #onLimit: ((limit: StateLimitName) => void) | undefined;
  readonly #access: StateAccess;

  /**
   * @param maxValueBytes checked here, whatever the store (a remote store enforces its own per-conversation limits)
   * @param onLimit told about each write refused by a state limit (metrics)
   * @param access what the tool's grant lets it do (`grant.state.access`): `read` refuses writes, `none` reads nothing too
   */
  constructor(store: StateStore, scope: string, logger: Logger, maxValueBytes = DEFAULT_STATE_LIMITS.maxValueBytes, onLimit?: (limit: StateLimitName) => void, access: StateAccess = 'write') {
    this.#store = store;
    this.#scope = scope;
    this.#logger = logger;
    this.#maxValueBytes = maxValueBytes;
    this.#onLimit = onLimit;
    this.#access = access;
  }

  /** The raw JSON text under `key`; throws a ToolhostError (INTERNAL) when the store fails. */
  async getRaw(key: string): Promise<string | undefined> {
    checkKey(key);
    if (this.#access === 'none') return undefined;
    try {
      return await this.#store.get(this.#scope, key);
    } catch (error) {
      if (error instanceof ToolhostError) throw error;
      throw new ToolhostError('INTERNAL', `state store failed to read "${key}": ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * The value under `key`, or `fallback` when it is absent, unreadable or the
   * store fails (failures are logged). Never throws.
   */
  async getState<T>(key: string, fallback: T): Promise<T> {
    try {
      const raw = await this.getRaw(key);
      return raw === undefined ? fallback : (JSON.parse(raw) as T);
    } catch (error) {
      this.#logger.warn({ err: messageOf(error), key, scope: this.#scope }, 'state read failed; using the default');
      return fallback;
    }
  }

  /**
   * Store raw JSON text under `key`; throws a ToolhostError on bad input
   * (INVALID_INPUT), past a state limit (OUTPUT_LIMIT_EXCEEDED) or when the
   * store fails (INTERNAL).
   */
  async setRaw(key: string, value: string): Promise<void> {
    checkKey(key);
    if (this.#access !== 'write') {
      throw new ToolhostError('PERMISSION_DENIED', `the tool's grant lets it ${this.#access === 'read' ? 'only read' : 'neither read nor write'} conversation state (grant.state.access: ${this.#access})`, {
        details: { reason: 'state-access', access: this.#access },
      });
    }
    const bytes = Buffer.byteLength(value);
    if (bytes > this.#maxValueBytes) {
      this.#onLimit?.('state_value_bytes');
      throw stateLimitError('state_value_bytes', `state value for "${key}" is ${bytes} bytes, over the limit of ${this.#maxValueBytes}`, { bytes, max: this.#maxValueBytes });
    }
    try {
      JSON.parse(value);
    } catch {
      throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is not JSON text`);
    }
    let outcome: void | StateWriteOutcome;
    try {
      outcome = await this.#store.set(this.#scope, key, value);
    } catch (error) {
      // A store's own coded errors (FLEET_UNAVAILABLE, a size limit) keep their code; a state limit is counted.
      if (error instanceof ToolhostError) {
        if ((error.details as { reason?: unknown } | undefined)?.reason === 'state') {
          const limit = (error.details as { limit?: StateLimitName }).limit;
          if (limit !== undefined) this.#onLimit?.(limit);
        }
        throw error;
      }
      throw new ToolhostError('INTERNAL', `state store failed to write "${key}": ${messageOf(error)}`, { cause: error });
    }
    // Other conversations paid for this write: each eviction counted, the write itself succeeded.
    if (outcome !== undefined) {
      for (let i = 0; i < outcome.evictedConversations; i++) this.#onLimit?.('state_conversations');
      for (let i = 0; i < (outcome.evictedForBytes ?? 0); i++) this.#onLimit?.('state_total_bytes');
    }
  }

  /** Store a JSON-serializable value under `key`; throws a ToolhostError on failure. */
  async setState(key: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value);
    if (text === undefined) throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is not JSON-serializable`);
    await this.setRaw(key, text);
  }
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key) > MAX_STATE_KEY_BYTES) {
    throw new ToolhostError('INVALID_INPUT', `state key must be a non-empty string of at most ${MAX_STATE_KEY_BYTES} bytes`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
