/**
 * A client for one repository of an OCI distribution registry, on net/'s
 * pinned client (undici) and a {@link SourceChecker}.
 *
 * - Auth: a 401's challenge is answered once per client: `Bearer` by asking
 *   the realm for a token (with the registry's Basic credential only where
 *   auth-scope.ts allows it, else anonymously), `Basic` with the credential.
 *   The `Authorization` header goes only to the registry's origin (and an
 *   allowed token realm), on every request: an absolute URL the registry
 *   names (a blob upload's `Location`) on another origin (scheme, host or
 *   port) is sent none, and its 401 is not answered with the credential;
 *   redirects are followed by net/redirects.ts, which drops it when the
 *   origin changes.
 * - Reads are verified while streaming: a manifest by digest and every blob
 *   against its descriptor (sha256 and size), under a size cap; a blob whose
 *   descriptor is over the cap is not requested at all. Bytes are returned only
 *   once they match; nothing is written anywhere here.
 * - A tag is resolved to a digest once ({@link RegistryClient.resolveTag});
 *   the rest is fetched by that digest.
 * - Writes (publish): blob upload (POST, then PUT with the digest) and
 *   manifest PUT.
 */
import { createHash } from 'node:crypto';
import { reportProgress } from '../base/progress.js';
import { EgressError } from '../net/errors.js';
import { followRedirectsStream } from '../net/redirects.js';
import type { EgressStreamResponse } from '../net/pinned-client.js';
import { realmMayReceiveCredential } from './auth-scope.js';
import { SourceChecker } from './checker.js';
import type { Credential } from './credentials.js';
import { integrity, unavailable, untrusted } from './errors.js';
import { MANIFEST_ACCEPT, OCI_INDEX, type Descriptor } from './layout.js';
import { plainHttpAllowed } from './source.js';

/** Caps and settings of a client. */
export interface RegistryClientOptions {
  insecureRegistries: readonly string[];
  credential?: Credential;
  /** Largest manifest (or config blob) read (bytes). */
  maxManifestBytes: number;
  /** Largest layer read (bytes). */
  maxBlobBytes: number;
  /** CA certificates (PEM) to trust instead of Node's (private registries, tests). */
  ca?: string;
  /** Token realm hosts (`host[:port]`) this registry's credential may be sent to (auth-scope.ts `listedRealms`). */
  tokenRealms?: readonly string[];
  signal?: AbortSignal;
}

