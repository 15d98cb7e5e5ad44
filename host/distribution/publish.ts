/**
 * Publishing a component to an OCI registry in the CNCF Wasm layout (one
 * `application/wasm` layer, a `application/vnd.wasm.config.v0+json` config
 * naming its exports and imports, `os: wasip2`), and, with a signing key,
 * cosign's key-based signature in its tag form (`sha256-HEX.sig`: an image
 * manifest whose one layer is the simple-signing payload naming the pushed
 * manifest's digest, the signature in the layer's annotation) — what
 * `cosign sign --key` writes, so `cosign verify --key` accepts it too; and
 * a Sigstore bundle attached as an OCI 1.1 referrer (artifact type
 * `application/vnd.dev.sigstore.bundle.v0.3+json`, `subject` the manifest):
 * by the Referrers API when the registry indexes it (its `OCI-Subject`
 * answer), else listed in the `sha256-HEX` referrers tag's index, which is
 * read, extended and written back (other referrers kept).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { reportProgress } from '../base/progress.js';
import { listedRealms, type TokenRealms } from './auth-scope.js';
import { SIGSTORE_BUNDLE, signBundle } from './bundle.js';
import { targetWorld } from './component-config.js';
import { keyFingerprint, signPayload, simpleSigningPayload } from './cosign.js';
import type { Credential } from './credentials.js';
import { COSIGN_PAYLOAD, COSIGN_SIGNATURE_ANNOTATION, OCI_EMPTY, OCI_EMPTY_CONFIG, OCI_INDEX, OCI_MANIFEST, WASM_CONFIG, WASM_LAYER, cosignSignatureTag, type Descriptor } from './layout.js';
import { RegistryClient } from './oci-client.js';
import { DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_MANIFEST_BYTES } from './options.js';
import type { OciSource } from './source.js';

export interface PublishOptions {
  /** What the component exports and imports (versioned interface names: component-config.ts), for the config. */
  exports: readonly string[];
  imports: readonly string[];
  /** The world it targets (default: told by its tool export's version, component-config.ts `targetWorld`). */
  target?: string;
  /** Sign the manifest with this key (ECDSA P-256). */
  signingKey?: KeyObject;
  insecureRegistries?: readonly string[];
  credential?: Credential;
  ca?: string;
  /** `distribution.token_realms` (auth-scope.ts). */
  tokenRealms?: TokenRealms;
}

export interface PublishReport {
  reference: string;
  manifestDigest: string;
  layerDigest: string;
  size: number;
  /** The signature tag, when signed. */
  signature?: string;
  /** The Sigstore bundle referrer's manifest digest, when signed. */
  bundle?: string;
  /** Where the referrer is listed: `referrers-api`, or the referrers tag (`sha256-HEX`) of a registry without the API. */
  bundleListed?: string;
}

const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

/** Build the manifest of a component artifact (exported for tests that push their own variants). */
export function componentManifest(config: Descriptor, layer: Descriptor, annotations: Record<string, string> = {}): Uint8Array {
  return json({ schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: WASM_CONFIG, config, layers: [layer], ...(Object.keys(annotations).length === 0 ? {} : { annotations }) });
}

/** Push `bytes` to `target` (a tag reference) and sign it when a key is given (its stages reported: base/progress.ts). */
export async function publishComponent(bytes: Uint8Array, target: OciSource, options: PublishOptions): Promise<PublishReport> {
  let ok = false;
  try {
    const report = await push(bytes, target, options);
    ok = true;
    return report;
  } finally {
    reportProgress({ kind: 'end', task: target.text, ok });
  }
}

