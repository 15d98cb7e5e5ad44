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
 * Bounded: a `.sig` manifest with more than `max_signature_layers` layers, or
 * a referrers index listing more bundles than that, is refused before any
 * payload is fetched; each payload (or bundle) is capped by
 * `max_signature_bytes` (a descriptor over it is not requested) and checked
 * before the next is fetched, so one payload at most is held at a time, and
 * only the accepted one is kept. Manifests are capped by `max_manifest_bytes`,
 * everything is verified by digest as it is read, and a referrer whose subject
 * is another digest is ignored. What a verified payload must say is
 * signature-policy.ts's decision.
 */
import { SIGSTORE_BUNDLE_TYPES, checkAttestationBundle, checkBundle, type BundleTrust } from './bundle.js';
import { checkSignature, type SignatureCheck } from './cosign.js';
import { integrity, untrusted } from './errors.js';
import { COSIGN_PAYLOAD, COSIGN_SIGNATURE_ANNOTATION, cosignSignatureTag, parseImageManifest } from './layout.js';
import type { RegistryClient } from './oci-client.js';
import { COSIGN_SIGN_PREDICATE, referenceRefusal } from './signature-policy.js';
import type { StoredSignature } from './store.js';

/** Whether two stored signatures are the same one. */
export function sameSignature(a: StoredSignature, b: StoredSignature): boolean {
  return 'bundle' in a ? 'bundle' in b && a.bundle === b.bundle : !('bundle' in b) && a.payload === b.payload && a.signature === b.signature;
}

/** The caps on the signatures read for one digest (`distribution.max_signature_layers`, `max_signature_bytes`). */
export interface SignatureLimits {
  /** Most layers a `sha256-HEX.sig` manifest, and most bundle referrers a digest, may have. */
  maxLayers: number;
  /** Most bytes one signature payload or bundle may have. */
  maxPayloadBytes: number;
}

/** One candidate signature, fetched only when it is its turn. */
type Candidate = () => Promise<StoredSignature | undefined>;

function tooMany(what: string, count: number, cap: number, kind: string): Error {
  return integrity('too-large', what, `${count} ${kind}, over the cap of ${cap} (distribution.max_signature_layers): refused before any of them was fetched`, { limitHit: 'max_signature_layers', count, cap });
}

/** cosign's signatures of `digest` in its `sha256-HEX.sig` tag (none when the tag does not exist), one fetch each, lazily. */
async function cosignTagCandidates(client: RegistryClient, digest: string, limits: SignatureLimits): Promise<Candidate[]> {
  const tag = await client.manifestByTag(cosignSignatureTag(digest));
  if (tag === undefined) return [];
  const what = `oci://${client.registry}/${client.repository}:${cosignSignatureTag(digest)}`;
  const manifest = parseImageManifest(tag.bytes, what);
  if (manifest.layers.length > limits.maxLayers) throw tooMany(what, manifest.layers.length, limits.maxLayers, 'signature layers');
  return manifest.layers.flatMap((layer) => {
    const signature = layer.annotations?.[COSIGN_SIGNATURE_ANNOTATION];
    if (layer.mediaType !== COSIGN_PAYLOAD || signature === undefined) return [];
    return [async () => ({ payload: Buffer.from(await client.blob(layer, limits.maxPayloadBytes, 'max_signature_bytes')).toString('base64'), signature })];
  });
}

/** An index entry's annotation naming the predicate of the bundle it lists (cosign writes it). */
const PREDICATE_ANNOTATION = 'dev.sigstore.bundle.predicateType';

/**
 * The referrers index's manifests that may be Sigstore bundles of a predicate `wanted` accepts (the
 * `dev.sigstore.bundle.predicateType` annotation cosign writes; absent: unknown, so fetched). An entry without
 * `artifactType` is fetched too: skopeo 1.9 copies a referrers-tag index without it, and the referrer's own manifest
 * says what it is (checked once fetched); an entry that names another type is not fetched.
 */
function bundleReferrers(index: Uint8Array, wanted: (predicate: string) => boolean): string[] {
  try {
    const parsed = JSON.parse(Buffer.from(index).toString('utf8')) as { manifests?: Array<{ digest?: unknown; artifactType?: unknown; annotations?: Record<string, unknown> }> };
    return (parsed.manifests ?? []).flatMap((entry) => {
      const predicate = entry.annotations?.[PREDICATE_ANNOTATION];
      const skipped = predicate !== undefined && !wanted(String(predicate));
      const typed = entry.artifactType === undefined || SIGSTORE_BUNDLE_TYPES.has(String(entry.artifactType));
      return typeof entry.digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(entry.digest) && typed && !skipped ? [entry.digest] : [];
    });
  } catch {
    return [];
  }
}

/** A referrer manifest's own type: its `artifactType`, else (OCI 1.1's rule for artifacts) its config's media type. */
function artifactTypeOf(manifest: { artifactType?: string; config: { mediaType: string } }): string {
  return manifest.artifactType ?? manifest.config.mediaType;
}

