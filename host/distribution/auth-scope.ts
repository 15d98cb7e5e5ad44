/**
 * Where a registry's credential may be sent: the one security decision about
 * credentials in the distribution room (oci-client.ts applies it).
 *
 * A registry answers 401 with a challenge. `Basic`: the credential goes to the
 * registry itself. `Bearer realm="URL"`: the registry names a token service,
 * and docker sends the registry's credential to whatever realm is named. We
 * do not: a realm is a URL in a response header, and the credential — often
 * a password reused elsewhere, or a cloud account's token — would go to a
 * host the user never chose (a stale auth host whose name was taken over, a
 * misconfigured or compromised registry front). So the credential goes to the
 * realm only when
 *
 * 1. the realm is the registry's own origin (scheme, host and port), or
 * 2. the realm's host is one docker users already send that registry's
 *    credential to by design — Docker Hub's `auth.docker.io`, GitLab.com's
 *    `gitlab.com` — over https, or
 * 3. the operator lists the realm's host for that registry in
 *    `distribution.token_realms` (`{ "registry.example.com": ["auth.example.com"] }`),
 *    over https (plain http only to a loopback realm).
 *
 * Otherwise the token is asked for anonymously (public repositories still
 * pull); if the service refuses, the error says which host was withheld the
 * credential and how to list it. Guarantees: the decision is made per request
 * from the realm URL as parsed (no suffix or substring matching: `auth.docker.io.evil`
 * is not `auth.docker.io`); a listed realm host is also reachable when its
 * address is private (as the registry's own host is), which an unlisted host
 * is not. Not guaranteed: what the token service does with the credential,
 * and that a token it issues is scoped as asked (the registry decides).
 */
import { isLoopbackHost } from './source.js';

/** Realm hosts that receive a registry's credential by design (docker's behaviour for these registries). */
const KNOWN_REALMS: Readonly<Record<string, readonly string[]>> = {
  'docker.io': ['auth.docker.io'],
  'index.docker.io': ['auth.docker.io'],
  'registry-1.docker.io': ['auth.docker.io'],
  'registry.gitlab.com': ['gitlab.com'],
};

/** `distribution.token_realms`: by registry (`host[:port]`), the realm hosts (`host[:port]`) it may send credentials to. */
export type TokenRealms = Readonly<Record<string, readonly string[]>>;

/** The realm hosts `registry` may send its credential to: the known ones and the configured ones. */
export function listedRealms(registry: string, configured: TokenRealms = {}): string[] {
  return [...(KNOWN_REALMS[registry] ?? []), ...(configured[registry] ?? [])];
}

/**
 * Whether the token realm `realm` may receive the credential of the registry at `registryOrigin` (whose realm
 * hosts `listed` are, from {@link listedRealms}).
 */
export function realmMayReceiveCredential(registryOrigin: string, realm: URL, listed: readonly string[]): boolean {
  if (realm.origin === new URL(registryOrigin).origin) return true;
  const secure = realm.protocol === 'https:' || (realm.protocol === 'http:' && isLoopbackHost(realm.hostname));
  return secure && (listed.includes(realm.host) || (realm.port === '' && listed.includes(realm.hostname)));
}
