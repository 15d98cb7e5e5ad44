/**
 * Remote component sources as written wherever a component path is accepted:
 *
 * - `oci://REGISTRY/REPO:TAG` and `oci://REGISTRY/REPO@sha256:HEX` (a tag is
 *   resolved once, then everything is fetched by digest);
 * - `https://HOST/PATH.wasm#sha256=HEX`: a URL must carry the digest of its bytes.
 *
 * Plain http (an `http://` URL, or an OCI registry spoken to over http) only
 * for loopback hosts and for registries listed in
 * `distribution.insecure_registries`; that rule is {@link plainHttpAllowed},
 * applied by the client to every hop (redirects included). Parsing never
 * touches the network.
 */
import { isIP } from 'node:net';
import { ToolhostError } from '../base/errors.js';

/** An OCI reference: a registry (`host[:port]`), a repository, and a tag or a digest. */
export interface OciSource {
  kind: 'oci';
  /** As written (for messages and the lock file). */
  text: string;
  registry: string;
  repository: string;
  tag?: string;
  /** `sha256:<hex>` when pinned. */
  digest?: string;
}

/** An https (or loopback http) URL with the sha256 of its bytes. */
export interface UrlSource {
  kind: 'url';
  text: string;
  /** The URL without its fragment. */
  url: string;
  /** `sha256:<hex>`. */
  digest: string;
}

export type RemoteSource = OciSource | UrlSource;

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** The distribution spec's repository name grammar (path components of lower-case alphanumerics and separators). */
const REPOSITORY = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** Whether a component path names a remote source (it may still be malformed: {@link parseSource} says). */
export function isRemoteSource(path: string): boolean {
  return /^(oci|https?):\/\//i.test(path);
}

function bad(text: string, why: string): ToolhostError {
  return new ToolhostError('INVALID_INPUT', `invalid component source ${JSON.stringify(text)}: ${why}`, { details: { source: text } });
}

/**
 * Parse a remote source.
 * @throws ToolhostError INVALID_INPUT naming what is wrong with it.
 */
export function parseSource(text: string): RemoteSource {
  if (/^oci:\/\//i.test(text)) return parseOci(text);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad(text, 'not a URL');
  }
  if (url.username !== '' || url.password !== '') throw bad(text, 'credentials in a URL are not accepted');
  const match = /^#sha256=([0-9a-f]{64})$/.exec(url.hash);
  if (!match) throw bad(text, 'a URL must carry the sha256 of its bytes as #sha256=<64 hex digits>');
  url.hash = '';
  return { kind: 'url', text, url: url.href, digest: `sha256:${match[1]}` };
}

function parseOci(text: string): OciSource {
  const rest = text.slice('oci://'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) throw bad(text, 'expected oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:HEX');
  const registry = rest.slice(0, slash).toLowerCase();
  let path = rest.slice(slash + 1);
  let digest: string | undefined;
  let tag: string | undefined;
  const at = path.indexOf('@');
  if (at >= 0) {
    digest = path.slice(at + 1);
    path = path.slice(0, at);
    if (!DIGEST.test(digest)) throw bad(text, 'a digest must be sha256:<64 lower-case hex digits>');
  }
  const colon = path.lastIndexOf(':');
  if (colon >= 0) {
    tag = path.slice(colon + 1);
    path = path.slice(0, colon);
    if (!TAG.test(tag)) throw bad(text, `invalid tag ${JSON.stringify(tag)}`);
  }
  if (tag === undefined && digest === undefined) throw bad(text, 'name a tag (:TAG) or a digest (@sha256:HEX)');
  if (!REPOSITORY.test(path)) throw bad(text, `invalid repository name ${JSON.stringify(path)}`);
  try {
    if (new URL(`https://${registry}/`).host !== registry) throw new Error('host');
  } catch {
    throw bad(text, `invalid registry ${JSON.stringify(registry)}`);
  }
  return { kind: 'oci', text, registry, repository: path, ...(tag === undefined ? {} : { tag }), ...(digest === undefined ? {} : { digest }) };
}

/** A host name (no port, no brackets) is a loopback one: `localhost`, 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1';
}

/**
 * Whether plain http may be spoken to `url`'s host: a loopback host, or a
 * registry (`host[:port]`, or the host alone) listed as insecure.
 */
export function plainHttpAllowed(url: URL, insecureRegistries: readonly string[]): boolean {
  return isLoopbackHost(url.hostname) || insecureRegistries.includes(url.host) || insecureRegistries.includes(url.hostname);
}

/** The source's OCI repository reference with a digest: `oci://REGISTRY/REPO@sha256:HEX`. */
export function pinnedOciText(source: OciSource, digest: string): string {
  return `oci://${source.registry}/${source.repository}@${digest}`;
}

/**
 * Whether `distribution.registries` lets `source` in: an OCI source whose registry (`host[:port]`) is listed, or
 * whose `registry/repository` is a listed prefix (whole path segments: `host/team` allows `host/team/x`, not
 * `host/teamx`); a URL source under a listed URL prefix (same origin, whole path segments).
 */
export function sourceAllowed(source: RemoteSource, allowed: readonly string[]): boolean {
  if (source.kind === 'oci') {
    const full = `${source.registry}/${source.repository}`;
    return allowed.some((entry) => {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) return false;
      const prefix = entry.toLowerCase().replace(/\/+$/, '');
      return prefix === source.registry || full === prefix || full.startsWith(`${prefix}/`);
    });
  }
  const url = new URL(source.url);
  return allowed.some((entry) => {
    let prefix: URL;
    try {
      prefix = new URL(entry);
    } catch {
      return false;
    }
    if (prefix.origin !== url.origin) return false;
    const path = prefix.pathname.endsWith('/') ? prefix.pathname : `${prefix.pathname}/`;
    return url.pathname === prefix.pathname || url.pathname.startsWith(path);
  });
}
