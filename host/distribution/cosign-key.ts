/**
 * cosign's encrypted private key, as `cosign generate-key-pair` writes
 * `cosign.key`: a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY` (older cosign:
 * `ENCRYPTED COSIGN PRIVATE KEY`) whose body is JSON —
 * `{kdf: {name: "scrypt", params: {N, r, p}, salt}, cipher: {name:
 * "nacl/secretbox", nonce}, ciphertext}` (bytes in base64) — sealing the
 * PKCS#8 DER key under scrypt(password, salt, 32 bytes).
 *
 * Cryptography from libraries only: scrypt is node:crypto's, NaCl secretbox
 * (XSalsa20-Poly1305) @noble/ciphers'. Guarantees: a wrong password (or an
 * altered file) is told apart from a malformed one — secretbox's tag fails,
 * nothing is half-decrypted; scrypt parameters are limited to the sets
 * cosign and go-securesystemslib write (N 2^15..2^17, r 8, p 1), so a hostile
 * file cannot ask for gigabytes of memory. Not guaranteed: the password is in
 * this process's memory while the key is read.
 */
import { createPrivateKey, scryptSync, type KeyObject } from 'node:crypto';
import { secretbox } from '@noble/ciphers/salsa.js';
import { ToolhostError } from '../base/errors.js';

const BLOCK = /-----BEGIN (ENCRYPTED (?:SIGSTORE|COSIGN) PRIVATE KEY)-----([\s\S]*?)-----END \1-----/;
const SCRYPT_N: ReadonlySet<number> = new Set([1 << 15, 1 << 16, 1 << 17]);

/** Whether a key file's text is cosign's encrypted form. */
export function isEncryptedCosignKey(text: string): boolean {
  return BLOCK.test(text);
}

interface Envelope {
  kdf?: { name?: unknown; params?: { N?: unknown; r?: unknown; p?: unknown }; salt?: unknown };
  cipher?: { name?: unknown; nonce?: unknown };
  ciphertext?: unknown;
}

const base64 = (value: unknown): Buffer | undefined => typeof value === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(value) ? Buffer.from(value, 'base64') : undefined;

/**
 * Decrypt cosign's encrypted key (`text`: the file's PEM) with `password`.
 * @throws INVALID_INPUT naming `file`: a malformed file, unsupported KDF or cipher parameters, or a wrong password.
 */
export function decryptCosignKey(text: string, password: string, file: string): KeyObject {
  const malformed = (why: string): ToolhostError => new ToolhostError('INVALID_INPUT', `${file} is not a readable cosign encrypted key: ${why}`);
  const block = BLOCK.exec(text);
  if (block === null) throw malformed('no ENCRYPTED SIGSTORE PRIVATE KEY block');
  let envelope: Envelope;
  try {
    envelope = JSON.parse(Buffer.from(block[2]!.replace(/\s+/g, ''), 'base64').toString('utf8')) as Envelope;
  } catch {
    throw malformed('its body is not base64 JSON');
  }
  const { kdf, cipher } = envelope;
  if (kdf?.name !== 'scrypt' || cipher?.name !== 'nacl/secretbox') {
    throw malformed(`unsupported key derivation or cipher (${String(kdf?.name)} / ${String(cipher?.name)}; cosign writes scrypt / nacl/secretbox)`);
  }
  const { N, r, p } = kdf.params ?? {};
  if (typeof N !== 'number' || !SCRYPT_N.has(N) || r !== 8 || p !== 1) {
    throw malformed(`unsupported scrypt parameters N=${String(N)} r=${String(r)} p=${String(p)} (accepted: N 32768, 65536 or 131072, r 8, p 1)`);
  }
  const salt = base64(kdf.salt);
  const nonce = base64(cipher.nonce);
  const sealed = base64(envelope.ciphertext);
  if (salt === undefined || salt.length === 0 || nonce?.length !== 24 || sealed === undefined || sealed.length <= 16) {
    throw malformed('its salt, nonce (24 bytes) or ciphertext is missing or not base64');
  }
  const key = scryptSync(Buffer.from(password, 'utf8'), salt, 32, { N, r, p, maxmem: 128 * N * r + 16 * 1024 * 1024 });
  let der: Uint8Array;
  try {
    der = secretbox(key, nonce).open(sealed);
  } catch {
    throw new ToolhostError('INVALID_INPUT', `cannot decrypt ${file}: wrong password (COSIGN_PASSWORD), or the file was altered`);
  }
  try {
    return createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' });
  } catch (error) {
    throw malformed(`the decrypted key is not PKCS#8: ${(error as Error).message}`);
  }
}
