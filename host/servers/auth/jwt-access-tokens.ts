/**
 * OAuth 2.1 access tokens as JWTs (RFC 9068), checked with `jose` against the
 * authorization server's key set: this server is a resource server.
 *
 * Guarantees:
 * - only asymmetric signatures (RS*, PS*, ES*, EdDSA/Ed25519) are accepted:
 *   `alg: none` and HMAC (a token "signed" with the JWKS's public key as a
 *   secret) are refused before any key is looked up;
 * - `iss` must equal the issuer, `aud` must include this server's resource URI
 *   (RFC 8707: a token minted for another resource is refused), `exp` must be
 *   present and not passed, `nbf` (when present) reached, within a small skew;
 * - keys come from the configured `jwks_uri`, or the one the issuer's RFC 8414
 *   metadata names; they are cached and fetched again after `jwksCacheMs`, and
 *   a token naming an unknown key fetches them again (at most once per
 *   `jwksCooldownMs`), so a rotation is picked up;
 * - the token is an access token: its header's `typ` is `at+jwt` (RFC 9068
 *   §2.1; `application/at+jwt` too, case-insensitive), so an ID token or any
 *   other JWT the issuer signs with the same keys is refused (reason
 *   `token_type`) even when its `aud` names this resource. With
 *   `acceptPlainJwt` a `typ` of `JWT` (or none) passes too: weaker, since
 *   then only `aud` tells an access token from an ID token (an ID token's
 *   `aud` is a client id, so the audience must never be one);
 * - the principal is a claim (`sub` by default), mapped one-to-one into the
 *   principal alphabet (caller.ts `principalOfClaim`: `auth0|id` becomes
 *   `auth0%7Cid`), and never one of the static tokens' principals; the tenant
 *   (when configured) a claim mapped the same way; the label ceiling the highest labels over the
 *   token's mapped scopes (`scope`, or `scp`).
 * - an authorization server that cannot be reached gives 503 (retry), never a
 *   token accepted without its key.
 *
 * - with `introspection`, a token that is not a JWT is checked at the issuer's
 *   RFC 7662 endpoint (introspection.ts): it must be active, its answer's
 *   `token_type` (when given) must name an access token (`access_token`,
 *   `Bearer`, or the RFC 8693 URI; `refresh_token`, `id_token` or anything
 *   else is refused), and its `iss` (when given), `aud`, `exp` (required) and
 *   `nbf` are checked as a JWT's, then mapped the same way. A check the
 *   introspection refuses to send (the client's address over its rate: 429;
 *   too many waiting: 503) is never an accepted token.
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type RemoteJWKSet } from 'jose';
import { labelRank, NETWORK_LABELS, PRIVILEGE_LABELS, type LabelCeiling, type NetworkLabel, type PrivilegeLabel } from '../../policy/labels.js';
import { MAX_MAPPED_PRINCIPAL, principalOfClaim, type AuthRefusal, type Authentication, type Caller } from './caller.js';
import { cappedFetch, discoverJwksUri } from './discovery.js';
import { IntrospectionRefused, TokenIntrospection, type IntrospectionStats } from './introspection.js';
import type { ResolvedOAuth } from './oauth-options.js';

/** The JWS algorithms an access token may use: asymmetric only. */
export const ACCESS_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** The header `typ` of an RFC 9068 access token (after dropping `application/`, lower case). */
const ACCESS_TOKEN_TYP = 'at+jwt';

/** Introspection `token_type` values (lower case) that name an access token: RFC 7009's hint, RFC 6750's type, RFC 8693's URI. */
const ACCESS_TOKEN_TYPES: ReadonlySet<string> = new Set(['access_token', 'bearer', 'urn:ietf:params:oauth:token-type:access_token']);

/** Three base64url segments: a JWS compact serialization (anything else is an opaque token). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** The key set could not be had (the authorization server is away or answers nonsense). */
class KeysUnavailable extends Error {
  override readonly name = 'KeysUnavailable';
}

export class JwtAccessTokens {
  readonly #oauth: ResolvedOAuth;
  readonly #reserved: ReadonlySet<string>;
  #keys: RemoteJWKSet | undefined;
  #discovering: Promise<RemoteJWKSet> | undefined;
  #discoveryFailedAt = Number.NEGATIVE_INFINITY;
  #discoveryProblem = '';
  #introspection: TokenIntrospection | undefined;

  /** `reserved`: principals no access token may name (the static tokens'). */
  constructor(oauth: ResolvedOAuth, reserved: Iterable<string> = []) {
    this.#oauth = oauth;
    this.#reserved = new Set(reserved);
    if (oauth.jwksUri !== undefined) this.#keys = this.#keySet(oauth.jwksUri);
    if (oauth.introspection !== undefined) this.#introspection = new TokenIntrospection(oauth.introspection, oauth.fetchTimeoutMs);
  }

