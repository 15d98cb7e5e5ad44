/** cosign's encrypted `cosign.key` format, written the way `cosign generate-key-pair` documents it (for the distribution tests). */
import { randomBytes, scryptSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { secretbox } from '@noble/ciphers/salsa.js';

/** cosign's encrypted key file (in `dir`) for `key` under `password` (`params`: scrypt's, cosign's by default). */
export function cosignKeyFile(dir: string, name: string, key: KeyObject, password: string, params = { N: 32768, r: 8, p: 1 }, label = 'ENCRYPTED SIGSTORE PRIVATE KEY'): string {
  const salt = randomBytes(32);
  const nonce = randomBytes(24);
  const boxKey = scryptSync(password, salt, 32, { ...params, maxmem: 256 * 1024 * 1024 });
  const ciphertext = secretbox(boxKey, nonce).seal(key.export({ type: 'pkcs8', format: 'der' }));
  const body = Buffer.from(JSON.stringify({
    kdf: { name: 'scrypt', params, salt: salt.toString('base64') },
    cipher: { name: 'nacl/secretbox', nonce: nonce.toString('base64') },
    ciphertext: Buffer.from(ciphertext).toString('base64'),
  })).toString('base64');
  const file = join(dir, name);
  writeFileSync(file, `-----BEGIN ${label}-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`);
  return file;
}
