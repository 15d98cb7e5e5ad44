/**
 * Fetching a remote component (`oci://`, `https://…#sha256=`) into verified
 * bytes, the one pipeline every entry point uses (config tools, `--load`,
 * `registerWasmTools`):
 *
 * 1. parse; refuse at once a source with no trust configured (fail closed:
 *    no keys and no explicit skip) — before any network traffic;
 * 2. OCI: the manifest digest (pinned in the source, else in toolhost.lock,
 *    else the tag resolved once); the manifest by that digest (from the store when it holds it for this
 *    repository: no network), checked against the digest and the CNCF Wasm layout;
 * 3. a signature of exactly that digest under this repository's name by a
 *    trusted key (signature-policy.ts; cosign's tag form or a Sigstore bundle
 *    referrer, see signatures.ts; or the signatures stored with the manifest) —
 *    before the component's layer is even fetched;
 * 4. config and layer blobs, each verified against its descriptor while it
 *    streams, under the size caps;
 * 5. only then is anything stored, and the layer handed to the loader, whose
 *    transpile cache is keyed by the same sha256.
 *
 * A URL source is pinned by the digest in its fragment: that digest, chosen
 * by whoever wrote the config, is its trust; its bytes must match it, and they
 * are fetched from that URL unless the store records that this exact URL
 * served them before.
 *
 * The store answers a request only for a source it recorded (store.ts): a
 * digest fetched (or loaded under verify.skip) for one source is no answer
 * for another that names it, so no spelling of a source reaches a component
 * that was not fetched and accepted for that source.
 *
 * Bounded: one deadline over the whole load (`distribution.load_timeout_ms`,
 * default 2 min: every request, stream read and the credential helper take
 * its signal), and the caller's signal (Ctrl-C, a call's cancel, a shutdown).
 * Past the deadline the load is SOURCE_UNAVAILABLE (`deadline`, a limit hit);
 * aborted by its caller, CANCELLED; either way nothing more is stored.
 */
import { basename } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import { reportProgress } from '../base/progress.js';
import { listedRealms } from './auth-scope.js';
import type { BundleTrust } from './bundle.js';
import { credentialFor } from './credentials.js';
import { integrity, unavailable, untrusted } from './errors.js';
import { componentLayer, parseImageManifest } from './layout.js';
import { RegistryClient } from './oci-client.js';
import { DEFAULT_LOAD_TIMEOUT_MS, DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_MAX_SIGNATURE_BYTES, DEFAULT_MAX_SIGNATURE_LAYERS, type DistributionOptions, type TrustPolicy } from './options.js';
import type { LockEntry } from './lock.js';
import { parseSource, pinnedOciText, plainHttpAllowed, sourceAllowed, type OciSource, type RemoteSource, type UrlSource } from './source.js';
import { sameSignature, verifyAttestations, verifyRegistrySignatures, verifySignatures } from './signatures.js';
import { ChunkStore } from '../base/chunk-store.js';
import { ComponentStore, type StoredSignature } from './store.js';
import { trustOf } from './trust.js';
import { fetchUrl } from './url-fetch.js';

/** A fetched, verified component. */
export interface FetchedComponent {
  /** The component's name (the repository's last segment, or the file name without `.wasm`). */
  name: string;
  /** The source as written. */
  source: string;
  bytes: Uint8Array;
  /** `sha256:<hex>` of the bytes (the layer). */
  digest: string;
  /** OCI only: the manifest digest the signature was checked against. */
  manifestDigest?: string;
  /** The key file whose signature was accepted; `skipped` when verification was skipped; `pinned` for a URL's digest. */
  signedBy: string;
  /** The accepted key's fingerprint (`sha256:` of its SPKI), when a signature was verified. */
  signerFingerprint?: string;
}

/** The lock entry a fetched component stands for (see lock.ts). */
export function lockEntryOf(fetched: FetchedComponent): LockEntry {
  return {
    pinned: fetched.manifestDigest === undefined ? fetched.source : pinnedOciText(parseSource(fetched.source) as OciSource, fetched.manifestDigest),
    ...(fetched.manifestDigest === undefined ? {} : { manifestDigest: fetched.manifestDigest }),
    layerDigest: fetched.digest,
    size: fetched.bytes.byteLength,
    signer: fetched.signerFingerprint ?? fetched.signedBy,
  };
}