  get options(): ResolvedOAuth {
    return this.#oauth;
  }

  reserves(principal: string): boolean {
    return this.#reserved.has(principal);
  }

  /**
   * Check one presented token: a JWT against the key set, else (when configured) at the introspection endpoint.
   * `address` is the client's (introspection's per-address rate).
   */
  async verify(token: string, address?: string): Promise<Authentication> {
    if (this.#introspection !== undefined && !JWT_SHAPE.test(token)) return this.#verifyOpaque(this.#introspection, token, address);
    const oauth = this.#oauth;
    let payload: JWTPayload;
    let typ: unknown;
    try {
      const keys = await this.#keySetNow();
      const getKey: JWTVerifyGetKey = async (header, input) => {
        try {
          return await keys(header, input);
        } catch (error) {
          throw unavailableOrNot(error);
        }
      };
      ({ payload, protectedHeader: { typ } } = await jwtVerify(token, getKey, {
        issuer: oauth.issuer,
        audience: oauth.audience,
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        clockTolerance: oauth.clockToleranceSec,
        requiredClaims: ['exp', oauth.principalClaim],
      }));
    } catch (error) {
      return refusalOf(error);
    }
    const kind = typ === undefined ? undefined : typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : '';
    if (kind !== ACCESS_TOKEN_TYP && !(oauth.acceptPlainJwt && (kind === undefined || kind === 'jwt'))) {
      const named = typeof typ === 'string' ? `typ ${JSON.stringify(typ.slice(0, 40))}` : typ === undefined ? 'no typ' : 'a typ that is not a string';
      return invalid('token_type', `the token is not an access token: RFC 9068 wants the header typ "at+jwt", this one has ${named}`);
    }
    return this.#callerOf(payload);
  }

  /** Requests sent to the introspection endpoint (tests, metrics). */
  get introspections(): number {
    return this.#introspection?.requests ?? 0;
  }

  /** What introspection did so far (undefined without it): for the metrics. */
  get introspectionStats(): IntrospectionStats | undefined {
    return this.#introspection?.stats;
  }

  /** RFC 7662: the endpoint says whether it is active; its answer is checked like a JWT's claims. */
  async #verifyOpaque(introspection: TokenIntrospection, token: string, address: string | undefined): Promise<Authentication> {
    const oauth = this.#oauth;
    let claims: Record<string, unknown> | undefined;
    try {
      claims = await introspection.introspect(token, address);
    } catch (error) {
      if (error instanceof IntrospectionRefused) {
        return { ok: false, status: error.reason === 'rate_limited' ? 429 : 503, reason: error.reason, message: error.message, retryAfterSec: error.retryAfterSec };
      }
      return refusalOf(new KeysUnavailable((error as Error).message));
    }
    if (claims === undefined) return invalid('inactive', 'the token is not active');
    if (claims.token_type !== undefined && (typeof claims.token_type !== 'string' || !ACCESS_TOKEN_TYPES.has(claims.token_type.toLowerCase()))) {
      return invalid('token_type', 'the token is not an access token (the introspection answer\'s token_type names another kind)');
    }
    const now = Date.now() / 1000;
    const skew = oauth.clockToleranceSec;
    if (claims.iss !== undefined && claims.iss !== oauth.issuer) return invalid('issuer', 'the token is not from the configured issuer');
    const audiences = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!audiences.includes(oauth.audience)) return invalid('audience', 'the token was not issued for this resource (aud)');
    if (typeof claims.exp !== 'number') return invalid('claims', 'the introspection answer has no exp');
    if (claims.exp + skew <= now) return invalid('expired', 'the token has expired');
    if (typeof claims.nbf === 'number' && claims.nbf - skew > now) return invalid('not_yet_valid', 'the token is not valid yet (nbf)');
    return this.#callerOf(claims);
  }

  /** The caller a checked token's claims make (its principal, tenant, scopes and ceiling), or the refusal. */
  #callerOf(payload: JWTPayload): Authentication {
    const oauth = this.#oauth;
    const principal = principalOfClaim(payload[oauth.principalClaim]);
    if (principal === undefined) {
      return invalid('principal', `the token's "${oauth.principalClaim}" claim is not a usable principal (a non-empty string of at most ${MAX_MAPPED_PRINCIPAL} characters once percent-encoded)`);
    }
    if (this.#reserved.has(principal)) return invalid('principal', `the token's principal "${principal}" is a static token's: access tokens may not name it`);
    const caller: Caller = { principal, scopes: scopesOf(payload), kind: 'oauth' };
    if (typeof payload.exp === 'number') caller.expiresAt = payload.exp;
    if (oauth.tenantClaim !== undefined) {
      const tenant = principalOfClaim(payload[oauth.tenantClaim]);
      if (tenant === undefined) return invalid('tenant', `the token's "${oauth.tenantClaim}" claim is missing or not a usable tenant name`);
      caller.tenant = tenant;
    }
    const ceiling = this.ceilingOf(caller.scopes);
    if (ceiling !== undefined) caller.labelCeiling = ceiling;
    return { ok: true, caller };
  }

  /** The highest labels over the mapped scopes (MINIMAL / DENY_ALL where none says); undefined without `scopeLabels`. */
  ceilingOf(scopes: readonly string[]): LabelCeiling | undefined {
    const map = this.#oauth.scopeLabels;
    if (map === undefined) return undefined;
    let network: NetworkLabel = 'DENY_ALL';
    let privilege: PrivilegeLabel = 'MINIMAL';
    const mapped: string[] = [];
    for (const scope of scopes) {
      const labels = map.get(scope);
      if (labels === undefined) continue;
      mapped.push(scope);
      if (labels.network !== undefined && labelRank(NETWORK_LABELS, labels.network) > labelRank(NETWORK_LABELS, network)) network = labels.network;
      if (labels.privilege !== undefined && labelRank(PRIVILEGE_LABELS, labels.privilege) > labelRank(PRIVILEGE_LABELS, privilege)) privilege = labels.privilege;
    }
    return { network, privilege, source: `the token's scopes (${mapped.length === 0 ? 'none of them mapped in scope_labels' : mapped.join(' ')})` };
  }

  #keySet(url: URL): RemoteJWKSet {
    const oauth = this.#oauth;
    return createRemoteJWKSet(url, {
      timeoutDuration: oauth.fetchTimeoutMs,
      cooldownDuration: oauth.jwksCooldownMs,
      cacheMaxAge: oauth.jwksCacheMs,
      // The key set is read up to a cap, not buffered whole whatever its size.
      [customFetch]: cappedFetch(oauth.maxJwksBytes),
    });
  }

  /** The key set, discovering its URL first when it was not configured (a failure is retried after the cooldown). */
  async #keySetNow(): Promise<RemoteJWKSet> {
    if (this.#keys !== undefined) return this.#keys;
    if (Date.now() - this.#discoveryFailedAt < Math.max(this.#oauth.jwksCooldownMs, 1_000)) {
      throw new KeysUnavailable(`the authorization server's metadata could not be read: ${this.#discoveryProblem}`);
    }
    this.#discovering ??= discoverJwksUri(this.#oauth.issuer, this.#oauth.fetchTimeoutMs).then(
      (url) => (this.#keys = this.#keySet(url)),
      (error: unknown) => {
        this.#discoveryFailedAt = Date.now();
        this.#discoveryProblem = (error as Error).message;
        this.#discovering = undefined;
        throw new KeysUnavailable(`the authorization server's metadata could not be read: ${this.#discoveryProblem}`);
      },
    );
    return this.#discovering;
  }
}