/**
 * The Sigstore bundles attached to `digest` as referrers, one manifest and one bundle fetched per turn; by default
 * less the ones annotated as attestations (never a signature: not fetched).
 */
async function referrerCandidates(client: RegistryClient, digest: string, limits: SignatureLimits, wanted: (predicate: string) => boolean = (predicate) => predicate === COSIGN_SIGN_PREDICATE): Promise<Candidate[]> {
  const index = await client.referrers(digest);
  if (index === undefined) return [];
  const listed = bundleReferrers(index, wanted);
  if (listed.length > limits.maxLayers) throw tooMany(`oci://${client.registry}/${client.repository}@${digest} (referrers)`, listed.length, limits.maxLayers, 'Sigstore bundle referrers');
  return listed.map((referrer) => async () => {
    const read = await client.manifest(referrer);
    if (read === undefined) return undefined;
    const manifest = parseImageManifest(read.bytes, `oci://${client.registry}/${client.repository}@${referrer}`) as ReturnType<typeof parseImageManifest> & { subject?: { digest?: unknown } };
    // A referrer is about its subject: one listed for this digest that names another is not this digest's.
    if (manifest.subject?.digest !== digest) return undefined;
    // Listed without a type (a skopeo copy): what the manifest itself says decides, before any layer is fetched.
    if (!SIGSTORE_BUNDLE_TYPES.has(artifactTypeOf(manifest))) return undefined;
    const layer = manifest.layers.find((entry) => SIGSTORE_BUNDLE_TYPES.has(entry.mediaType));
    if (layer === undefined) return undefined;
    return { bundle: Buffer.from(await client.blob(layer, limits.maxPayloadBytes, 'max_signature_bytes')).toString('base64') };
  });
}

/**
 * The registry's signatures of `digest` (cosign's tag form, then Sigstore bundle referrers), fetched one at a time
 * and each checked before the next is fetched; the first accepted one is returned with its signer. Nothing that
 * failed is kept: at most one payload (`max_signature_bytes`) is held at a time, and a `.sig` manifest or a
 * referrers index listing more than `max_signature_layers` is refused before any payload is fetched.
 * @throws SOURCE_UNTRUSTED as {@link verifySignatures} when none is accepted; SOURCE_INTEGRITY `too-large` past a cap.
 */
export async function verifyRegistrySignatures(client: RegistryClient, digest: string, manifest: Uint8Array, trust: BundleTrust, limits: SignatureLimits, what: string): Promise<VerifiedSignature> {
  const refusals = new Refusals();
  for (const source of [cosignTagCandidates, referrerCandidates]) {
    for (const candidate of await source(client, digest, limits)) {
      const signature = await candidate();
      if (signature === undefined) continue;
      const check = checkOne(signature, manifest, digest, trust);
      if (check.ok) return { signature, key: check.key, ...(check.fingerprint === undefined ? {} : { fingerprint: check.fingerprint }) };
      refusals.add(check);
    }
  }
  throw refusals.refusal(digest, trust, what);
}

/**
 * The attestations `trust.attestations` requires of `digest`, each a bundle by a trusted signer (signature-policy.ts's
 * checkAttestation): looked for among `kept` first (offline), then among the registry's referrers (under the same
 * caps, one fetched at a time). Returns the accepted bundles, to keep beside the signature.
 * @throws SOURCE_UNTRUSTED `missing-attestation` naming the first requirement no bundle met (and what was found).
 */
export async function verifyAttestations(kept: readonly StoredSignature[], client: RegistryClient, digest: string, manifest: Uint8Array, trust: BundleTrust, limits: SignatureLimits, what: string): Promise<StoredSignature[]> {
  const subject = { digest, references: trust.references };
  const accepted: StoredSignature[] = [];
  for (const required of trust.attestations ?? []) {
    const refusals = new Refusals();
    const meets = (entry: StoredSignature): boolean => {
      if (!('bundle' in entry)) return false;
      const check = checkAttestationBundle(Buffer.from(entry.bundle, 'base64'), manifest, subject, trust, required);
      if (!check.ok) refusals.add(check);
      return check.ok;
    };
    let found = kept.find(meets);
    if (found === undefined) {
      for (const candidate of await referrerCandidates(client, digest, limits, (predicate) => predicate === required.predicateType)) {
        const entry = await candidate();
        if (entry !== undefined && meets(entry)) {
          found = entry;
          break;
        }
      }
    }
    if (found === undefined) {
      const wanted = `${required.predicateType}${required.builderId === undefined ? '' : ` built by ${required.builderId}`}`;
      throw untrusted('missing-attestation', what, `is signed, but verify.require_attestations asks for an attestation (${wanted}) by a trusted signer naming this digest and repository, and none was found${refusals.summary()}`, { predicateType: required.predicateType, ...(required.builderId === undefined ? {} : { builderId: required.builderId }) });
    }
    accepted.push(found);
  }
  return accepted;
}

