/**
 * RFC 7662 token introspection, for opaque access tokens (those that are not
 * JWTs): the authorization server is asked whether a token is active and what
 * it says about it.
 *
 * Guarantees: the endpoint is https (http only on loopback), no redirect is
 * followed, this server authenticates with HTTP Basic (`client_id`,
 * `client_secret`, form-encoded as RFC 6749 §2.3.1 says), a request takes at
 * most `fetchTimeoutMs` and an answer at most 64 KiB. Answers are cached by
 * the token's SHA-256 (node:crypto; the token itself is never kept): active
 * ones for at most `cacheMs` and never past the token's `exp`, inactive ones
 * for `negativeCacheMs`, at most 10000 of each (oldest forgotten first).
 * What a client can make this server send to the authorization server is
 * bounded: one request in flight per token (concurrent checks of one token
 * share it), at most `maxInFlight` requests at once over all tokens (up to
 * `maxWaiting` more checks wait their turn, further ones are refused: 503,
 * reason `busy`), and per client address at most `addressRate` requests a
 * second after a burst of `addressBurst` (address-rate.ts; beyond: 429,
 * reason `rate_limited`). Cache hits and shared requests cost no rate.
 * An endpoint that cannot be reached or answers anything but a 200 JSON
 * object is the server's problem (503), never an accepted token.
 *
 * It does not decide whether the answer makes a caller: jwt-access-tokens.ts
 * checks `token_type`, `iss`, `aud`, `exp`, `nbf` and the claims like a JWT's.
 * It does not bound clients with many addresses beyond the global bound.
 */
import { createHash } from 'node:crypto';
import { AddressRate } from './address-rate.js';
import { readCapped } from './discovery.js';
import type { ResolvedIntrospection } from './oauth-options.js';

const MAX_ANSWER_BYTES = 64 * 1024;
const MAX_CACHED = 10_000;

/** The introspection endpoint could not answer (unreachable, an error status, not JSON). */
export class IntrospectionUnavailable extends Error {
  override readonly name = 'IntrospectionUnavailable';
}

/** A check this server would not send now: the client's address is over its rate, or too many wait already. */
export class IntrospectionRefused extends Error {
  override readonly name = 'IntrospectionRefused';
  constructor(readonly reason: 'rate_limited' | 'busy', readonly retryAfterSec: number, message: string) {
    super(message);
  }
}

/** What introspection did so far (read by the metrics at a scrape). */
export interface IntrospectionStats {
  /** Requests sent to the endpoint, by how they ended. */
  requests: { active: number; inactive: number; error: number };
  /** Checks answered from the cache, by the cached answer. */
  cacheHits: { active: number; inactive: number };
  /** Checks that joined a request already in flight for the same token. */
  shared: number;
  /** Checks refused before any request: the address over its rate, or the waiting line full. */
  refused: { rate_limited: number; busy: number };
  /** Requests at the endpoint now. */
  inFlight: number;
  /** Checks waiting for one of those now. */
  waiting: number;
}

export class TokenIntrospection {
  readonly #options: ResolvedIntrospection;
  readonly #timeoutMs: number;
  /** Active answers by the token's SHA-256, oldest first. */
  readonly #cache = new Map<string, { claims: Record<string, unknown>; until: number }>();
  /** Inactive answers by the token's SHA-256 (until when they are remembered), oldest first. */
  readonly #inactive = new Map<string, number>();
  /** The request in flight for a token's SHA-256. */
  readonly #flights = new Map<string, Promise<Record<string, unknown> | undefined>>();
  readonly #rate: AddressRate;
  /** Checks waiting for a request slot, first come first served. */
  readonly #waiting: Array<() => void> = [];
  #inFlight = 0;
  readonly #stats: IntrospectionStats = { requests: { active: 0, inactive: 0, error: 0 }, cacheHits: { active: 0, inactive: 0 }, shared: 0, refused: { rate_limited: 0, busy: 0 }, inFlight: 0, waiting: 0 };

  constructor(options: ResolvedIntrospection, timeoutMs: number) {
    this.#options = options;
    this.#timeoutMs = timeoutMs;
    this.#rate = new AddressRate(options.addressRate, options.addressBurst, options.maxAddresses);
  }

