/**
 * Keyless Sigstore trust: a bundle whose signer is a short-lived Fulcio
 * certificate, verified fully offline against a pinned `trusted_root.json`
 * (`distribution.verify.trusted_root`) and an identity policy
 * (`distribution.verify.identities`). All cryptography is @sigstore/verify's.
 *
 * What an accepted bundle has shown:
 * - its certificate chains to a certificate authority of the pinned root,
 *   valid at the time the transparency log integrated the entry;
 * - a transparency-log entry of a log of the pinned root: its signed entry
 *   timestamp (the time the certificate is checked at) and, when it carries
 *   one, its Merkle inclusion proof against a checkpoint signed by that log;
 *   the entry's body names this very signature and payload;
 * - an SCT from a CT log of the pinned root, when the root lists CT logs
 *   (a root without CT logs, such as a private deployment's, asks for none);
 * - the signature over the payload by the certificate's key;
 * - the certificate's identity: its OIDC issuer (extension
 *   1.3.6.1.4.1.57264.1.8, else .1.1) equal to a configured `issuer`, and its
 *   subject alternative name (URI, else e-mail) equal to that entry's
 *   `subject`, or wholly matching its `subject_regexp` (RE2, anchored at both
 *   ends: `.*@example\.com` does not match `x@example.com.evil`).
 *
 * Fail closed: a trusted root without identities is refused as a
 * configuration (it would accept anyone Fulcio certified); so are identities
 * without a trusted root. Not checked: revocation (Fulcio certificates live
 * ten minutes; the log time is what they are checked at), and the root's own
 * freshness (it is pinned: updating it is the operator's act, e.g. from
 * sigstore's TUF repository with `cosign trusted-root create` or
 * `sigstore-go`).
 */
import { readFileSync } from 'node:fs';
import type { Bundle } from '@sigstore/bundle';
import { TrustedRoot } from '@sigstore/protobuf-specs';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import { RE2JS } from 're2js';
import { ToolhostError } from '../base/errors.js';

/** Who may have signed (keyless): an OIDC issuer and the certificate's subject, exact or by an RE2 pattern. */
export interface Identity {
  issuer: string;
  subject?: string;
  /** RE2, matched against the whole subject. */
  subjectRegExp?: string;
}

/** A pinned trusted root, ready to verify with, and the identities it is trusted for. */
export interface KeylessTrust {
  /** The trusted_root.json file (for messages). */
  source: string;
  identities: ReadonlyArray<{ identity: Identity; pattern?: RE2JS }>;
  verifier: Verifier;
}

/** What checking a keyless bundle says. */
export type KeylessCheck =
  | { ok: true; signer: string }
  | { ok: false; reason: 'invalid-signature'; detail: string }
  | { ok: false; reason: 'untrusted-identity'; identity: string };

/** An identity for messages and the lock file: `SUBJECT (ISSUER)`. */
export const identityText = (subject: string | undefined, issuer: string | undefined): string => `${subject ?? '(no subject)'} (${issuer ?? 'no issuer'})`;

function compilePattern(pattern: string, file: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `${file}: the identity subject_regexp ${JSON.stringify(pattern)} is not an RE2 pattern: ${(error as Error).message}`);
  }
}

/**
 * Read a pinned trusted root and the identities it is trusted for.
 * @throws INVALID_INPUT for an unreadable root, one without a certificate authority or a transparency log, an
 * identity without an issuer or a subject, or no identity at all.
 */
export function readKeylessTrust(file: string, identities: readonly Identity[]): KeylessTrust {
  if (identities.length === 0) {
    throw new ToolhostError('INVALID_INPUT', `verify.trusted_root ${file} is configured without verify.identities: a trusted root alone would accept a signature by anyone its certificate authority certified; name the identities (issuer and subject) whose signatures are trusted`);
  }
  let root: TrustedRoot;
  try {
    root = TrustedRoot.fromJSON(JSON.parse(readFileSync(file, 'utf8')));
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `cannot read the trusted root ${file}: ${(error as Error).message}`);
  }
  if (root.certificateAuthorities.length === 0 || root.tlogs.length === 0) {
    throw new ToolhostError('INVALID_INPUT', `the trusted root ${file} names no ${root.certificateAuthorities.length === 0 ? 'certificate authority' : 'transparency log'}: keyless signatures cannot be verified against it`);
  }
  const compiled = identities.map((identity) => {
    if (typeof identity.issuer !== 'string' || identity.issuer === '' || (identity.subject === undefined) === (identity.subjectRegExp === undefined)) {
      throw new ToolhostError('INVALID_INPUT', `verify.identities: each identity needs an issuer and exactly one of subject or subject_regexp (${JSON.stringify(identity)})`);
    }
    return identity.subjectRegExp === undefined ? { identity } : { identity, pattern: compilePattern(identity.subjectRegExp, file) };
  });
  let verifier: Verifier;
  try {
    // No public keys here: a key-signed bundle is bundle.ts's business.
    const material = toTrustMaterial(root, () => {
      throw new Error('a keyless trusted root holds no public keys');
    });
    // One log entry (with its signed timestamp) always; an SCT when the root lists CT logs.
    verifier = new Verifier(material, { tlogThreshold: 1, timestampThreshold: 1, ctlogThreshold: root.ctlogs.length > 0 ? 1 : 0 });
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `the trusted root ${file} holds a key or certificate that cannot be read: ${(error as Error).message}`);
  }
  return { source: file, identities: compiled, verifier };
}

/** Whether a bundle is signed by a certificate (keyless) rather than a key. */
export function isKeyless(bundle: Bundle): boolean {
  const material = bundle.verificationMaterial.content.$case;
  return material === 'certificate' || material === 'x509CertificateChain';
}

/**
 * Verify a keyless bundle (`artifact`: the bytes a message signature covers) against the pinned root, then its
 * signer's identity against the policy. The digest it names is the caller's to check.
 */
export function checkKeyless(bundle: Bundle, artifact: Buffer | undefined, trust: KeylessTrust): KeylessCheck {
  let signer: ReturnType<Verifier['verify']>;
  try {
    signer = trust.verifier.verify(toSignedEntity(bundle, artifact));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const cause = (error as { cause?: unknown }).cause;
    const detail = `${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}${cause instanceof Error ? ` (${cause.message})` : ''}`;
    return { ok: false, reason: 'invalid-signature', detail };
  }
  const issuer = signer.identity?.extensions?.issuer;
  const subject = signer.identity?.subjectAlternativeName;
  const match = trust.identities.find(({ identity, pattern }) => issuer !== undefined && subject !== undefined && identity.issuer === issuer
    && (pattern === undefined ? identity.subject === subject : pattern.matches(subject)));
  if (match === undefined) return { ok: false, reason: 'untrusted-identity', identity: identityText(subject, issuer) };
  return { ok: true, signer: identityText(subject, issuer) };
}
