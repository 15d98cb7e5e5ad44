/**
 * RFC 7662 token introspection, for opaque access tokens (those that are not
 * JWTs): the authorization server is asked whether a token is active and what
 * it says about it.
 *
 * Guarantees: the endpoint is https (http only on loopback), no redirect is
 * followed, this server authenticates with HTTP Basic (`client_id`,
 * `client_secret`, form-encoded as RFC 6749 §2.3.1 says), a request takes at
 * most `fetchTimeoutMs` and an answer at most 64 KiB; only active answers are
 * cached, keyed by the token's SHA-256 (the token itself is never kept), for
 * at most `cacheMs` and never past the token's `exp`, at most 10000 of them.
 * An endpoint that cannot be reached or answers anything but a 200 JSON
 * object is the server's problem (503), never an accepted token.
 *
 * It does not decide whether the answer makes a caller: jwt-access-tokens.ts
 * checks `iss`, `aud`, `exp`, `nbf` and the claims like a JWT's.
 */
import { createHash } from 'node:crypto';
import { readCapped } from './discovery.js';
import type { ResolvedIntrospection } from './oauth-options.js';

const MAX_ANSWER_BYTES = 64 * 1024;
const MAX_CACHED = 10_000;

/** The introspection endpoint could not answer (unreachable, an error status, not JSON). */
export class IntrospectionUnavailable extends Error {
  override readonly name = 'IntrospectionUnavailable';
}

export class TokenIntrospection {
  readonly #options: ResolvedIntrospection;
  readonly #timeoutMs: number;
  /** Active answers by the token's SHA-256, oldest first. */
  readonly #cache = new Map<string, { claims: Record<string, unknown>; until: number }>();
  #requests = 0;

  constructor(options: ResolvedIntrospection, timeoutMs: number) {
    this.#options = options;
    this.#timeoutMs = timeoutMs;
  }

  /** Requests sent to the endpoint so far. */
  get requests(): number {
    return this.#requests;
  }

  /** The token's claims when it is active, else undefined. Throws {@link IntrospectionUnavailable}. */
  async introspect(token: string): Promise<Record<string, unknown> | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const now = Date.now();
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.until > now) return cached.claims;
    if (cached !== undefined) this.#cache.delete(key);
    const claims = await this.#ask(token);
    if (claims?.active !== true) return undefined;
    const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : now;
    const until = Math.min(now + this.#options.cacheMs, exp);
    if (until > now) {
      this.#cache.set(key, { claims, until });
      if (this.#cache.size > MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value as string);
    }
    return claims;
  }

  async #ask(token: string): Promise<Record<string, unknown> | undefined> {
    const { endpoint, clientId, clientSecret } = this.#options;
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    this.#requests += 1;
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