  /** Requests sent to the endpoint so far. */
  get requests(): number {
    const { active, inactive, error } = this.#stats.requests;
    return active + inactive + error;
  }

  get stats(): IntrospectionStats {
    return { ...this.#stats, inFlight: this.#inFlight, waiting: this.#waiting.length };
  }

  /**
   * The token's claims when it is active, else undefined. `address` is the client's (its rate is charged
   * when a request must be sent). Throws {@link IntrospectionUnavailable} or {@link IntrospectionRefused}.
   */
  async introspect(token: string, address?: string): Promise<Record<string, unknown> | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const now = Date.now();
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.until > now) {
      this.#stats.cacheHits.active += 1;
      return cached.claims;
    }
    if (cached !== undefined) this.#cache.delete(key);
    const inactiveUntil = this.#inactive.get(key);
    if (inactiveUntil !== undefined && inactiveUntil > now) {
      this.#stats.cacheHits.inactive += 1;
      return undefined;
    }
    if (inactiveUntil !== undefined) this.#inactive.delete(key);
    const flying = this.#flights.get(key);
    if (flying !== undefined) {
      this.#stats.shared += 1;
      return flying;
    }
    const wait = this.#rate.take(address, now);
    if (wait > 0) {
      this.#stats.refused.rate_limited += 1;
      const after = Math.max(1, Math.ceil(wait));
      throw new IntrospectionRefused('rate_limited', after, `this client address asked for too many token checks (at most ${this.#options.addressRate} a second); retry in ${after} s`);
    }
    if (this.#inFlight >= this.#options.maxInFlight && this.#waiting.length >= this.#options.maxWaiting) {
      this.#stats.refused.busy += 1;
      throw new IntrospectionRefused('busy', 1, `too many token checks are waiting for the authorization server (${this.#options.maxInFlight} in flight, ${this.#options.maxWaiting} waiting); retry later`);
    }
    const flight = this.#fly(key, token);
    this.#flights.set(key, flight);
    try {
      return await flight;
    } finally {
      this.#flights.delete(key);
    }
  }

  /** One request for the token, in its turn; its answer remembered. */
  async #fly(key: string, token: string): Promise<Record<string, unknown> | undefined> {
    if (this.#inFlight >= this.#options.maxInFlight) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#inFlight += 1;
    let claims: Record<string, unknown>;
    try {
      claims = await this.#ask(token);
    } catch (error) {
      this.#stats.requests.error += 1;
      throw error;
    } finally {
      // The slot passes to the first waiting check, or is given back.
      const next = this.#waiting.shift();
      if (next !== undefined) next();
      else this.#inFlight -= 1;
    }
    const now = Date.now();
    if (claims.active !== true) {
      this.#stats.requests.inactive += 1;
      if (this.#options.negativeCacheMs > 0) remember(this.#inactive, key, now + this.#options.negativeCacheMs);
      return undefined;
    }
    this.#stats.requests.active += 1;
    const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : now;
    const until = Math.min(now + this.#options.cacheMs, exp);
    if (until > now) remember(this.#cache, key, { claims, until });
    return claims;
  }

  async #ask(token: string): Promise<Record<string, unknown>> {
    const { endpoint, clientId, clientSecret } = this.#options;
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    let response: Response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
      });
    } catch (error) {
      throw new IntrospectionUnavailable(`the introspection endpoint cannot be reached: ${(error as Error).message}`);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new IntrospectionUnavailable(`the introspection endpoint answered ${response.status}`);
    }
    let answer: unknown;
    try {
      answer = JSON.parse((await readCapped(response, MAX_ANSWER_BYTES, 'the introspection answer')).toString('utf8'));
    } catch (error) {
      throw new IntrospectionUnavailable(`the introspection answer is not usable: ${(error as Error).message}`);
    }
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) throw new IntrospectionUnavailable('the introspection answer is not a JSON object');
    return answer as Record<string, unknown>;
  }
}

/** Set `key` (as the newest entry), forgetting the oldest past {@link MAX_CACHED}. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_CACHED) map.delete(map.keys().next().value as string);
}
