/**
 * cosign's key-based signatures, in the tag form `cosign sign --key` writes:
 * a simple-signing payload naming the manifest digest
 * (`critical.image.docker-manifest-digest`) and the repository
 * (`critical.identity.docker-reference`; what that binds is
 * signature-policy.ts's), signed with ECDSA P-256 over its
 * SHA-256 (DER, base64 in the layer annotation
 * `dev.cosignproject.cosign/signature`). All cryptography is node:crypto's.
 *
 * Keys: public keys as PEM (SPKI, what `cosign generate-key-pair` writes as
 * cosign.pub); signing keys as PKCS#8 or SEC1 PEM, or cosign's own encrypted
 * `cosign.key` (scrypt + NaCl secretbox, cosign-key.ts) with its password.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ToolhostError } from '../base/errors.js';
import { decryptCosignKey, isEncryptedCosignKey } from './cosign-key.js';
import { SIMPLE_SIGNING_TYPE, checkSimpleSigning, type ClaimCheck, type SignedSubject } from './signature-policy.js';

/** A trusted public key and where it came from (a file, or `inline`). */
export interface TrustedKey {
  key: KeyObject;
  /** For messages: the file it was read from. */
  source: string;
  /** `sha256:` of its SPKI (DER): what the lock file records as the signer. */
  fingerprint: string;
}

/** A key's fingerprint: `sha256:` of its SPKI DER. */
export function keyFingerprint(key: KeyObject): string {
  return `sha256:${createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex')}`;
}

function checkP256(key: KeyObject, source: string): void {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new ToolhostError('INVALID_INPUT', `${source}: only ECDSA P-256 keys are supported (cosign's default), not ${key.asymmetricKeyType ?? 'unknown'} ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim());
  }
}

/**
 * Whether `bytes` hold a private key (PKCS#8, SEC1, an encrypted PKCS#8, or cosign's encrypted `cosign.key`), as
 * node:crypto reads it: `createPublicKey` would quietly derive the public half from one, so a verify key that is a
 * secret is refused rather than used (its holder should not have it, and should not spread it).
 */
function isPrivateKey(bytes: Buffer): boolean {
  // An encrypted key (PKCS#8, cosign's) cannot be parsed without its password: its PEM label says what it is.
  if (PRIVATE_PEM.test(bytes.toString('latin1')) || isEncryptedCosignKey(bytes.toString('utf8'))) return true;
  try {
    createPrivateKey(bytes);
    return true;
  } catch {
    return false;
  }
}

/** The PEM labels of private keys: PKCS#8 (`PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`), PKCS#1, cosign's. */
const PRIVATE_PEM = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/**
 * Read a PEM public key (SPKI) from a file.
 * @throws INVALID_INPUT for an unreadable or unsupported key, and (`details.reason: "private-key"`) for a private key.
 */
export function readPublicKey(file: string): TrustedKey {
  let key: KeyObject;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `cannot read the public key ${file}: ${(error as Error).message}`);
  }
  if (isPrivateKey(bytes)) {
    throw new ToolhostError('INVALID_INPUT', `${file} is a PRIVATE key, and a verify key must be the publisher's PUBLIC key (cosign.pub): give the public key instead (derive it with \`openssl pkey -in ${file} -pubout -out key.pub\`, or \`cosign public-key --key ${file} > cosign.pub\` for cosign's encrypted key), and keep the private key out of the host's config`, { details: { reason: 'private-key', file } });
  }
  try {
    key = createPublicKey(bytes);
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `cannot read the public key ${file}: ${(error as Error).message}`);
  }
  checkP256(key, file);
  return { key, source: file, fingerprint: keyFingerprint(key) };
}

/** Whether a signing key file is cosign's encrypted `cosign.key` (which needs a password). */
export function signingKeyNeedsPassword(file: string): boolean {
  return isEncryptedCosignKey(readFileSync(file, 'utf8'));
}

/**
 * Read a signing key from a file: a PEM key (PKCS#8 or SEC1, unencrypted), or cosign's encrypted `cosign.key`
 * with `password` (what COSIGN_PASSWORD or a prompt gave).
 * @throws INVALID_INPUT for an unreadable or unsupported key, a missing or wrong password.
 */
export function readSigningKey(file: string, password?: string): KeyObject {
  const text = readFileSync(file, 'utf8');
  let key: KeyObject;
  if (isEncryptedCosignKey(text)) {
    if (password === undefined) throw new ToolhostError('INVALID_INPUT', `${file} is cosign's encrypted key: give its password in COSIGN_PASSWORD (or run interactively to be asked for it)`);
    key = decryptCosignKey(text, password, file);
  } else {
    try {
      key = createPrivateKey(text);
    } catch (error) {
      throw new ToolhostError('INVALID_INPUT', `cannot read the signing key ${file}: ${(error as Error).message}`);
    }
  }
  checkP256(key, file);
  return key;
}

/** The simple-signing payload cosign signs for a manifest digest. */
export function simpleSigningPayload(dockerReference: string, digest: string): Uint8Array {
  return Buffer.from(JSON.stringify({
    critical: { identity: { 'docker-reference': dockerReference }, image: { 'docker-manifest-digest': digest }, type: SIMPLE_SIGNING_TYPE },
    optional: null,
  }));
}

/** Sign a payload: base64 DER ECDSA P-256 over its SHA-256 (cosign's form). */
export function signPayload(payload: Uint8Array, key: KeyObject): string {
  return sign('sha256', payload, { key, dsaEncoding: 'der' }).toString('base64');
}

/** The outcome of checking one signature against the trusted keys and what it must bind (signature-policy.ts). */
export type SignatureCheck =
  | { ok: true; key: string; fingerprint?: string }
  | { ok: false; reason: 'untrusted-key' }
  /** Verified, but what was signed is not a signature of this digest under this name (signature-policy.ts). */
  | Exclude<ClaimCheck, { ok: true }>
  /** Keyless: the certificate, log entry or timestamps did not verify against the pinned root. */
  | { ok: false; reason: 'invalid-signature'; detail: string }
  /** Keyless: verified, but by an identity no `verify.identities` entry names. */
  | { ok: false; reason: 'untrusted-identity'; identity: string };

/**
 * Check one cosign signature: first the signature against the keys (a
 * payload nobody trusted signed says nothing), then what the payload says
 * against `subject` (signature-policy.ts: type, digest, repository).
 */
export function checkSignature(payload: Uint8Array, signatureB64: string, subject: SignedSubject, keys: readonly TrustedKey[]): SignatureCheck {
  const signature = Buffer.from(signatureB64, 'base64');
  const signer = keys.find(({ key }) => {
    try {
      return verify('sha256', payload, { key, dsaEncoding: 'der' }, signature);
    } catch {
      return false;
    }
  });
  if (signer === undefined) return { ok: false, reason: 'untrusted-key' };
  const claim = checkSimpleSigning(payload, subject);
  return claim.ok ? { ok: true, key: signer.source, fingerprint: signer.fingerprint } : claim;
}
