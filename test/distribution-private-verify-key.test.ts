/**
 * A verify key (`--verify-key`, `distribution.verify.keys`, a tool's
 * `verify.keys`) that is a PRIVATE key is refused, in every form node:crypto
 * reads one (PKCS#8, SEC1, encrypted PKCS#8, cosign's encrypted cosign.key),
 * with a message naming what to give instead (the public key) and how to
 * derive it. Issue 41: node:crypto's createPublicKey quietly derived the
 * public half, so a host's config carried the publisher's secret without a word.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readPublicKey } from '../host/distribution/cosign.js';
import { cosignKeyFile } from './cosign-key-file.js';
import { loadSource } from './distribution-load.js';
import { runCli } from './cli-runner.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-privverify-'));
const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const write = (name: string, text: string | Buffer): string => {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
};
const publicFile = write('cosign.pub', pair.publicKey.export({ type: 'spki', format: 'pem' }));
const privateFiles = {
  pkcs8: write('key.pem', pair.privateKey.export({ type: 'pkcs8', format: 'pem' })),
  sec1: write('sec1.pem', pair.privateKey.export({ type: 'sec1', format: 'pem' })),
  encrypted: write('enc.pem', pair.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' })),
  cosign: cosignKeyFile(dir, 'cosign.key', pair.privateKey, 'pw'),
};
/** Nothing listens on port 9: a source there fails on the network, after its trust was read. */
const SOURCE = 'oci://127.0.0.1:9/acme/tool:v1';

describe('a private key given as a verify key', () => {
  it('is refused in each form, naming the public key and how to derive it', () => {
    for (const file of Object.values(privateFiles)) {
      let refusal: unknown;
      try {
        readPublicKey(file);
      } catch (error) {
        refusal = error;
      }
      expect(refusal, file).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'private-key', file } });
      expect((refusal as Error).message).toMatch(/PRIVATE key.*PUBLIC key \(cosign\.pub\).*openssl pkey -in .* -pubout/);
    }
  });

  it('refuses a load whose distribution.verify.keys names one, before any request', async () => {
    const { error } = await loadSource(SOURCE, { storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [privateFiles.pkcs8] } });
    expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'private-key' } });
  });

  it('refuses toolhost pull --verify-key with it, with the message on stderr', async () => {
    const run = await runCli(['pull', SOURCE, '--verify-key', privateFiles.pkcs8], 60_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/"code":"INVALID_INPUT".*is a PRIVATE key.*-pubout/);
  }, 90_000);

  it('accepts the public key (control): the load goes on to the registry', async () => {
    expect(readPublicKey(publicFile).fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    const { error } = await loadSource(SOURCE, { storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [publicFile] } });
    expect(error?.code).toBe('SOURCE_UNAVAILABLE');
  });
});