/** An accepted signature and who signed it: the key file (and its fingerprint) or the keyless identity. */
export interface VerifiedSignature {
  signature: StoredSignature;
  key: string;
  fingerprint?: string;
}

function checkOne(entry: StoredSignature, manifest: Uint8Array, digest: string, trust: BundleTrust): SignatureCheck {
  const subject = { digest, references: trust.references };
  return 'bundle' in entry
    ? checkBundle(Buffer.from(entry.bundle, 'base64'), manifest, subject, trust)
    : checkSignature(Buffer.from(entry.payload, 'base64'), entry.signature, subject, trust.keys);
}

/** The trust, as a refusal names it: the key files, the trusted root and its identities. */
function trustText(trust: BundleTrust): string {
  const keyless = trust.keyless === undefined ? [] : [`keyless: ${trust.keyless.identities.map(({ identity }) => `${identity.subject ?? `/${identity.subjectRegExp ?? ''}/`} (${identity.issuer})`).join(', ')} under ${trust.keyless.source}`];
  return [...trust.keys.map((key) => key.source), ...keyless].join('; ');
}

/** The failures of the signatures looked at, kept only as what a refusal says (never the payloads). */
class Refusals {
  #count = 0;
  #reference: string | undefined;
  #digest: string | undefined;
  #attestation: string | undefined;
  #identity: string | undefined;
  #invalid: string | undefined;

  add(check: Exclude<SignatureCheck, { ok: true }>): void {
    this.#count += 1;
    if (check.reason === 'wrong-reference') this.#reference ??= check.names;
    if (check.reason === 'wrong-digest') this.#digest ??= check.names;
    if (check.reason === 'not-a-signature') this.#attestation ??= check.kind;
    if (check.reason === 'untrusted-identity') this.#identity ??= check.identity;
    if (check.reason === 'invalid-signature') this.#invalid ??= check.detail;
  }

  /** What was found instead, for a message ('' when nothing was looked at). */
  summary(): string {
    if (this.#count === 0) return '';
    const seen = [this.#reference === undefined ? [] : [`one for ${this.#reference || 'no repository'}`], this.#attestation === undefined ? [] : [this.#attestation], this.#digest === undefined ? [] : ['one for another digest']].flat();
    return ` (looked at ${this.#count}${seen.length === 0 ? ', none by a trusted signer' : `: ${seen.join('; ')}`})`;
  }

  /**
   * The most telling refusal: another repository, then another digest, then an attestation, then an untrusted
   * identity, then a signature that did not verify, then an untrusted key; none looked at: unsigned.
   */
  refusal(digest: string, trust: BundleTrust, what: string): Error {
    if (this.#count === 0) {
      return untrusted('unsigned', what, `has no signature (no ${cosignSignatureTag(digest)} tag and no Sigstore bundle referrer in the repository): sign it (toolhost publish --sign-key, or cosign sign --key) or configure trust otherwise`);
    }
    const subject = { digest, references: trust.references };
    if (this.#reference !== undefined) return untrusted('wrong-reference', what, referenceRefusal(this.#reference, subject), { signedReference: this.#reference, accepted: trust.references });
    if (this.#digest !== undefined) return untrusted('wrong-digest', what, `its signature by a trusted signer names another digest (${this.#digest || 'none'}), not ${digest}`, { signedDigest: this.#digest });
    if (this.#attestation !== undefined) {
      return untrusted('not-a-signature', what, `what a trusted signer signed for it is ${this.#attestation}, not a signature: an attestation (an SBOM, provenance, a scan) says something about a component, it does not vouch for it; sign it (cosign sign, toolhost publish --sign-key)`, { signed: this.#attestation });
    }
    if (this.#identity !== undefined) {
      return untrusted('untrusted-identity', what, `is signed keyless by ${this.#identity}, which no verify.identities entry names (trusted: ${trustText(trust)})`, { identity: this.#identity });
    }
    if (this.#invalid !== undefined) {
      return untrusted('invalid-signature', what, `has a keyless signature that does not verify against the trusted root ${trust.keyless?.source ?? ''}: ${this.#invalid}`, { detail: this.#invalid });
    }
    return untrusted('untrusted-key', what, `is signed, but by none of the trusted signers (${trustText(trust)})`, { signatures: this.#count });
  }
}

/**
 * Who signed `digest` among `signatures` (kept in the store; `manifest`: its bytes, which a bundle's message
 * signature covers): the accepted signature and its signer; else the most telling refusal ({@link Refusals}).
 */
export function verifySignatures(signatures: readonly StoredSignature[], manifest: Uint8Array, digest: string, trust: BundleTrust, what: string): VerifiedSignature {
  const refusals = new Refusals();
  for (const signature of signatures) {
    const check = checkOne(signature, manifest, digest, trust);
    if (check.ok) return { signature, key: check.key, ...(check.fingerprint === undefined ? {} : { fingerprint: check.fingerprint }) };
    refusals.add(check);
  }
  throw refusals.refusal(digest, trust, what);
}
