/**
 * RFC 9728 protected-resource metadata for this server, and the
 * `WWW-Authenticate` challenge (RFC 6750, with RFC 9728's `resource_metadata`)
 * a 401 carries, so an MCP client can find the authorization server.
 *
 * Guarantees: the document names exactly the configured resource URI and
 * issuer, and is built once; the challenge's quoted values hold no `"` or `\`
 * (they are replaced), so a message can never break the header's syntax.
 *
 * It does not serve anything: mcp-http.ts serves the document at
 * {@link ProtectedResource.paths} without authentication.
 */
import type { AuthRefusal, ProtectedResource } from './caller.js';
import type { ResolvedOAuth } from './oauth-options.js';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** The metadata of the resource `oauth.audience`, protected by tokens of `oauth.issuer`. */
export function protectedResourceOf(oauth: ResolvedOAuth): ProtectedResource {
  const resource = new URL(oauth.audience);
  const suffix = resource.pathname === '/' ? '' : resource.pathname.replace(/\/$/, '');
  const scopes = oauth.scopeLabels === undefined ? [] : [...oauth.scopeLabels.keys()];
  const document: Record<string, unknown> = {
    resource: oauth.audience,
    authorization_servers: [oauth.issuer],
    bearer_methods_supported: ['header'],
    ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
    ...(oauth.resourceName === undefined ? {} : { resource_name: oauth.resourceName }),
  };
  return {
    document: Object.freeze(document),
    paths: suffix === '' ? [WELL_KNOWN] : [WELL_KNOWN, `${WELL_KNOWN}${suffix}`],
    url: `${resource.origin}${WELL_KNOWN}${suffix}`,
  };
}

/**
 * `Bearer [resource_metadata="..."][, scope="..."][, error="invalid_token", error_description="..."]`: `scope` names
 * the entry scopes (step-up.ts), so a client's authorization-code flow asks for those, not for every scope listed.
 */
export function bearerChallenge(refusal: AuthRefusal, resource: ProtectedResource | undefined, scopes: readonly string[] = []): string {
  const parts: string[] = [];
  if (resource !== undefined) parts.push(`resource_metadata="${quoted(resource.url)}"`);
  if (scopes.length > 0) parts.push(`scope="${quoted(scopes.join(' '))}"`);
  if (refusal.error !== undefined) parts.push(`error="${refusal.error}"`, `error_description="${quoted(refusal.message)}"`);
  return parts.length === 0 ? 'Bearer' : `Bearer ${parts.join(', ')}`;
}

function quoted(text: string): string {
  return text.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}
