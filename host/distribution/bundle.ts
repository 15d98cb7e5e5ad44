/**
 * Sigstore bundles (`application/vnd.dev.sigstore.bundle.v0.3+json`, as
 * `cosign sign --new-bundle-format` attaches them as OCI 1.1 referrers),
 * verified by @sigstore/verify, fully offline, in one of two ways:
 *
 * - signed by a key (`publicKey` material): against each trusted key, with
 *   every threshold (transparency log, certificate transparency, timestamps)
 *   0 — the key is the only trust; log entries the bundle carries are not
 *   consulted (there is no pinned log to check them against);
 * - keyless (a Fulcio certificate): against the pinned trusted root and the
 *   identity policy (keyless.ts); without a trusted root such a bundle is
 *   signed by nobody trusted.
 *
 * What a bundle must say is signature-policy.ts's decision: a DSSE envelope
 * whose in-toto statement has cosign's signing predicate and names the
 * manifest digest and the repository on one subject (or a simple-signing
 * payload); an attestation is never a signature, and a message signature over
 * the manifest's bytes names no repository, so it is not accepted. The
 * signature is checked first (a statement nobody trusted signed says nothing),
 * then what it says, as for cosign's tag form (cosign.ts).
 *
 * Writing (publish): a key-signed DSSE bundle whose in-toto statement names
 * the manifest digest (cosign's sign predicate), as `cosign sign --key
 * --new-bundle-format` writes it, less the transparency-log entry (the key is
 * the trust, as above). Built with @sigstore/bundle's builders and
 * @sigstore/core's DSSE encoding, signed by node:crypto.
 */
import { sign, type KeyObject } from 'node:crypto';
import { bundleFromJSON, bundleToJSON, isBundleWithDsseEnvelope, toDSSEBundle, type Bundle } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import type { SignatureCheck, TrustedKey } from './cosign.js';
import { checkKeyless, isKeyless, type KeylessTrust } from './keyless.js';
import { COSIGN_SIGN_PREDICATE, IN_TOTO_PAYLOAD, checkAttestation, checkDssePayload, checkMessageSignature, type AttestationRequirement, type ClaimCheck, type SignedSubject } from './signature-policy.js';

/** The media type (artifact type and layer) of a Sigstore bundle referrer. */
export const SIGSTORE_BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
/** Bundle media types accepted in a referrer (0.3 and its older spellings). */
export const SIGSTORE_BUNDLE_TYPES: ReadonlySet<string> = new Set([SIGSTORE_BUNDLE, 'application/vnd.dev.sigstore.bundle+json;version=0.3', 'application/vnd.dev.sigstore.bundle+json;version=0.2']);

/** No authorities at all: key-only verification. */
const EMPTY_ROOT = { mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1', tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities: [] };

function parse(bytes: Uint8Array): Bundle | undefined {
  try {
    return bundleFromJSON(JSON.parse(Buffer.from(bytes).toString('utf8')));
  } catch {
    return undefined;
  }
}

/** The bundle as a key checks it: the key is the trust, log entries (and the timestamps they would give) are not consulted. */
const keyOnly = (bundle: Bundle): Bundle => ({ ...bundle, verificationMaterial: { ...bundle.verificationMaterial, tlogEntries: [], timestampVerificationData: undefined } }) as Bundle;

/** The trust a bundle is checked against: keys, and (keyless) a pinned root with its identities. */
export interface BundleTrust {
  keys: readonly TrustedKey[];
  keyless?: KeylessTrust | undefined;
  /** The repositories a signature may name for this load, normalized (signature-policy.ts's acceptedReferences). */
  references: readonly string[];
  /** Attestations required beside the signature (`verify.require_attestations`), checked against the same signers. */
  attestations?: readonly AttestationRequirement[];
}

/** What a verified bundle says, read against `subject` (signature-policy.ts). */
function claimOf(bundle: Bundle, subject: SignedSubject): ClaimCheck {
  const content = bundle.content;
  if (content.$case === 'dsseEnvelope') return checkDssePayload(content.dsseEnvelope.payloadType, content.dsseEnvelope.payload, subject);
  // A message signature verified over these very bytes binds this digest, and no repository.
  const named = `sha256:${Buffer.from(content.messageSignature.messageDigest?.digest ?? []).toString('hex')}`;
  return named === subject.digest ? checkMessageSignature() : { ok: false, reason: 'wrong-digest', names: named };
}

/**
 * Check one Sigstore bundle against the trust and the manifest (its bytes and digest). A bundle that does not
 * parse is signed by nobody.
 */
export function checkBundle(bundleBytes: Uint8Array, manifest: Uint8Array, subject: SignedSubject, trust: BundleTrust, claim: (bundle: Bundle) => ClaimCheck = (bundle) => claimOf(bundle, subject)): SignatureCheck {
  const bundle = parse(bundleBytes);
  if (bundle === undefined) return { ok: false, reason: 'untrusted-key' };
  const artifact = isBundleWithDsseEnvelope(bundle) ? undefined : Buffer.from(manifest);
  const bound = (signed: { key: string; fingerprint?: string }): SignatureCheck => {
    const said = claim(bundle);
    return said.ok ? { ok: true, ...signed } : said;
  };
  if (isKeyless(bundle)) {
    if (trust.keyless === undefined) return { ok: false, reason: 'untrusted-key' };
    const check = checkKeyless(bundle, artifact, trust.keyless);
    return check.ok ? bound({ key: check.signer }) : check;
  }
  const entity = toSignedEntity(keyOnly(bundle), artifact);
  for (const trusted of trust.keys) {
    const material = toTrustMaterial(EMPTY_ROOT as unknown as Parameters<typeof toTrustMaterial>[0], () => ({ publicKey: trusted.key, validFor: () => true }));
    const verifier = new Verifier(material, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
    try {
      verifier.verify(entity);
    } catch {
      continue;
    }
    return bound({ key: trusted.source, fingerprint: trusted.fingerprint });
  }
  return { ok: false, reason: 'untrusted-key' };
}

/** Check one Sigstore bundle as the attestation `required` asks for, by the same signers a signature must be by. */
export function checkAttestationBundle(bundleBytes: Uint8Array, manifest: Uint8Array, subject: SignedSubject, trust: BundleTrust, required: AttestationRequirement): SignatureCheck {
  return checkBundle(bundleBytes, manifest, subject, trust, (bundle) => bundle.content.$case === 'dsseEnvelope'
    ? checkAttestation(bundle.content.dsseEnvelope.payloadType, bundle.content.dsseEnvelope.payload, subject, required)
    : { ok: false, reason: 'not-a-signature', kind: 'a message signature' });
}

/**
 * A Sigstore bundle (v0.3 JSON bytes) in which `key` (ECDSA P-256) signs an in-toto statement naming `digest`
 * (`name`: the repository, as the statement's subject name); `keyHint` identifies the key (its fingerprint).
 */
export function signBundle(digest: string, name: string, key: KeyObject, keyHint: string): Uint8Array {
  const statement = Buffer.from(JSON.stringify({
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ name, digest: { sha256: digest.slice('sha256:'.length) } }],
    predicateType: COSIGN_SIGN_PREDICATE,
    predicate: {},
  }));
  const signature = sign('sha256', dsse.preAuthEncoding(IN_TOTO_PAYLOAD, statement), { key, dsaEncoding: 'der' });
  return Buffer.from(JSON.stringify(bundleToJSON(toDSSEBundle({ artifact: statement, artifactType: IN_TOTO_PAYLOAD, signature, keyHint }))));
}
