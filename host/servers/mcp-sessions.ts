/**
 * The MCP HTTP server's session table: what a client can make the server hold,
 * bounded.
 *
 * - A session is *busy* while one of its requests is open (a POST being
 *   answered, a GET event stream) and *idle* otherwise.
 * - An idle session expires `idleMs` after its last request ended (swept on
 *   every new session and by a timer).
 * - At `maxSessions`, a new session evicts the least recently used idle
 *   session; only when every session is busy is the new one refused.
 * - A client (its remote address) holds at most `maxPerClient` sessions: at
 *   its limit, its own least recently used idle session is evicted first.
 *
 * An evicted or expired session is closed (its server and transport): a client
 * that comes back gets 404, which tells MCP clients to initialize again.
 * The table only decides; closing is the caller's `close` callback.
 */

/** Why a session left the table. */
export type SessionEndReason = 'closed' | 'idle_expired' | 'evicted_lru' | 'evicted_client_limit' | 'server_closed';

export interface SessionLimits {
  /** Sessions open at once (default 1000). */
  maxSessions: number;
  /** Sessions one client address may hold (default 256). */
  maxPerClient: number;
  /** How long an idle session lives (ms, default 600000 = 10 min). */
  idleMs: number;
}

export const DEFAULT_SESSION_LIMITS: Readonly<SessionLimits> = Object.freeze({ maxSessions: 1000, maxPerClient: 256, idleMs: 600_000 });

interface Entry<S> {
  value: S;
  client: string;
  busy: number;
  lastUsed: number;
}

export type Admit = { ok: true } | { ok: false; reason: 'sessions_full' | 'client_sessions_full'; message: string };

export class SessionTable<S> {
  /** Insertion order is use order: an entry is re-inserted whenever it is used. */
  readonly #entries = new Map<string, Entry<S>>();
  readonly #perClient = new Map<string, number>();
  readonly #limits: SessionLimits;
  readonly #close: (id: string, value: S, reason: SessionEndReason) => void;
  readonly #now: () => number;
  /** Sessions reserved by initialize requests still being answered. */
  #reserved = 0;

  constructor(limits: SessionLimits, close: (id: string, value: S, reason: SessionEndReason) => void, now: () => number = () => performance.now()) {
    this.#limits = limits;
    this.#close = close;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(id: string): S | undefined {
    return this.#entries.get(id)?.value;
  }

  values(): S[] {
    return [...this.#entries.values()].map((entry) => entry.value);
  }

  /**
   * Make room for a new session of `client` (expiring and evicting idle ones as
   * needed) and reserve it; `release()` the reservation once the session is
   * added (or failed to open).
   */
  reserve(client: string): Admit {
    this.sweep();
    const { maxSessions, maxPerClient } = this.#limits;
    if ((this.#perClient.get(client) ?? 0) >= maxPerClient && !this.#evictIdle('evicted_client_limit', client)) {
      return { ok: false, reason: 'client_sessions_full', message: `this client holds ${maxPerClient} sessions, all busy (at most ${maxPerClient} per client)` };
    }
    if (this.#entries.size + this.#reserved >= maxSessions && !this.#evictIdle('evicted_lru')) {
      return { ok: false, reason: 'sessions_full', message: `${maxSessions} sessions are open and all busy; try again later` };
    }
    this.#reserved += 1;
    return { ok: true };
  }

  release(): void {
    if (this.#reserved > 0) this.#reserved -= 1;
  }

  add(id: string, client: string, value: S): void {
    this.#entries.set(id, { value, client, busy: 0, lastUsed: this.#now() });
    this.#perClient.set(client, (this.#perClient.get(client) ?? 0) + 1);
  }

  /** A request of session `id` started; call the returned function when it ends. */
  use(id: string): () => void {
    const entry = this.#entries.get(id);
    if (!entry) return () => undefined;
    entry.busy += 1;
    this.#touch(id, entry);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      entry.busy -= 1;
      entry.lastUsed = this.#now();
      if (this.#entries.get(id) === entry) this.#touch(id, entry);
    };
  }

  /** Forget a session (it closed by itself). */
  delete(id: string): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    this.#entries.delete(id);
    const count = (this.#perClient.get(entry.client) ?? 1) - 1;
    if (count <= 0) this.#perClient.delete(entry.client);
    else this.#perClient.set(entry.client, count);
    return true;
  }

  /** Close every idle session unused for `idleMs`. Returns how many. */
  sweep(): number {
    const cutoff = this.#now() - this.#limits.idleMs;
    let expired = 0;
    // Oldest first: stop at the first entry used after the cutoff (busy ones are skipped, not a stop).
    for (const [id, entry] of this.#entries) {
      if (entry.busy > 0) continue;
      if (entry.lastUsed > cutoff) break;
      this.#end(id, entry, 'idle_expired');
      expired += 1;
    }
    return expired;
  }

  /** Remove every session and return them (the server is closing). */
  clear(): S[] {
    const all = this.values();
    this.#entries.clear();
    this.#perClient.clear();
    return all;
  }

  #evictIdle(reason: SessionEndReason, client?: string): boolean {
    for (const [id, entry] of this.#entries) {
      if (entry.busy > 0 || (client !== undefined && entry.client !== client)) continue;
      this.#end(id, entry, reason);
      return true;
    }
    return false;
  }

  #end(id: string, entry: Entry<S>, reason: SessionEndReason): void {
    this.delete(id);
    this.#close(id, entry.value, reason);
  }

  #touch(id: string, entry: Entry<S>): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
  }
}
