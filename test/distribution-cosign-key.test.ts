/**
 * cosign's encrypted `cosign.key` as a signing key: the file is written here
 * in the format `cosign generate-key-pair` documents (PEM `ENCRYPTED SIGSTORE
 * PRIVATE KEY` around base64 JSON: scrypt N=32768 r=8 p=1 over the password,
 * NaCl secretbox sealing the PKCS#8 DER key), with node:crypto's scrypt and
 * @noble/ciphers' secretbox. Read with the right password it is the same key;
 * a wrong password, a missing one, and scrypt parameters outside what cosign
 * writes are refused with messages that say so. (`toolhost publish --sign-key
 * cosign.key`, in processes of its own: test/e2e/distribution-cosign-publish.test.ts.)
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSigningKey } from '../host/distribution/cosign.js';
import { ToolhostError } from '../host/index.js';
import { cosignKeyFile } from './cosign-key-file.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-cosignkey-'));

const refusal = (run: () => unknown): ToolhostError => {
  try {
    run();
  } catch (error) {
    if (error instanceof ToolhostError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('cosign\'s encrypted cosign.key', () => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = (key: KeyObject): string => (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' }).toString('hex');

  it('reads as the same key with its password (both PEM labels cosign has written)', () => {
    const file = cosignKeyFile(dir, 'cosign.key', pair.privateKey, 'correct horse');
    expect(spki(readSigningKey(file, 'correct horse'))).toBe(spki(pair.publicKey));
    const older = cosignKeyFile(dir, 'older.key', pair.privateKey, '', undefined, 'ENCRYPTED COSIGN PRIVATE KEY');
    expect(spki(readSigningKey(older, ''))).toBe(spki(pair.publicKey));
  });

  it('refuses a wrong password, a missing one, and scrypt parameters cosign does not write, saying which', () => {
    const file = cosignKeyFile(dir, 'wrong.key', pair.privateKey, 'right');
    expect(refusal(() => readSigningKey(file, 'wrong'))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/wrong password \(COSIGN_PASSWORD\)/) as unknown });
    expect(refusal(() => readSigningKey(file))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/encrypted key: give its password in COSIGN_PASSWORD/) as unknown });
    const costly = cosignKeyFile(dir, 'costly.key', pair.privateKey, 'right', { N: 1024, r: 8, p: 1 });
    expect(refusal(() => readSigningKey(costly, 'right'))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/unsupported scrypt parameters N=1024/) as unknown });
  });
});
