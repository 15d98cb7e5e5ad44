/**
 * Where an authorization server's keys are: RFC 8414 metadata
 * (`/.well-known/oauth-authorization-server` inserted before the issuer's
 * path), then OpenID Connect discovery (`<issuer>/.well-known/openid-configuration`)
 * when the first is not there.
 *
 * Guarantees: the metadata's `issuer` must equal the configured issuer
 * (RFC 8414 §3.3: metadata of another issuer is never used); its `jwks_uri`
 * must be https (http only on loopback); no redirect is followed; a request
 * takes at most `timeoutMs` and a document at most 256 KiB. The key set's own
 * fetch (jose's, through {@link cappedFetch}) reads at most `maxJwksBytes`.
 *
 * It does not cache: jwt-access-tokens.ts keeps the answer and decides when
 * to ask again.
 */
import { fetchableUrl } from './oauth-options.js';

const MAX_METADATA_BYTES = 256 * 1024;

/** The authorization server could not tell where its keys are (unreachable, or metadata that does not fit). */
export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
}

/** The `jwks_uri` the issuer publishes. Throws a {@link DiscoveryError}. */
export async function discoverJwksUri(issuer: string, timeoutMs: number): Promise<URL> {
  const base = new URL(issuer);
  const path = base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '');
  const candidates = [
    new URL(`/.well-known/oauth-authorization-server${path}`, base.origin),
    new URL(`${path}/.well-known/openid-configuration`, base.origin),
  ];
  const problems: string[] = [];
  for (const url of candidates) {
    let metadata: unknown;
    try {
      metadata = await fetchMetadata(url, timeoutMs);
    } catch (error) {
      problems.push(`${url.href}: ${(error as Error).message}`);
      continue;
    }
    if (metadata === undefined) {
      problems.push(`${url.href}: 404`);
      continue;
    }
    const record = typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>) : {};
    if (record.issuer !== issuer) throw new DiscoveryError(`${url.href} describes issuer ${JSON.stringify(record.issuer)}, not ${JSON.stringify(issuer)}`);
    if (typeof record.jwks_uri !== 'string') throw new DiscoveryError(`${url.href} has no jwks_uri`);
    try {
      return fetchableUrl(record.jwks_uri, `${url.href} jwks_uri`);
    } catch (error) {
      throw new DiscoveryError((error as Error).message);
    }
  }
  throw new DiscoveryError(`no authorization server metadata for ${issuer} (${problems.join('; ')})`);
}

/** The JSON at `url`, or undefined when it answers 404. */
async function fetchMetadata(url: URL, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  if (response.status === 404) {
    await response.body?.cancel();
    return undefined;
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new DiscoveryError(`answered ${response.status}`);
  }
  const body = await readCapped(response, MAX_METADATA_BYTES, 'the metadata');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new DiscoveryError('the metadata is not JSON');
  }
}

/** A response's body, read up to `maxBytes` (a {@link DiscoveryError} past it; the rest is never read). */
export async function readCapped(response: Response, maxBytes: number, what: string): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new DiscoveryError(`${what} is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += (chunk as Uint8Array).byteLength;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new DiscoveryError(`${what} is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Uint8Array);
  }
  return Buffer.concat(chunks);
}

/**
 * A fetch for jose's remote key set (its `customFetch`) that reads at most
 * `maxBytes` of the key set: a larger answer fails (the token cannot be
 * checked now: 503), instead of being buffered whole.
 */
export function cappedFetch(maxBytes: number): (url: string, init: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const response = await fetch(url, { ...init, redirect: 'manual' });
    const body = await readCapped(response, maxBytes, 'the key set');
    return new Response(body, { status: response.status, headers: response.headers });
  };
}
