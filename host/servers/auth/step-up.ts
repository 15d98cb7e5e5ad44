/**
 * Step-up authorization (MCP authorization, RFC 6750 section 3.1): which scopes a
 * request needs, said in `WWW-Authenticate` so an OAuth client can ask its
 * authorization server for exactly those.
 *
 * - A 401 names the entry scopes: those `scope_labels` maps to the lowest labels
 *   (a client asks for the least first, not for every scope it saw listed).
 * - A call above its token's ceiling (the labels it would run with, against the
 *   highest over the token's mapped scopes) is HTTP 403 with
 *   `error="insufficient_scope", scope="..."`: the scopes the token holds plus the
 *   least configured ones covering the call's labels (one scope covering both
 *   labels when there is one, else the lowest for each), so the re-authorized
 *   token keeps what it could do. `/metrics` and the admin tools need their own
 *   scope (`metrics_scope`, `admin_scope`) from an access token.
 *
 * Guarantees: a scope put in a header is an RFC 6749 scope token (visible ASCII
 * without `"` or `\`); others a token holds are left out of the header. It does
 * not decide whether a call may run: admission does (the same ceiling, the same
 * audit); this only names what would let it.
 */
import { labelRank, NETWORK_LABELS, PRIVILEGE_LABELS, type NetworkLabel, type PrivilegeLabel } from '../../policy/labels.js';
import type { StepUp } from './caller.js';
import type { ResolvedOAuth } from './oauth-options.js';

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;
/** Scopes a header names at most (a token with more keeps the first ones). */
const MAX_HEADER_SCOPES = 32;

/** The step-up side of an OAuth configuration. */
export function stepUpOf(oauth: ResolvedOAuth): StepUp {
  const labels = oauth.scopeLabels ?? new Map<string, { network?: NetworkLabel; privilege?: PrivilegeLabel }>();
  const rank = (scope: { network?: NetworkLabel; privilege?: PrivilegeLabel }): { network: number; privilege: number } => ({
    network: labelRank(NETWORK_LABELS, scope.network ?? 'DENY_ALL'),
    privilege: labelRank(PRIVILEGE_LABELS, scope.privilege ?? 'MINIMAL'),
  });
  const ranked = [...labels].filter(([scope]) => SCOPE_TOKEN.test(scope)).map(([scope, value]) => ({ scope, ...rank(value) }));
  const lowest = Math.min(...ranked.map((entry) => entry.network + entry.privilege));
  const entryScopes = ranked.filter((entry) => entry.network + entry.privilege === lowest).map((entry) => entry.scope);
  return {
    entryScopes,
    metricsScope: oauth.metricsScope,
    adminScope: oauth.adminScope,
    scopesFor(needs, held) {
      const network = labelRank(NETWORK_LABELS, (needs.network ?? 'DENY_ALL') as NetworkLabel);
      const privilege = labelRank(PRIVILEGE_LABELS, (needs.privilege ?? 'MINIMAL') as PrivilegeLabel);
      const cost = (entry: { network: number; privilege: number }): number => entry.network + entry.privilege;
      const least = <T extends { network: number; privilege: number }>(list: T[]): T | undefined => list.reduce<T | undefined>((best, entry) => (best === undefined || cost(entry) < cost(best) ? entry : best), undefined);
      const both = least(ranked.filter((entry) => entry.network >= network && entry.privilege >= privilege));
      let needed: string[];
      if (both !== undefined) needed = [both.scope];
      else {
        const forNetwork = least(ranked.filter((entry) => entry.network >= network));
        const forPrivilege = least(ranked.filter((entry) => entry.privilege >= privilege));
        if (forNetwork === undefined || forPrivilege === undefined) return undefined;
        needed = [...new Set([forNetwork.scope, forPrivilege.scope])];
      }
      return withHeld(needed, held);
    },
    withHeld,
  };
}

/** `needed` after the scopes the token already holds (header-safe ones only, at most {@link MAX_HEADER_SCOPES}). */
function withHeld(needed: readonly string[], held: readonly string[]): string[] {
  return [...new Set([...held.filter((scope) => SCOPE_TOKEN.test(scope)), ...needed])].slice(-MAX_HEADER_SCOPES);
}

/** `Bearer error="insufficient_scope", scope="...", resource_metadata="...", error_description="..."`. */
export function insufficientScopeChallenge(scopes: readonly string[], description: string, resourceMetadataUrl: string | undefined): string {
  const parts = ['error="insufficient_scope"', `scope="${scopes.join(' ')}"`];
  if (resourceMetadataUrl !== undefined) parts.push(`resource_metadata="${resourceMetadataUrl.replace(/["\\]/g, "'")}"`);
  parts.push(`error_description="${description.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?').slice(0, 200)}"`);
  return `Bearer ${parts.join(', ')}`;
}
