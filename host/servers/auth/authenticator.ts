/**
 * The servers' {@link Authenticator} from their options: static tokens
 * (`bearerToken`, `tokens`), OAuth access tokens (`oauth`), or both.
 *
 * Guarantees: a static token is tried first, in constant time over the whole
 * table (../principals.ts); anything else goes to the OAuth verifier when one
 * is configured, which never accepts a principal a static token names. With
 * neither configured there is no authenticator (the server is open, as before).
 * One OAuth verifier may serve several servers (`oauthVerifier`): `toolhost
 * serve` makes one for MCP HTTP and gRPC, so the issuer's metadata and key set
 * are fetched and cached once.
 *
 * It does not read the environment or the config file: `toolhost serve`
 * resolves those and passes values.
 */
import { TokenTable, type TokenOptions } from '../principals.js';
import { bearerOf, type AuthRefusal, type Authentication, type Authenticator, type ProtectedResource } from './caller.js';
import type { IntrospectionStats } from './introspection.js';
import { JwtAccessTokens } from './jwt-access-tokens.js';
import { resolveOAuthOptions, type OAuthOptions, type ResolvedOAuth } from './oauth-options.js';
import { bearerChallenge, protectedResourceOf } from './protected-resource.js';
import { stepUpOf } from './step-up.js';

export interface AuthOptions extends TokenOptions {
  /** OAuth 2.1 access tokens (JWTs) beside or instead of static tokens. */
  oauth?: OAuthOptions | undefined;
  /**
   * An OAuth verifier shared with another server ({@link createOAuthVerifier}): one discovery and
   * one key set for both (instead of `oauth`, which makes one per server).
   */
  oauthVerifier?: OAuthVerifier | undefined;
}

/** Checks OAuth access tokens; one may serve several servers (MCP HTTP and gRPC). */
export interface OAuthVerifier {
  readonly options: ResolvedOAuth;
  /** Whether no access token may name `principal` (a static token's). */
  reserves(principal: string): boolean;
  /** `address`: the client's, for introspection's per-address rate. */
  verify(token: string, address?: string): Promise<Authentication>;
  /** What introspection did so far (undefined without it): for the metrics. */
  readonly introspectionStats?: IntrospectionStats | undefined;
}

/**
 * One verifier for `oauth`, to share between servers: `reserved` are the principals no access token
 * may name (every static token's principal on any server it serves). Throws a TypeError naming a bad option.
 */
export function createOAuthVerifier(oauth: OAuthOptions, reserved: Iterable<string>): OAuthVerifier {
  return new JwtAccessTokens(resolveOAuthOptions(oauth), reserved);
}

/** The authenticator of these options, or undefined when they configure none. Throws a TypeError naming a bad option. */
export function createAuthenticator(options: AuthOptions): Authenticator | undefined {
  const tokens = TokenTable.from(options);
  if (options.oauth !== undefined && options.oauthVerifier !== undefined) throw new TypeError('options.oauth and options.oauthVerifier: pass one of them');
  const shared = options.oauthVerifier;
  const unreserved = shared === undefined ? undefined : tokens?.principals.find((principal) => !shared.reserves(principal));
  if (unreserved !== undefined) throw new TypeError(`options.oauthVerifier must reserve this server's static principals (it does not reserve "${unreserved}")`);
  const verifier: OAuthVerifier | undefined = shared ?? (options.oauth === undefined ? undefined : createOAuthVerifier(options.oauth, tokens?.principals ?? []));
  if (tokens === undefined && verifier === undefined) return undefined;
  const oauth = verifier?.options;
  const resource: ProtectedResource | undefined = oauth === undefined ? undefined : protectedResourceOf(oauth);
  const missing: AuthRefusal = { ok: false, status: 401, reason: 'missing', message: 'a valid bearer token is required' };
  const stepUp = oauth === undefined ? undefined : stepUpOf(oauth);
  return {
    ...(resource === undefined ? {} : { protectedResource: resource }),
    ...(stepUp === undefined ? {} : { stepUp }),
    async authenticate(authorization: string | undefined, from?: { address?: string | undefined }): Promise<Authentication> {
      const token = bearerOf(authorization);
      const principal = tokens?.principalOf(authorization);
      if (principal !== undefined) return { ok: true, caller: { principal, scopes: [], kind: 'static' } };
      if (token === undefined) return missing;
      if (verifier === undefined) return { ok: false, status: 401, error: 'invalid_token', reason: 'unknown', message: 'the bearer token is not valid' };
      return verifier.verify(token, from?.address);
    },
    challenge: (refusal) => bearerChallenge(refusal, resource, stepUp?.entryScopes),
  };
}
