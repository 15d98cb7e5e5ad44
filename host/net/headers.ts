/**
 * Header names the host owns: callers (a guest, a native tool's config) never
 * set them, and the transport never hands them back to a guest. Compared
 * lower-case.
 */

/**
 * The hop-by-hop fields and `host` (wasmtime's default forbidden list). `host`
 * is the transport's: letting a caller choose it would let a request for an
 * allowlisted name reach another site on the same server. The proxy fields
 * are dropped because the pinned client never talks to a proxy: a
 * `proxy-authorization` would only leak a credential to the origin.
 */
export const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'http2-settings',
]);

/**
 * What the pinned client drops from a caller's headers: the forbidden fields
 * plus the framing it computes from the body it sends (`content-length`,
 * `expect`; undici refuses a caller's `expect` and checks `content-length`
 * against the body).
 */
export const CLIENT_MANAGED_HEADERS: ReadonlySet<string> = new Set([...FORBIDDEN_HEADERS, 'content-length', 'expect']);