/** A key-set failure that is the authorization server's (unreachable, not 200, not a key set), or the token's own. */
function unavailableOrNot(error: unknown): unknown {
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported) return error;
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return new KeysUnavailable(error.message);
  if (error instanceof errors.JOSEError && error.code !== 'ERR_JOSE_GENERIC') return error;
  return new KeysUnavailable(error instanceof Error ? error.message : String(error));
}

function refusalOf(error: unknown): AuthRefusal {
  if (error instanceof KeysUnavailable) {
    return { ok: false, status: 503, reason: 'unavailable', message: `the token cannot be checked now (${error.message}); retry later` };
  }
  if (error instanceof errors.JWTExpired) return invalid('expired', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    const reason = ({ iss: 'issuer', aud: 'audience', nbf: 'not_yet_valid' } as Record<string, string>)[error.claim] ?? 'claims';
    const message = reason === 'audience' ? 'the token was not issued for this resource (aud)' : reason === 'issuer' ? 'the token is not from the configured issuer' : `the token's claims do not hold (${error.claim}: ${error.reason})`;
    return invalid(reason, message);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid('algorithm', 'the token\'s algorithm is not accepted (asymmetric signatures only)');
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) return invalid('unknown_key', 'the token\'s key is not in the authorization server\'s key set');
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalid('signature', 'the token\'s signature does not verify');
  return invalid('malformed', 'the token is not a valid JWT access token');
}

function invalid(reason: string, message: string): AuthRefusal {
  return { ok: false, status: 401, error: 'invalid_token', reason, message };
}

/** The scopes of a token: `scope` (space-separated, RFC 9068), else `scp` (a list or a string). */
function scopesOf(payload: JWTPayload): string[] {
  const { scope, scp } = payload as { scope?: unknown; scp?: unknown };
  if (typeof scope === 'string') return scope.split(' ').filter((entry) => entry !== '');
  if (Array.isArray(scp)) return scp.filter((entry): entry is string => typeof entry === 'string');
  if (typeof scp === 'string') return scp.split(' ').filter((entry) => entry !== '');
  return [];
}
