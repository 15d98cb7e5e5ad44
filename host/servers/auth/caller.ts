/**
 * Who a server request comes from, and the one interface every way of
 * telling implements: static bearer tokens (../principals.ts) and OAuth 2.1
 * access tokens (jwt-access-tokens.ts) sit behind {@link Authenticator}, and
 * MCP HTTP and gRPC ask it the same question with the same header value.
 *
 * Guarantees: an authenticated {@link Caller} names a principal in the
 * principal alphabet (short, printable, safe in logs and metrics; an access
 * token's claim outside it is mapped one-to-one by percent-encoding, see
 * {@link principalOfClaim}); its tenant, when set, likewise; its label ceiling comes from the
 * credentials, never from the request. A refusal says whether the client must
 * bring another token (401) or the server could not check it now (503).
 *
 * It does not decide what a caller may do with a tool: that is the call
 * path's admission, which applies the ceiling beside the tool's grant.
 */
import type { CallOptions } from '../../core/call/options.js';
import type { LabelCeiling } from '../../policy/labels.js';

/** Principal (and tenant) names: short, printable, safe in logs and metrics. */
export const PRINCIPAL_PATTERN = /^[A-Za-z0-9._@:-]{1,64}$/;

/** The longest principal an access token's claim maps to (percent-encoding may lengthen it). */
export const MAX_MAPPED_PRINCIPAL = 128;

/**
 * An access token's claim as a principal (or tenant) name: the claim itself
 * when it is in {@link PRINCIPAL_PATTERN}, else its UTF-8 bytes outside the
 * alphabet percent-encoded (`auth0|5f3a` -> `auth0%7C5f3a`), `%` included, so
 * the mapping is one-to-one: two subjects never get one principal, and a
 * mapped name (it holds `%`) is never a static token's. Undefined when the
 * claim is empty, not a string, or maps to more than {@link MAX_MAPPED_PRINCIPAL}.
 */
export function principalOfClaim(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  if (PRINCIPAL_PATTERN.test(value)) return value;
  let mapped = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    mapped += /[A-Za-z0-9._@:-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (mapped.length > MAX_MAPPED_PRINCIPAL) return undefined;
  }
  return mapped;
}

/** An authenticated client. */
export interface Caller {
  /** Who owns its calls and conversations (a named token's principal, an access token's `sub` or configured claim). */
  principal: string;
  /** Whom its calls count against for the fleet's per-tenant caps (absent: the principal). */
  tenant?: string;
  /** The most it may ask for (absent: only the tools' grants cap its calls). */
  labelCeiling?: LabelCeiling;
  /** The scopes its token was granted (empty for static tokens). */
  scopes: readonly string[];
  /** When its token expires, in seconds since the epoch (absent: never, a static token). */
  expiresAt?: number;
  /** How it was authenticated. */
  kind: 'static' | 'oauth';
}

/** Why a request was not authenticated. */
export interface AuthRefusal {
  ok: false;
  /**
   * 401: bring a (valid) token; 503: the token could not be checked now (the authorization server is away,
   * or too many checks wait for it); 429: this client address asked for too many checks (introspection's rate).
   */
  status: 401 | 429 | 503;
  /** For 429 and 503: when to try again, in seconds (absent: the server's usual hint). */
  retryAfterSec?: number;
  /** RFC 6750's error, when a token was presented and refused. */
  error?: 'invalid_token';
  /** A short machine-readable reason (`missing`, `unknown`, `expired`, `audience`, `issuer`, `signature`, `claims`, `unavailable`...). */
  reason: string;
  /** For the log and the response body; says nothing about other principals' tokens. */
  message: string;
}

export type Authentication = { ok: true; caller: Caller } | AuthRefusal;

/** RFC 9728 protected-resource metadata, and where it is served. */
export interface ProtectedResource {
  /** The metadata document (`resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported`). */
  readonly document: Readonly<Record<string, unknown>>;
  /** The paths on this server that serve it (`/.well-known/oauth-protected-resource` and its resource-path form). */
  readonly paths: readonly string[];
  /** The absolute metadata URL, for `WWW-Authenticate: Bearer resource_metadata="..."`. */
  readonly url: string;
}

/** What an OAuth configuration says about scopes a request needs (step-up.ts). */
export interface StepUp {
  /** The scopes a 401 names: those mapped to the lowest labels (empty without `scope_labels`). */
  readonly entryScopes: readonly string[];
  /** The scope an access token needs for `/metrics`. */
  readonly metricsScope: string;
  /** The scope an access token needs for the admin tools. */
  readonly adminScope: string;
  /** The scopes a token holding `held` needs for a call with these labels; undefined when no configured scope covers them. */
  scopesFor(needs: { network?: string; privilege?: string }, held: readonly string[]): string[] | undefined;
  /** `needed` after the header-safe scopes of `held`. */
  withHeld(needed: readonly string[], held: readonly string[]): string[];
}

/** The one question servers ask about a request's credentials. */
export interface Authenticator {
  /**
   * Authenticate an `Authorization` header value (or gRPC `authorization` metadata); `from.address` is the
   * client's address (the peer's IP), for the limits that count per address.
   */
  authenticate(authorization: string | undefined, from?: { address?: string | undefined }): Promise<Authentication>;
  /** The `WWW-Authenticate` value a 401 carries. */
  challenge(refusal: AuthRefusal): string;
  /** Set when OAuth is configured. */
  readonly protectedResource?: ProtectedResource;
  /** Set when OAuth is configured: the scopes requests need, for 401 and 403 challenges. */
  readonly stepUp?: StepUp;
}

/**
 * The `toolhost_server_refused_total` reason of a refusal: `unauthenticated` (401), `auth_rate_limited` (429),
 * `auth_busy` (503, too many checks waiting), `auth_unavailable` (503, the authorization server is away).
 */
export function refusedReason(refusal: AuthRefusal): 'unauthenticated' | 'auth_rate_limited' | 'auth_busy' | 'auth_unavailable' {
  if (refusal.status === 401) return 'unauthenticated';
  if (refusal.status === 429) return 'auth_rate_limited';
  return refusal.reason === 'busy' ? 'auth_busy' : 'auth_unavailable';
}

/** What a caller's calls carry into the call path. */
export function callerOptions(caller: Caller): Pick<CallOptions, 'principal' | 'tenant' | 'labelCeiling'> {
  return {
    principal: caller.principal,
    ...(caller.tenant === undefined ? {} : { tenant: caller.tenant }),
    ...(caller.labelCeiling === undefined ? {} : { labelCeiling: caller.labelCeiling }),
  };
}

/** The token of an `Authorization: Bearer <token>` value, or undefined. */
export function bearerOf(authorization: string | undefined): string | undefined {
  const match = typeof authorization === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization) : null;
  return match?.[1];
}
