/**
 * Sigstore bundles (`application/vnd.dev.sigstore.bundle.v0.3+json`, as
 * `cosign sign --new-bundle-format` attaches them as OCI 1.1 referrers),
 * verified with a public key by @sigstore/verify, fully offline: every
 * threshold (transparency log, certificate transparency, timestamps) is 0 and
 * the key is the only trust (transparency-log entries a bundle carries are
 * not consulted: there is no pinned log to check them against). Keyless
 * bundles (a Fulcio certificate) are not trusted here: no key signed them.
 *
 * What a bundle must say: a message signature over the manifest's bytes (its
 * message digest the manifest digest), or a DSSE envelope whose in-toto
 * statement names the manifest digest among its subjects. The signature is
 * checked first (a statement nobody trusted signed says nothing), then the
 * digest, as for cosign's tag form (cosign.ts).
 */
import { bundleFromJSON, isBundleWithDsseEnvelope, type Bundle } from '@sigstore/bundle';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import type { SignatureCheck, TrustedKey } from './cosign.js';

/** The media type (artifact type and layer) of a Sigstore bundle referrer. */
export const SIGSTORE_BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
/** Bundle media types accepted in a referrer (0.3 and its older spellings). */
export const SIGSTORE_BUNDLE_TYPES: ReadonlySet<string> = new Set([SIGSTORE_BUNDLE, 'application/vnd.dev.sigstore.bundle+json;version=0.3', 'application/vnd.dev.sigstore.bundle+json;version=0.2']);

/** No authorities at all: key-only verification. */
const EMPTY_ROOT = { mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1', tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities: [] };

function parse(bytes: Uint8Array): Bundle | undefined {
  try {
    const bundle = bundleFromJSON(JSON.parse(Buffer.from(bytes).toString('utf8')));
    // The key is the trust: log entries (and the timestamps they would give) are not consulted.
    return { ...bundle, verificationMaterial: { ...bundle.verificationMaterial, tlogEntries: [], timestampVerificationData: undefined } } as Bundle;
  } catch {
    return undefined;
  }
}

/** The digests (`sha256:<hex>`) a DSSE bundle's in-toto statement names as subjects. */
function statementSubjects(bundle: Bundle): string[] {
  if (!isBundleWithDsseEnvelope(bundle)) return [];
  try {
    const statement = JSON.parse(Buffer.from(bundle.content.dsseEnvelope.payload).toString('utf8')) as { subject?: Array<{ digest?: { sha256?: unknown } }> };
    return (statement.subject ?? []).flatMap((subject) => typeof subject.digest?.sha256 === 'string' ? [`sha256:${subject.digest.sha256}`] : []);
  } catch {
    return [];
  }
}

/**
 * Check one Sigstore bundle against the trusted keys and the manifest (its
 * bytes and digest). A bundle that does not parse is signed by nobody.
 */
export function checkBundle(bundleBytes: Uint8Array, manifest: Uint8Array, digest: string, keys: readonly TrustedKey[]): SignatureCheck {
  const bundle = parse(bundleBytes);
  if (bundle === undefined) return { ok: false, reason: 'untrusted-key' };
  const dsse = isBundleWithDsseEnvelope(bundle);
  for (const trusted of keys) {
    const material = toTrustMaterial(EMPTY_ROOT as unknown as Parameters<typeof toTrustMaterial>[0], () => ({ publicKey: trusted.key, validFor: () => true }));
    const verifier = new Verifier(material, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
    try {
      verifier.verify(toSignedEntity(bundle, dsse ? undefined : Buffer.from(manifest)));
    } catch {
      continue;
    }
    const names = bundle.content.$case === 'dsseEnvelope' ? statementSubjects(bundle) : [`sha256:${Buffer.from(bundle.content.messageSignature.messageDigest?.digest ?? []).toString('hex')}`];
    // A message signature verified over these very bytes binds this digest; its own message digest must agree.
    if (!names.includes(digest)) return { ok: false, reason: 'wrong-digest', names: names.join(', ') };
    return { ok: true, key: trusted.source, fingerprint: trusted.fingerprint };
  }
  return { ok: false, reason: 'untrusted-key' };
}