type Scope = 'pull' | 'pull,push';

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export class RegistryClient {
  readonly registry: string;
  readonly repository: string;
  readonly #options: RegistryClientOptions;
  readonly #checker: SourceChecker;
  readonly #origin: string;
  #authorization: string | undefined;
  /** The token realm host the credential was withheld from (auth-scope.ts), for messages. */
  #withheld: string | undefined;

  constructor(registry: string, repository: string, options: RegistryClientOptions) {
    this.registry = registry;
    this.repository = repository;
    this.#options = options;
    const url = new URL(`http://${registry}/`);
    // Plain http where it is allowed at all (loopback, insecure registries), as docker does; TLS everywhere else.
    this.#origin = `${plainHttpAllowed(url, options.insecureRegistries) ? 'http' : 'https'}://${registry}`;
    // Listed token realms are the operator's choice, as the registry is: reachable even on a private address.
    const realmHosts = (options.tokenRealms ?? []).map((host) => new URL(`http://${host}/`).hostname);
    this.#checker = new SourceChecker([url.hostname, ...realmHosts], options.insecureRegistries);
  }

  get #what(): string {
    return `oci://${this.registry}/${this.repository}`;
  }

  /** The digest a tag names now (asked once; everything else is fetched by digest). */
  async resolveTag(tag: string): Promise<string> {
    const response = await this.#send('HEAD', `manifests/${tag}`, { accept: MANIFEST_ACCEPT });
    await response.body.close();
    if (response.status === 404) throw unavailable(`${this.#what}:${tag}`, 'no such tag in the registry', { status: 404 });
    this.#expectOk(response, `${this.#what}:${tag}`);
    const digest = header(response, 'docker-content-digest');
    if (digest !== undefined && /^sha256:[0-9a-f]{64}$/.test(digest)) return digest;
    // No digest header: read the manifest once and hash it (the bytes hashed are the bytes named).
    const { digest: hashed } = await this.#readManifest(`manifests/${tag}`, `${this.#what}:${tag}`);
    return hashed;
  }

  /** A manifest by digest, verified against it; `undefined` when the registry has none. */
  async manifest(digest: string): Promise<{ bytes: Uint8Array; mediaType: string } | undefined> {
    const what = `${this.#what}@${digest}`;
    const read = await this.#readManifest(`manifests/${digest}`, what, true);
    if (read === undefined) return undefined;
    if (read.digest !== digest) throw integrity('digest-mismatch', what, `the registry served a manifest whose sha256 is ${read.digest}`, { expected: digest, actual: read.digest });
    return { bytes: read.bytes, mediaType: read.mediaType };
  }

  /** A manifest by tag (for signature tags), with the digest of its bytes; `undefined` when there is none. */
  async manifestByTag(tag: string): Promise<{ bytes: Uint8Array; digest: string } | undefined> {
    return this.#readManifest(`manifests/${tag}`, `${this.#what}:${tag}`, true);
  }

  /**
   * The referrers index of `digest` (OCI 1.1): the Referrers API, else (a registry without it, such as
   * distribution 2.8) the `sha256-<hex>` referrers tag; `undefined` when there is none. Unverified bytes: the
   * caller checks every manifest it names against its subject.
   */
  async referrers(digest: string): Promise<Uint8Array | undefined> {
    return await this.#index(`referrers/${digest}`, digest) ?? await this.referrersTag(digest);
  }

  /** The referrers tag (`sha256-<hex>`) of `digest`: the index registries without the Referrers API keep; `undefined` when there is none. */
  async referrersTag(digest: string, scope: Scope = 'pull'): Promise<Uint8Array | undefined> {
    return this.#index(`manifests/${digest.replace(':', '-')}`, digest, scope);
  }

  async #index(path: string, digest: string, scope: Scope = 'pull'): Promise<Uint8Array | undefined> {
    const what = `${this.#what}@${digest} (referrers)`;
    const cap = this.#options.maxManifestBytes;
    const response = await this.#send('GET', path, { accept: OCI_INDEX, maxBodyBytes: cap, what, limit: 'max_manifest_bytes', scope });
    if (response.status === 200) return readAll(response, what, cap, 'max_manifest_bytes');
    if (response.status === 401 || response.status === 403 || response.status >= 500) this.#expectOk(response, what);
    await response.body.close();
    return undefined;
  }

  async #readManifest(path: string, what: string, optional?: false): Promise<{ bytes: Uint8Array; digest: string; mediaType: string }>;
  async #readManifest(path: string, what: string, optional: true): Promise<{ bytes: Uint8Array; digest: string; mediaType: string } | undefined>;
  async #readManifest(path: string, what: string, optional = false): Promise<{ bytes: Uint8Array; digest: string; mediaType: string } | undefined> {
    const cap = this.#options.maxManifestBytes;
    const response = await this.#send('GET', path, { accept: MANIFEST_ACCEPT, maxBodyBytes: cap, what, limit: 'max_manifest_bytes' });
    if (response.status === 404 && optional) {
      await response.body.close();
      return undefined;
    }
    this.#expectOk(response, what);
    const bytes = await readAll(response, what, cap, 'max_manifest_bytes');
    return { bytes, digest: sha256(bytes), mediaType: header(response, 'content-type') ?? '' };
  }

  /**
   * A blob, verified against its descriptor while it streams (size and
   * sha256). `cap` bounds it (`limit` names the cap's config key).
   * @throws SOURCE_INTEGRITY `too-large` when the descriptor is over the cap, `digest-mismatch` when the bytes differ.
   */
  async blob(descriptor: Descriptor, cap: number, limit: string, progressTask?: string): Promise<Uint8Array> {
    const what = `${this.#what}@${descriptor.digest}`;
    if (descriptor.size > cap) {
      throw integrity('too-large', what, `the blob declares ${descriptor.size} bytes, over the cap of ${cap} (distribution.${limit})`, { limitHit: limit, size: descriptor.size, cap });
    }
    const response = await this.#send('GET', `blobs/${descriptor.digest}`, { maxBodyBytes: Math.max(1, descriptor.size), what, limit: 'declared-size' });
    this.#expectOk(response, what);
    // `progressTask`: this blob's bytes are reported as they arrive (base/progress.ts; the component layer of a load).
    const onBytes = progressTask === undefined ? undefined : (done: number): void => reportProgress({ kind: 'bytes', task: progressTask, stage: 'downloading', done, total: descriptor.size });
    const bytes = await readAll(response, what, descriptor.size, 'declared-size', onBytes);
    const actual = sha256(bytes);
    if (bytes.byteLength !== descriptor.size || actual !== descriptor.digest) {
      throw integrity('digest-mismatch', what, `the registry served ${bytes.byteLength} bytes whose sha256 is ${actual}, not the ${descriptor.size} bytes of ${descriptor.digest}`, { expected: descriptor.digest, actual });
    }
    return bytes;
  }

  /** Upload a blob (skipped when the registry has it); returns its descriptor. */
  async pushBlob(bytes: Uint8Array, mediaType: string): Promise<Descriptor> {
    const digest = sha256(bytes);
    const descriptor = { mediaType, digest, size: bytes.byteLength };
    const head = await this.#send('HEAD', `blobs/${digest}`, { scope: 'pull,push' });
    await head.body.close();
    if (head.status === 200) return descriptor;
    const start = await this.#send('POST', 'blobs/uploads/', { scope: 'pull,push' });
    await start.body.close();
    this.#expectStatus(start, [202], `${this.#what} (blob upload)`);
    const location = header(start, 'location');
    if (location === undefined) throw unavailable(this.#what, 'the registry started an upload without a Location');
    const url = new URL(location, `${this.#origin}/v2/${this.repository}/`);
    url.searchParams.set('digest', digest);
    const put = await this.#send('PUT', url.href, { scope: 'pull,push', body: bytes, contentType: 'application/octet-stream' });
    await put.body.close();
    this.#expectStatus(put, [201], `${this.#what} (blob ${digest})`);
    return descriptor;
  }

  /** Put a manifest under a tag (or digest); returns the manifest's digest. */
  async pushManifest(reference: string, bytes: Uint8Array, mediaType: string): Promise<string> {
    return (await this.#putManifest(reference, bytes, mediaType)).digest;
  }

  /**
   * Put a manifest that has a `subject` (a referrer) by its digest. `indexed`: the registry said (`OCI-Subject`)
   * that its Referrers API lists it; otherwise the referrers tag is the pusher's to update (OCI 1.1).
   */
  async pushReferrer(bytes: Uint8Array, mediaType: string): Promise<{ digest: string; indexed: boolean }> {
    return this.#putManifest(sha256(bytes), bytes, mediaType);
  }

  async #putManifest(reference: string, bytes: Uint8Array, mediaType: string): Promise<{ digest: string; indexed: boolean }> {
    const put = await this.#send('PUT', `manifests/${reference}`, { scope: 'pull,push', body: bytes, contentType: mediaType });
    await put.body.close();
    this.#expectStatus(put, [201], `${this.#what}:${reference}`);
    return { digest: sha256(bytes), indexed: header(put, 'oci-subject') !== undefined };
  }

  #expectOk(response: EgressStreamResponse, what: string): void {
    this.#expectStatus(response, [200], what);
  }

  #expectStatus(response: EgressStreamResponse, ok: number[], what: string): void {
    if (ok.includes(response.status)) return;
    void response.body.close();
    const hint = response.status !== 401 && response.status !== 403 ? ''
      : this.#withheld === undefined ? ' (authentication refused: set distribution.auth or log in with docker login)' : ` (authentication refused: ${this.#withheldHint()})`;
    throw unavailable(what, `the registry answered ${response.status}${hint}`, { status: response.status });
  }

  /** One request to the registry (a path under /v2/REPO/, or an absolute URL), answering an auth challenge once. */
  async #send(method: string, path: string, request: { accept?: string; maxBodyBytes?: number; scope?: Scope; body?: Uint8Array; contentType?: string; what?: string; limit?: string }): Promise<EgressStreamResponse> {
    const url = /^https?:\/\//.test(path) ? path : `${this.#origin}/v2/${this.repository}/${path}`;
    const what = request.what ?? this.#what;
    // The registry's Authorization is for the registry's origin only: an absolute URL the registry named (a blob
    // upload's Location) on another origin gets none, and its challenge is not answered with the credential.
    const ours = sameOrigin(url, this.#origin);
    const go = async (): Promise<EgressStreamResponse> => {
      const headers: Array<[string, string]> = [];
      if (request.accept !== undefined) headers.push(['accept', request.accept]);
      if (request.contentType !== undefined) headers.push(['content-type', request.contentType]);
      if (this.#authorization !== undefined && ours) headers.push(['authorization', this.#authorization]);
      return this.#egress(url, method, headers, request.body, request.maxBodyBytes, what, request.limit);
    };
    let response = await go();
    if (response.status !== 401 || !ours) return response;
    const challenge = header(response, 'www-authenticate');
    await response.body.close();
    if (challenge === undefined) return response;
    const answer = await this.#answer(challenge, request.scope ?? 'pull', what);
    if (answer === undefined || answer === this.#authorization) {
      throw unavailable(what, `the registry asks for credentials (${challenge.split(' ')[0]}) and none ${this.#options.credential === undefined ? 'are configured: set distribution.auth or log in with docker login' : 'it accepts were given'}`, { status: 401 });
    }
    this.#authorization = answer;
    response = await go();
    return response;
  }

  async #answer(challenge: string, scope: Scope, what: string): Promise<string | undefined> {
    const scheme = challenge.trim().split(/\s+/)[0]?.toLowerCase();
    const credential = this.#options.credential;
    const basic = credential === undefined ? undefined : `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString('base64')}`;
    if (scheme === 'basic') return basic;
    if (scheme !== 'bearer') return undefined;
    const params = challengeParams(challenge);
    if (params.realm === undefined) return undefined;
    const realm = new URL(params.realm);
    if (params.service !== undefined) realm.searchParams.set('service', params.service);
    realm.searchParams.set('scope', `repository:${this.repository}:${scope}`);
    // The realm gets the Basic credential only where auth-scope.ts allows it (docker sends it to any realm; we do not).
    const allowed = realmMayReceiveCredential(this.#origin, realm, this.#options.tokenRealms ?? []);
    if (basic !== undefined && !allowed) this.#withheld = realm.host;
    const headers: Array<[string, string]> = basic !== undefined && allowed ? [['authorization', basic]] : [];
    const response = await this.#egress(realm.href, 'GET', headers, undefined, 1024 * 1024, what);
    if (response.status !== 200) {
      await response.body.close();
      const hint = this.#withheld === undefined ? '' : `: ${this.#withheldHint()}`;
      throw unavailable(what, `the token service ${realm.host} answered ${response.status}${hint}`, { status: response.status, ...(this.#withheld === undefined ? {} : { withheldFrom: this.#withheld }) });
    }
    const body = JSON.parse(Buffer.from(await readAll(response, what, 1024 * 1024, 'token')).toString('utf8')) as { token?: unknown; access_token?: unknown };
    const token = typeof body.token === 'string' ? body.token : body.access_token;
    return typeof token === 'string' && token !== '' ? `Bearer ${token}` : undefined;
  }

  #withheldHint(): string {
    return `the registry's token service is ${this.#withheld ?? ''}, another host than ${this.registry}, and toolhost sends it the registry's credentials only when distribution.token_realms lists it for ${this.registry}`;
  }

  async #egress(url: string, method: string, headers: Array<[string, string]>, body: Uint8Array | undefined, maxBodyBytes: number | undefined, what: string, limit?: string): Promise<EgressStreamResponse> {
    try {
      return await followRedirectsStream({
        method,
        url,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
        ...(this.#options.ca === undefined ? {} : { ca: this.#options.ca }),
        ...(this.#options.signal === undefined ? {} : { signal: this.#options.signal }),
      }, this.#checker);
    } catch (error) {
      throw fromEgress(error, what, limit);
    }
  }
}

function fromEgress(error: unknown, what: string, limit: string | undefined): unknown {
  if (!(error instanceof EgressError)) return error;
  if (error.kind === 'body-too-large') {
    return limit === 'declared-size'
      ? integrity('digest-mismatch', what, 'the registry served more bytes than the descriptor declares')
      : integrity('too-large', what, `${error.message} (distribution.${limit ?? 'max_manifest_bytes'})`, { limitHit: limit ?? 'max_manifest_bytes' });
  }
  if (error.toolhostCode === 'NETWORK_DENIED' && error.decision?.cause === 'scheme') return untrusted('insecure', what, error.message);
  return unavailable(what, error.message, { network: error.kind }, error);
}

async function readAll(response: EgressStreamResponse, what: string, cap: number, limit: string, onBytes?: (done: number) => void): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of response.body) {
      chunks.push(chunk);
      total += chunk.byteLength;
      onBytes?.(total);
    }
  } catch (error) {
    throw fromEgress(error, what, limit);
  }
  if (total > cap) throw integrity('too-large', what, `over the cap of ${cap} bytes`, { limitHit: limit });
  return Buffer.concat(chunks, total);
}

/** Whether `url` is on `origin` (scheme, host and port; default ports folded as URL does). */
function sameOrigin(url: string, origin: string): boolean {
  try {
    return new URL(url).origin === new URL(origin).origin;
  } catch {
    return false;
  }
}

function header(response: EgressStreamResponse, name: string): string | undefined {
  return response.headers.find(([key]) => key === name)?.[1];
}

/** `Bearer realm="…",service="…",scope="…"` → its parameters. */
function challengeParams(challenge: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const match of challenge.matchAll(/([A-Za-z]+)="([^"]*)"/g)) params[match[1]!.toLowerCase()] = match[2]!;
  return params;
}
