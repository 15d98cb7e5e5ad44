/**
 * A load's trust policy (`verify`: keys, or a pinned trusted root with its
 * identities) read into what signatures are checked against. Fail closed: a
 * policy that trusts nobody — no key and no keyless root, or a root without
 * identities, or identities without a root — refuses the source before any
 * request, saying how to configure trust. It also fixes the repositories a
 * signature may name for this source (itself, and its `reference_aliases`;
 * what that binding means is signature-policy.ts's).
 */
import type { BundleTrust } from './bundle.js';
import { readPublicKey } from './cosign.js';
import { untrusted } from './errors.js';
import { readKeylessTrust } from './keyless.js';
import type { TrustPolicy } from './options.js';
import { acceptedReferences } from './signature-policy.js';
import { parseSource } from './source.js';

const HOW = 'name the publisher\'s public key with distribution.verify.keys (or verify.keys on the tool entry, or --verify-key FILE), or a pinned Sigstore trusted root with the signers\' identities (verify.trusted_root and verify.identities); --insecure-skip-verify (verify: { skip: true }) loads it unverified';

/**
 * The keys and keyless root `policy` trusts, for the source `text`.
 * @throws SOURCE_UNTRUSTED `no-trust` when it trusts nobody; INVALID_INPUT for an unreadable key or root.
 */
export function trustOf(policy: TrustPolicy, text: string): BundleTrust {
  const source = parseSource(text);
  const references = source.kind === 'oci' ? acceptedReferences(source.registry, source.repository, policy.referenceAliases) : [];
  const attestations = policy.requireAttestations ?? [];
  const keys = (policy.keys ?? []).map(readPublicKey);
  const identities = policy.identities ?? [];
  if (policy.trustedRoot === undefined && identities.length > 0) {
    throw untrusted('no-trust', text, `verify.identities is configured without verify.trusted_root: a keyless identity is checked against a pinned Sigstore trusted root, and none is named; ${HOW}`);
  }
  if (policy.trustedRoot !== undefined && identities.length === 0) {
    throw untrusted('no-trust', text, `verify.trusted_root is configured without verify.identities: that would accept a signature by anyone the root's certificate authority certified, so it is refused; ${HOW}`);
  }
  if (policy.trustedRoot === undefined) {
    if (keys.length === 0) throw untrusted('no-trust', text, `no trust is configured for remote components, so it is refused: ${HOW}`);
    return { keys, references, attestations };
  }
  return { keys, keyless: readKeylessTrust(policy.trustedRoot, identities), references, attestations };
}
