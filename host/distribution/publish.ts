/**
 * Publishing a component to an OCI registry in the CNCF Wasm layout (one
 * `application/wasm` layer, a `application/vnd.wasm.config.v0+json` config
 * naming its exports and imports, `os: wasip2`), and, with a signing key,
 * cosign's key-based signature in its tag form (`sha256-HEX.sig`: an image
 * manifest whose one layer is the simple-signing payload naming the pushed
 * manifest's digest, the signature in the layer's annotation) — what
 * `cosign sign --key` writes, so `cosign verify --key` accepts it too.
 * Sigstore bundles (OCI 1.1 referrers) are not written yet.
 */
import type { KeyObject } from 'node:crypto';
import { signPayload, simpleSigningPayload } from './cosign.js';
import type { Credential } from './credentials.js';
import { COSIGN_PAYLOAD, COSIGN_SIGNATURE_ANNOTATION, OCI_EMPTY_CONFIG, OCI_MANIFEST, WASM_CONFIG, WASM_LAYER, cosignSignatureTag, type Descriptor } from './layout.js';
import { RegistryClient } from './oci-client.js';
import { DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_MANIFEST_BYTES } from './options.js';
import type { OciSource } from './source.js';

export interface PublishOptions {
  /** What the component exports and imports (interface names), for the config. */
  exports: readonly string[];
  imports: readonly string[];
  /** Sign the manifest with this key (ECDSA P-256). */
  signingKey?: KeyObject;
  insecureRegistries?: readonly string[];
  credential?: Credential;
  ca?: string;
}

export interface PublishReport {
  reference: string;
  manifestDigest: string;
  layerDigest: string;
  size: number;
  /** The signature tag, when signed. */
  signature?: string;
}

const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

/** Build the manifest of a component artifact (exported for tests that push their own variants). */
export function componentManifest(config: Descriptor, layer: Descriptor, annotations: Record<string, string> = {}): Uint8Array {
  return json({ schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: WASM_CONFIG, config, layers: [layer], ...(Object.keys(annotations).length === 0 ? {} : { annotations }) });
}

/** Push `bytes` to `target` (a tag reference) and sign it when a key is given. */
export async function publishComponent(bytes: Uint8Array, target: OciSource, options: PublishOptions): Promise<PublishReport> {
  const client = new RegistryClient(target.registry, target.repository, {
    insecureRegistries: options.insecureRegistries ?? [],
    maxManifestBytes: DEFAULT_MAX_MANIFEST_BYTES,
    maxBlobBytes: DEFAULT_MAX_COMPONENT_BYTES,
    ...(options.credential === undefined ? {} : { credential: options.credential }),
    ...(options.ca === undefined ? {} : { ca: options.ca }),
  });
  const layer = await client.pushBlob(bytes, WASM_LAYER);
  const config = await client.pushBlob(json({
    created: new Date().toISOString(),
    architecture: 'wasm',
    os: 'wasip2',
    layerDigests: [layer.digest],
    component: { exports: [...options.exports], imports: [...options.imports], target: 'toolhost:tool/tool-provider@0.1.0' },
  }), WASM_CONFIG);
  const reference = target.tag ?? target.digest!;
  const manifestDigest = await client.pushManifest(reference, componentManifest(config, layer), OCI_MANIFEST);
  const report: PublishReport = { reference: `oci://${target.registry}/${target.repository}@${manifestDigest}`, manifestDigest, layerDigest: layer.digest, size: bytes.byteLength };
  if (options.signingKey !== undefined) {
    report.signature = await pushCosignSignature(client, manifestDigest, options.signingKey);
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
