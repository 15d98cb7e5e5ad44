/**
 * cosign's encrypted `cosign.key` as a signing key: the file is written here
 * in the format `cosign generate-key-pair` documents (PEM `ENCRYPTED SIGSTORE
 * PRIVATE KEY` around base64 JSON: scrypt N=32768 r=8 p=1 over the password,
 * NaCl secretbox sealing the PKCS#8 DER key), with node:crypto's scrypt and
 * @noble/ciphers' secretbox. Read with the right password it is the same key;
 * a wrong password, a missing one, and scrypt parameters outside what cosign
 * writes are refused with messages that say so. `toolhost publish --sign-key
 * cosign.key` with COSIGN_PASSWORD (or the password typed at its prompt on a
 * terminal, without echo) signs what another host then verifies.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, scryptSync, type KeyObject } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secretbox } from '@noble/ciphers/salsa.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSigningKey } from '../host/distribution/cosign.js';
import { ToolhostError } from '../host/index.js';
import { example, makeRegistry } from './helpers.js';
import { cliEnv, cliPath, runCli } from './cli-runner.js';
import { OciRegistry, hasRegistry } from './oci-registry.js';

const dir = mkdtempSync(join(tmpdir(), 'toolhost-cosignkey-'));
/** util-linux `script`, to run the CLI on a terminal (the password prompt needs one). */
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/** Run `args` under `script` on a pseudo-terminal, typing `typed` once `prompt` appears; resolves with all it printed. */
function onTerminal(args: string[], prompt: string, typed: string): Promise<{ code: number | null; output: string }> {
  const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
  const env: Record<string, string> = { ...cliEnv(), TOOLHOST_LOG: 'error' };
  delete env.COSIGN_PASSWORD;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', [process.execPath, cliPath, ...args].map(quote).join(' '), '/dev/null'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    let sent = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (!sent && output.includes(prompt)) {
        sent = true;
        child.stdin.write(typed);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** cosign's encrypted key file for `key` under `password` (`params`: scrypt's, cosign's by default). */
function cosignKeyFile(name: string, key: KeyObject, password: string, params = { N: 32768, r: 8, p: 1 }, label = 'ENCRYPTED SIGSTORE PRIVATE KEY'): string {
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
    const file = cosignKeyFile('cosign.key', pair.privateKey, 'correct horse');
    expect(spki(readSigningKey(file, 'correct horse'))).toBe(spki(pair.publicKey));
    const older = cosignKeyFile('older.key', pair.privateKey, '', undefined, 'ENCRYPTED COSIGN PRIVATE KEY');
    expect(spki(readSigningKey(older, ''))).toBe(spki(pair.publicKey));
  });

  it('refuses a wrong password, a missing one, and scrypt parameters cosign does not write, saying which', () => {
    const file = cosignKeyFile('wrong.key', pair.privateKey, 'right');
    expect(refusal(() => readSigningKey(file, 'wrong'))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/wrong password \(COSIGN_PASSWORD\)/) as unknown });
    expect(refusal(() => readSigningKey(file))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/encrypted key: give its password in COSIGN_PASSWORD/) as unknown });
    const costly = cosignKeyFile('costly.key', pair.privateKey, 'right', { N: 1024, r: 8, p: 1 });
    expect(refusal(() => readSigningKey(costly, 'right'))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/unsupported scrypt parameters N=1024/) as unknown });
  });
});

describe.skipIf(!hasRegistry)('toolhost publish --sign-key cosign.key', () => {
  const registry = new OciRegistry();
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  it('signs with the key COSIGN_PASSWORD opens, and says what is wrong without it or with a wrong one', async () => {
    const keyFile = cosignKeyFile('publish.key', pair.privateKey, 's3cret');
    const target = `oci://${registry.host}/acme/encrypted:v1`;
    const publish = (env: Record<string, string>) => runCli(['publish', example('ctools'), target, '--sign-key', keyFile], 90_000, { cwd: dir, env: { TOOLHOST_LOG: 'error', ...env } });

    const wrong = await publish({ COSIGN_PASSWORD: 'nope' });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/cannot decrypt .*publish\.key: wrong password/);
    const missing = await publish({});
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/COSIGN_PASSWORD/);
    // Neither pushed anything.
    expect((await fetch(`http://${registry.host}/v2/acme/encrypted/manifests/v1`, { method: 'HEAD' })).status).toBe(404);

    if (hasScript) {
      // On a terminal without COSIGN_PASSWORD: asked for, not echoed; a wrong one is refused.
      const prompt = `Enter password for private key ${keyFile}: `;
      const typedWrong = await onTerminal(['publish', example('ctools'), target, '--sign-key', keyFile], prompt, 'typed-wrong\r');
      expect(typedWrong.output).toContain(prompt);
      expect(typedWrong.output).toMatch(/wrong password/);
      expect(typedWrong.output).not.toContain('typed-wrong');
      const typed = await onTerminal(['publish', example('ctools'), `oci://${registry.host}/acme/encrypted:typed`, '--sign-key', keyFile], prompt, 's3cret\r');
      expect(typed.code).toBe(0);
      expect(typed.output).toMatch(/"manifestDigest": "sha256:[0-9a-f]{64}"/);
      expect(typed.output).not.toContain('s3cret');
    }
    const published = await publish({ COSIGN_PASSWORD: 's3cret' });
    expect(published.stderr).toBe('');
    const report = JSON.parse(published.stdout) as { manifestDigest: string; signature: string };
    const pub = join(dir, 'publish.pub');
    writeFileSync(pub, pair.publicKey.export({ type: 'spki', format: 'pem' }));
    const host = makeRegistry({ distribution: { storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [pub] } } });
    try {
      const loaded = await host.registerWasmTools(`oci://${registry.host}/acme/encrypted@${report.manifestDigest}`);
      expect(loaded.components.flatMap((component) => component.tools)).toContain('echo');
    } finally {
      await host.close();
    }
  }, 180_000);
});
