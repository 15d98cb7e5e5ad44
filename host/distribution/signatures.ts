/**
 * The signatures of a manifest digest, where a registry keeps them, and the
 * check that one of them is by a trusted key and names that digest:
 *
 * - cosign's key-based tag form: the `sha256-<hex>.sig` tag, a manifest whose
 *   simple-signing layers carry the signature annotation (cosign.ts);
 * - Sigstore bundles attached as OCI 1.1 referrers: the Referrers API, else
 *   the `sha256-<hex>` referrers tag (registries without the API), each a
 *   manifest of artifact type `application/vnd.dev.sigstore.bundle.v0.3+json`
 *   whose `subject` is the digest and whose one layer is the bundle (bundle.ts).
 *
 * Everything read here is capped by `max_manifest_bytes` and verified by
 * digest as it is read; a referrer whose subject is another digest is
 * ignored. Finding signatures decides nothing: {@link verifySignatures} does.
 */
import { SIGSTORE_BUNDLE_TYPES, checkBundle, type BundleTrust } from './bundle.js';
import { checkSignature } from './cosign.js';
import { untrusted } from './errors.js';
import { COSIGN_PAYLOAD, COSIGN_SIGNATURE_ANNOTATION, cosignSignatureTag, parseImageManifest } from './layout.js';
import type { RegistryClient } from './oci-client.js';
import type { StoredSignature } from './store.js';

/** Whether two stored signatures are the same one. */
export function sameSignature(a: StoredSignature, b: StoredSignature): boolean {
  return 'bundle' in a ? 'bundle' in b && a.bundle === b.bundle : !('bundle' in b) && a.payload === b.payload && a.signature === b.signature;
}

/** cosign's signatures of `digest` in its `sha256-HEX.sig` tag (none when the tag does not exist). */
async function cosignTagSignatures(client: RegistryClient, digest: string, cap: number): Promise<StoredSignature[]> {
  const tag = await client.manifestByTag(cosignSignatureTag(digest));
  if (tag === undefined) return [];
  const manifest = parseImageManifest(tag.bytes, `oci://${client.registry}/${client.repository}:${cosignSignatureTag(digest)}`);
  const found: StoredSignature[] = [];
  for (const layer of manifest.layers) {
    const signature = layer.annotations?.[COSIGN_SIGNATURE_ANNOTATION];
    if (layer.mediaType !== COSIGN_PAYLOAD || signature === undefined) continue;
    const payload = await client.blob(layer, cap, 'max_manifest_bytes');
    found.push({ payload: Buffer.from(payload).toString('base64'), signature });
  }
  return found;
}

/** The referrers index's manifests that say they are Sigstore bundles. */
function bundleReferrers(index: Uint8Array): string[] {
  try {
    const parsed = JSON.parse(Buffer.from(index).toString('utf8')) as { manifests?: Array<{ digest?: unknown; artifactType?: unknown }> };
    return (parsed.manifests ?? []).flatMap((entry) => typeof entry.digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(entry.digest) && SIGSTORE_BUNDLE_TYPES.has(String(entry.artifactType)) ? [entry.digest] : []);
  } catch {
    return [];
  }
}

/** The Sigstore bundles attached to `digest` as referrers (at most 16 looked at). */
async function referrerBundles(client: RegistryClient, digest: string, cap: number): Promise<StoredSignature[]> {
  const index = await client.referrers(digest);
  if (index === undefined) return [];
  const found: StoredSignature[] = [];
  for (const referrer of bundleReferrers(index).slice(0, 16)) {
    const read = await client.manifest(referrer);
    if (read === undefined) continue;
    const manifest = parseImageManifest(read.bytes, `oci://${client.registry}/${client.repository}@${referrer}`) as ReturnType<typeof parseImageManifest> & { subject?: { digest?: unknown } };
    // A referrer is about its subject: one listed for this digest that names another is not this digest's.
    if (manifest.subject?.digest !== digest) continue;
    const layer = manifest.layers.find((entry) => SIGSTORE_BUNDLE_TYPES.has(entry.mediaType));
    if (layer === undefined) continue;
    found.push({ bundle: Buffer.from(await client.blob(layer, cap, 'max_manifest_bytes')).toString('base64') });
  }
  return found;
}

/** Every signature the registry holds for `digest`: cosign's tag form, then Sigstore bundle referrers. */
export async function registrySignatures(client: RegistryClient, digest: string, cap: number): Promise<StoredSignature[]> {
  return [...await cosignTagSignatures(client, digest, cap), ...await referrerBundles(client, digest, cap)];
}

/** The trust, as a refusal names it: the key files, the trusted root and its identities. */
function trustText(trust: BundleTrust): string {
  const keyless = trust.keyless === undefined ? [] : [`keyless: ${trust.keyless.identities.map(({ identity }) => `${identity.subject ?? `/${identity.subjectRegExp ?? ''}/`} (${identity.issuer})`).join(', ')} under ${trust.keyless.source}`];
  return [...trust.keys.map((key) => key.source), ...keyless].join('; ');
}

/**
 * Who signed `digest` among `signatures` (`manifest`: its bytes, which a bundle's message signature covers): the
 * key file (and its fingerprint) or the keyless identity; else the refusal that says what failed, the most telling
 * of the signatures' failures (another digest, then an untrusted identity, then a signature that did not verify,
 * then an untrusted key).
 */
export function verifySignatures(signatures: readonly StoredSignature[], manifest: Uint8Array, digest: string, trust: BundleTrust, what: string): { key: string; fingerprint?: string } {
  if (signatures.length === 0) {
    throw untrusted('unsigned', what, `has no signature (no ${cosignSignatureTag(digest)} tag and no Sigstore bundle referrer in the repository): sign it (toolhost publish --sign-key, or cosign sign --key) or configure trust otherwise`);
  }
  let otherDigest: string | undefined;
  let identity: string | undefined;
  let invalid: string | undefined;
  for (const entry of signatures) {
    const check = 'bundle' in entry
      ? checkBundle(Buffer.from(entry.bundle, 'base64'), manifest, digest, trust)
      : checkSignature(Buffer.from(entry.payload, 'base64'), entry.signature, digest, trust.keys);
    if (check.ok) return check.fingerprint === undefined ? { key: check.key } : { key: check.key, fingerprint: check.fingerprint };
    if (check.reason === 'wrong-digest') otherDigest = check.names;
    if (check.reason === 'untrusted-identity') identity = check.identity;
    if (check.reason === 'invalid-signature') invalid = check.detail;
  }
  if (otherDigest !== undefined) {
    throw untrusted('wrong-digest', what, `its signature by a trusted signer names another digest (${otherDigest || 'none'}), not ${digest}`, { signedDigest: otherDigest });
  }
  if (identity !== undefined) {
    throw untrusted('untrusted-identity', what, `is signed keyless by ${identity}, which no verify.identities entry names (trusted: ${trustText(trust)})`, { identity });
  }
  if (invalid !== undefined) {
    throw untrusted('invalid-signature', what, `has a keyless signature that does not verify against the trusted root ${trust.keyless?.source ?? ''}: ${invalid}`, { detail: invalid });
  }
  throw untrusted('untrusted-key', what, `is signed, but by none of the trusted signers (${trustText(trust)})`, { signatures: signatures.length });
}