/** The reason a load's deadline aborts its requests with. */
class LoadDeadline extends Error {
  override readonly name = 'LoadDeadline';
  constructor(timeoutMs: number) {
    super(`the load's deadline of ${timeoutMs} ms passed (distribution.load_timeout_ms)`);
  }
}

/** An OCI source as the store records it: its registry and repository, whatever tag or digest named it. */
export function ociStoreSource(source: OciSource): string {
  return `oci://${source.registry}/${source.repository}`;
}

/** Fetches remote components with one host's settings. */
export class RemoteFetcher {
  readonly #options: DistributionOptions;
  readonly #store: ComponentStore;
  readonly #logger: Logger;
  readonly #env: NodeJS.ProcessEnv;

  /** `chunksDir`: where the store keeps large blobs' chunks (the transpile cache's, to share them: compose/registry.ts). */
  constructor(options: DistributionOptions & { storeDir: string; chunksDir?: string }, logger: Logger, env: NodeJS.ProcessEnv = process.env) {
    this.#options = options;
    this.#store = new ComponentStore(options.storeDir, options.chunksDir === undefined ? undefined : new ChunkStore(options.chunksDir));
    this.#logger = logger;
    this.#env = env;
  }

  get store(): ComponentStore {
    return this.#store;
  }

  /**
   * Fetch and verify `text` under `trust` (the load's own, else the global one). `runtime`: a load a client
   * asked for (the admin load tool): only from `distribution.registries` (none when unset), never unverified.
   */
  async fetch(text: string, trust: TrustPolicy | undefined, signal?: AbortSignal, runtime = false): Promise<FetchedComponent> {
    const source = parseSource(text);
    const timeoutMs = this.#options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
    if (signal?.aborted === true) throw this.#abortError(text, signal, timeoutMs);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new LoadDeadline(timeoutMs)), timeoutMs);
    const bounded = signal === undefined ? deadline.signal : AbortSignal.any([signal, deadline.signal]);
    // Every request, the credential helper and the stream reads take `bounded`; the race settles the load at the
    // abort even where a step cannot be interrupted (a DNS lookup), and what it still does then is dropped.
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_resolve, reject) => {
      onAbort = (): void => reject(this.#abortError(text, signal, timeoutMs));
      bounded.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    let ok = false;
    try {
      const fetched = await Promise.race([this.#fetch(source, text, trust, bounded, runtime), aborted]);
      ok = true;
      return fetched;
    } catch (error) {
      if (bounded.aborted) throw this.#abortError(text, signal, timeoutMs);
      throw error;
    } finally {
      reportProgress({ kind: 'end', task: text, ok });
      clearTimeout(timer);
      if (onAbort !== undefined) bounded.removeEventListener('abort', onAbort);
    }
  }

  /** The error a load ends with when its caller aborted it (CANCELLED) or its deadline passed (SOURCE_UNAVAILABLE). */
  #abortError(text: string, caller: AbortSignal | undefined, timeoutMs: number): ToolhostError {
    if (caller?.aborted === true) {
      return new ToolhostError('CANCELLED', `${text}: the load was cancelled by its caller`, { details: { source: text, reason: 'aborted' } });
    }
    return unavailable(text, `the load did not finish within ${timeoutMs} ms (distribution.load_timeout_ms): the registry or server is too slow or stalled`, { reason: 'deadline', limitHit: 'load_timeout_ms', timeoutMs });
  }

  async #fetch(source: RemoteSource, text: string, trust: TrustPolicy | undefined, signal: AbortSignal, runtime: boolean): Promise<FetchedComponent> {
    const allowed = this.#options.registries;
    if (allowed === undefined ? runtime : !sourceAllowed(source, allowed)) {
      const why = allowed === undefined ? 'a component loaded at runtime must come from a source distribution.registries lists, and none is listed' : `distribution.registries does not list its ${source.kind === 'oci' ? 'registry or repository' : 'URL prefix'} (${allowed.join(', ') || 'nothing is listed'})`;
      throw untrusted('not-allowed', text, `${why}: it is refused before any request`);
    }
    if (source.kind === 'url') return this.#url(source, signal);
    const policy = trust ?? this.#options.verify ?? {};
    if (runtime && policy.skip === true) {
      throw untrusted('no-trust', text, 'a component loaded at runtime is always verified (verify.skip / --insecure-skip-verify does not apply to it): name the publisher\'s key in distribution.verify.keys');
    }
    return this.#oci(source, policy.skip === true ? { keys: [], references: [] } : trustOf(policy, text), policy.skip === true, signal);
  }

  async #client(source: OciSource, signal: AbortSignal): Promise<RegistryClient> {
    const insecure = this.#options.insecureRegistries ?? [];
    const lookup = { helperTimeoutMs: this.#options.credentialHelperTimeoutMs, helperMaxBytes: this.#options.credentialHelperMaxBytes, signal };
    const credential = await credentialFor(source.registry, this.#options.auth, this.#env, lookup, source.text);
    return new RegistryClient(source.registry, source.repository, {
      insecureRegistries: insecure,
      maxManifestBytes: this.#options.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES,
      maxBlobBytes: this.#options.maxComponentBytes ?? DEFAULT_MAX_COMPONENT_BYTES,
      ...(credential === undefined ? {} : { credential }),
      ...(this.#options.ca === undefined ? {} : { ca: this.#options.ca }),
      signal,
      tokenRealms: listedRealms(source.registry, this.#options.tokenRealms),
    });
  }

  async #oci(source: OciSource, trust: BundleTrust, skip: boolean, signal: AbortSignal): Promise<FetchedComponent> {
    const maxManifest = this.#options.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
    const maxComponent = this.#options.maxComponentBytes ?? DEFAULT_MAX_COMPONENT_BYTES;
    const client = await this.#client(source, signal);
    // A pinned digest the store holds needs no registry at all; a locked tag is not resolved again.
    const pin = source.digest === undefined ? this.#options.lock?.[source.text] : undefined;
    if (source.digest === undefined && pin === undefined) reportProgress({ kind: 'stage', task: source.text, stage: `resolving ${source.tag!}` });
    const digest = source.digest ?? pin?.manifestDigest ?? await client.resolveTag(source.tag!);
    const what = `oci://${source.registry}/${source.repository}@${digest}`;
    // The store answers only for a source it was fetched for (store.ts): another repository naming the digest asks its
    // registry. toolhost.lock (host-owned, written by pull) pinning this very source to this digest counts too: a store
    // written before the records existed still starts offline.
    const known = (await this.#store.recordsFor(digest, ociStoreSource(source))).length > 0 || this.#options.lock?.[source.text]?.manifestDigest === digest;
    const stored = known ? await this.#store.get(digest) : undefined;
    const manifestBytes = stored ?? (await client.manifest(digest))?.bytes;
    if (manifestBytes === undefined) throw unavailable(what, 'the registry has no such manifest');
    const manifest = parseImageManifest(manifestBytes, what);
    const layer = componentLayer(manifest, what);
    if (pin !== undefined && pin.layerDigest !== layer.digest) {
      throw integrity('digest-mismatch', what, `toolhost.lock pins the layer ${pin.layerDigest}, but the manifest names ${layer.digest}: run toolhost update ${source.text}`, { expected: pin.layerDigest, actual: layer.digest });
    }

    let signer: { key: string; fingerprint?: string; signature?: StoredSignature } = { key: 'skipped' };
    let signatures: StoredSignature[] = [];
    if (skip) {
      this.#logger.warn({ source: source.text, digest }, 'loading a remote component WITHOUT verifying its signature (--insecure-skip-verify / verify.skip)');
    } else {
      // Kept signatures first (offline); when none of them is accepted, the registry's (a re-signed or rotated
      // key), each checked as it is fetched, unless the registry cannot be reached: then the kept ones' refusal
      // stands. Of the registry's, only the accepted one is kept (beside those kept before, each accepted once).
      reportProgress({ kind: 'stage', task: source.text, stage: 'verifying the signature' });
      const kept = stored === undefined ? [] : await this.#store.signatures(digest);
      let refusal: unknown;
      try {
        if (kept.length > 0) signer = verifySignatures(kept, manifestBytes, digest, trust, what);
      } catch (error) {
        refusal = error;
      }
      const limits = { maxLayers: this.#options.maxSignatureLayers ?? DEFAULT_MAX_SIGNATURE_LAYERS, maxPayloadBytes: this.#options.maxSignatureBytes ?? DEFAULT_MAX_SIGNATURE_BYTES };
      if (kept.length === 0 || refusal !== undefined) {
        signer = await verifyRegistrySignatures(client, digest, manifestBytes, trust, limits, what).catch((error: unknown) => {
          throw refusal ?? error;
        });
      }
      const accepted = signer.signature;
      if (accepted !== undefined) signatures = [accepted, ...kept.filter((entry) => !sameSignature(entry, accepted))];
      // Attestations a policy requires beside the signature (kept with it, for offline loads).
      const attested = await verifyAttestations(kept, client, digest, manifestBytes, trust, limits, what);
      signatures = [...signatures, ...attested.filter((entry) => !signatures.some((other) => sameSignature(entry, other)))];
    }

    const config = (await this.#store.get(manifest.config.digest)) ?? await client.blob(manifest.config, maxManifest, 'max_manifest_bytes');
    if (layer.size > maxComponent) {
      throw integrity('too-large', what, `the component declares ${layer.size} bytes, over the cap of ${maxComponent} (distribution.max_component_bytes)`, { limitHit: 'max_component_bytes', size: layer.size });
    }
    const bytes = (await this.#store.get(layer.digest)) ?? await client.blob(layer, maxComponent, 'max_component_bytes', source.text);
    // Everything matched: keep it (blobs first, the manifest last, so a stored manifest's blobs are there) — unless
    // the load was given up meanwhile.
    signal.throwIfAborted();
    await this.#store.put(manifest.config.digest, config);
    await this.#store.put(layer.digest, bytes);
    if (signatures.length > 0) await this.#store.putSignatures(digest, signatures);
    await this.#store.put(digest, manifestBytes);
    await this.#store.addRecord(digest, { source: ociStoreSource(source), policy: skip ? 'skip' : 'signature', ...(skip ? {} : { signer: signer.fingerprint ?? signer.key }) });
    const name = source.repository.split('/').pop()!;
    return { name, source: source.text, bytes, digest: layer.digest, manifestDigest: digest, signedBy: signer.key, ...(signer.fingerprint === undefined ? {} : { signerFingerprint: signer.fingerprint }) };
  }

  async #url(source: UrlSource, signal: AbortSignal): Promise<FetchedComponent> {
    const name = basename(new URL(source.url).pathname, '.wasm') || 'component';
    const insecure = this.#options.insecureRegistries ?? [];
    if (new URL(source.url).protocol === 'http:' && !plainHttpAllowed(new URL(source.url), insecure)) {
      throw untrusted('insecure', source.text, 'plain http is accepted only for loopback hosts and distribution.insecure_registries; use https');
    }
    // From the store only if this exact URL served these bytes before; any other URL naming the digest is fetched.
    const locked = this.#options.lock?.[source.text];
    const known = (await this.#store.recordsFor(source.digest, source.url)).some((record) => record.policy === 'digest')
      || (locked?.pinned === source.text && locked.layerDigest === source.digest);
    const stored = known ? await this.#store.get(source.digest) : undefined;
    const bytes = stored ?? await fetchUrl(source, {
      insecure,
      maxBytes: this.#options.maxComponentBytes ?? DEFAULT_MAX_COMPONENT_BYTES,
      ...(this.#options.ca === undefined ? {} : { ca: this.#options.ca }),
      signal,
    });
    signal.throwIfAborted();
    if (stored === undefined) {
      await this.#store.put(source.digest, bytes);
      await this.#store.addRecord(source.digest, { source: source.url, policy: 'digest' });
    }
    return { name, source: source.text, bytes, digest: source.digest, signedBy: 'pinned' };
  }
}
