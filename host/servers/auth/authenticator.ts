/**
 * The servers' {@link Authenticator} from their options: static tokens
 * (`bearerToken`, `tokens`), OAuth access tokens (`oauth`), or both.
 *
 * Guarantees: a static token is tried first, in constant time over the whole
 * table (../principals.ts); anything else goes to the OAuth verifier when one
 * is configured, which never accepts a principal a static token names. With
 * neither configured there is no authenticator (the server is open, as before).
 *
 * It does not read the environment or the config file: `toolhost serve`
 * resolves those and passes values.
 */
import { TokenTable, type TokenOptions } from '../principals.js';
import { bearerOf, type AuthRefusal, type Authentication, type Authenticator, type ProtectedResource } from './caller.js';
import { JwtAccessTokens } from './jwt-access-tokens.js';
import { resolveOAuthOptions, type OAuthOptions } from './oauth-options.js';
import { bearerChallenge, protectedResourceOf } from './protected-resource.js';

export interface AuthOptions extends TokenOptions {
  /** OAuth 2.1 access tokens (JWTs) beside or instead of static tokens. */
  oauth?: OAuthOptions | undefined;
}

/** The authenticator of these options, or undefined when they configure none. Throws a TypeError naming a bad option. */
export function createAuthenticator(options: AuthOptions): Authenticator | undefined {
  const tokens = TokenTable.from(options);
  const oauth = options.oauth === undefined ? undefined : resolveOAuthOptions(options.oauth);
  if (tokens === undefined && oauth === undefined) return undefined;
  const verifier = oauth === undefined ? undefined : new JwtAccessTokens(oauth, tokens?.principals ?? []);
  const resource: ProtectedResource | undefined = oauth === undefined ? undefined : protectedResourceOf(oauth);
  const missing: AuthRefusal = { ok: false, status: 401, reason: 'missing', message: 'a valid bearer token is required' };
  return {
    ...(resource === undefined ? {} : { protectedResource: resource }),
    async authenticate(authorization: string | undefined): Promise<Authentication> {
      const token = bearerOf(authorization);
      const principal = tokens?.principalOf(authorization);
      if (principal !== undefined) return { ok: true, caller: { principal, scopes: [], kind: 'static' } };
      if (token === undefined) return missing;
      if (verifier === undefined) return { ok: false, status: 401, error: 'invalid_token', reason: 'unknown', message: 'the bearer token is not valid' };
      return verifier.verify(token);
    },
    challenge: (refusal) => bearerChallenge(refusal, resource),
  };
}
