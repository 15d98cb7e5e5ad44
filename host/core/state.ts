/**
 * Conversation-scoped state. Values are JSON text, keyed by conversation and
 * key. The store sits behind {@link StateStore} so a networked store can
 * replace the in-memory default; all access happens on the main thread
 * (workers reach it through the host bridge), so every worker sees one state.
 */
import { ToolhostError } from './errors.js';
import type { Logger } from './logger.js';

/**
 * Where conversation state lives. Implementations may be remote (hence async);
 * they may throw a ToolhostError (its code is kept: FLEET_UNAVAILABLE, or
 * INVALID_INPUT for a store's own size limits), anything else becomes INTERNAL.
 */
export interface StateStore {
  get(conversationId: string, key: string): Promise<string | undefined>;
  set(conversationId: string, key: string, value: string): Promise<void>;
  delete(conversationId: string, key: string): Promise<void>;
}

/** The embedded default: a map in the main thread. */
export class InMemoryStateStore implements StateStore {
  readonly #conversations = new Map<string, Map<string, string>>();

  async get(conversationId: string, key: string): Promise<string | undefined> {
    return this.#conversations.get(conversationId)?.get(key);
  }

  async set(conversationId: string, key: string, value: string): Promise<void> {
    let entries = this.#conversations.get(conversationId);
    if (!entries) {
      entries = new Map();
      this.#conversations.set(conversationId, entries);
    }
    entries.set(key, value);
  }

  async delete(conversationId: string, key: string): Promise<void> {
    const entries = this.#conversations.get(conversationId);
    entries?.delete(key);
    if (entries?.size === 0) this.#conversations.delete(conversationId);
  }
}

/** Longest key and value accepted, so a guest cannot grow host memory without bound. */
export const MAX_STATE_KEY_BYTES = 256;
export const MAX_STATE_VALUE_BYTES = 1024 * 1024;

/**
 * One call's view of its conversation's state. A call without a conversation
 * id gets a scratch scope that lives only as long as the call.
 */
export class ConversationState {
  readonly #store: StateStore;
  readonly #scope: string;
  readonly #logger: Logger;

  constructor(store: StateStore, scope: string, logger: Logger) {
    this.#store = store;
    this.#scope = scope;
    this.#logger = logger;
  }

  /** The raw JSON text under `key`; throws a ToolhostError (INTERNAL) when the store fails. */
  async getRaw(key: string): Promise<string | undefined> {
    checkKey(key);
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

  /** Store raw JSON text under `key`; throws a ToolhostError on bad input or store failure. */
  async setRaw(key: string, value: string): Promise<void> {
    checkKey(key);
    if (Buffer.byteLength(value) > MAX_STATE_VALUE_BYTES) {
      throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is larger than ${MAX_STATE_VALUE_BYTES} bytes`);
    }
    try {
      JSON.parse(value);
    } catch {
      throw new ToolhostError('INVALID_INPUT', `state value for "${key}" is not JSON text`);
    }
    try {
      await this.#store.set(this.#scope, key, value);
    } catch (error) {
      // A store's own coded errors (FLEET_UNAVAILABLE, a size limit) keep their code.
      if (error instanceof ToolhostError) throw error;
      throw new ToolhostError('INTERNAL', `state store failed to write "${key}": ${messageOf(error)}`, { cause: error });
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