async function push(bytes: Uint8Array, target: OciSource, options: PublishOptions): Promise<PublishReport> {
  const stage = (text: string): void => reportProgress({ kind: 'stage', task: target.text, stage: text });
  const client = new RegistryClient(target.registry, target.repository, {
    insecureRegistries: options.insecureRegistries ?? [],
    maxManifestBytes: DEFAULT_MAX_MANIFEST_BYTES,
    maxBlobBytes: DEFAULT_MAX_COMPONENT_BYTES,
    ...(options.credential === undefined ? {} : { credential: options.credential }),
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    tokenRealms: listedRealms(target.registry, options.tokenRealms),
  });
  // The upload is one request body: its bytes are reported once it is done (the renderer tells the rate).
  reportProgress({ kind: 'bytes', task: target.text, stage: 'uploading', done: 0, total: bytes.byteLength });
  const layer = await client.pushBlob(bytes, WASM_LAYER);
  reportProgress({ kind: 'bytes', task: target.text, stage: 'uploading', done: bytes.byteLength, total: bytes.byteLength });
  stage('pushing the manifest');
  const config = await client.pushBlob(json({
    created: new Date().toISOString(),
    architecture: 'wasm',
    os: 'wasip2',
    layerDigests: [layer.digest],
    component: { exports: [...options.exports], imports: [...options.imports], target: options.target ?? targetWorld(options.exports) ?? 'toolhost:tool/tool-provider@0.1.0' },
  }), WASM_CONFIG);
  const reference = target.tag ?? target.digest!;
  const manifest = componentManifest(config, layer);
  const manifestDigest = await client.pushManifest(reference, manifest, OCI_MANIFEST);
  const report: PublishReport = { reference: `oci://${target.registry}/${target.repository}@${manifestDigest}`, manifestDigest, layerDigest: layer.digest, size: bytes.byteLength };
  if (options.signingKey !== undefined) {
    stage('signing (cosign tag and Sigstore bundle referrer)');
    report.signature = await pushCosignSignature(client, manifestDigest, options.signingKey);
    const referrer = await pushBundleReferrer(client, { mediaType: OCI_MANIFEST, digest: manifestDigest, size: manifest.byteLength }, options.signingKey);
    report.bundle = referrer.digest;
    report.bundleListed = referrer.listed;
  }
  return report;
}

/** Push cosign's tag-form signature of `digest`, signed with `key`; returns the tag. */
export async function pushCosignSignature(client: RegistryClient, digest: string, key: KeyObject, payload = simpleSigningPayload(`${client.registry}/${client.repository}`, digest)): Promise<string> {
  const layer = await client.pushBlob(payload, COSIGN_PAYLOAD);
  const config = await client.pushBlob(json({ architecture: '', created: '0001-01-01T00:00:00Z', history: [{ created: '0001-01-01T00:00:00Z' }], os: '', rootfs: { type: 'layers', diff_ids: [layer.digest] }, config: {} }), OCI_EMPTY_CONFIG);
  const tag = cosignSignatureTag(digest);
  const manifest = json({ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [{ ...layer, annotations: { [COSIGN_SIGNATURE_ANNOTATION]: signPayload(payload, key) } }] });
  await client.pushManifest(tag, manifest, OCI_MANIFEST);
  return tag;
}

/**
 * Attach a Sigstore bundle signed with `key` to `subject` as an OCI 1.1 referrer; returns the referrer's digest and
 * where it is listed (the Referrers API, or the referrers tag, updated here when the registry lacks the API).
 */
export async function pushBundleReferrer(client: RegistryClient, subject: Descriptor, key: KeyObject): Promise<{ digest: string; listed: string }> {
  const bundle = signBundle(subject.digest, `${client.registry}/${client.repository}`, key, keyFingerprint(createPublicKey(key)));
  const layer = await client.pushBlob(bundle, SIGSTORE_BUNDLE);
  const config = await client.pushBlob(Buffer.from('{}'), OCI_EMPTY);
  const manifest = json({
    schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: SIGSTORE_BUNDLE, config, layers: [layer], subject,
    annotations: { 'dev.sigstore.bundle.content': 'dsse-envelope', 'dev.sigstore.bundle.predicateType': 'https://sigstore.dev/cosign/sign/v1' },
  });
  const { digest, indexed } = await client.pushReferrer(manifest, OCI_MANIFEST);
  if (indexed) return { digest, listed: 'referrers-api' };
  // No Referrers API: the referrers tag's index lists this referrer beside the ones already there.
  const tag = subject.digest.replace(':', '-');
  const existing = await client.referrersTag(subject.digest, 'pull,push');
  let manifests: Array<{ digest?: unknown }> = [];
  if (existing !== undefined) {
    try {
      const parsed = JSON.parse(Buffer.from(existing).toString('utf8')) as { manifests?: unknown };
      if (Array.isArray(parsed.manifests)) manifests = parsed.manifests as Array<{ digest?: unknown }>;
    } catch {
      manifests = [];
    }
  }
  const entry = { mediaType: OCI_MANIFEST, digest, size: manifest.byteLength, artifactType: SIGSTORE_BUNDLE, annotations: { 'dev.sigstore.bundle.content': 'dsse-envelope' } };
  await client.pushManifest(tag, json({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [...manifests.filter((other) => other.digest !== digest), entry] }), OCI_INDEX);
  return { digest, listed: tag };
}
