/**
 * `toolhost publish --sign-key cosign.key` (the key file as cosign writes it: test/cosign-key-file.ts; reading it:
 * test/distribution-cosign-key.test.ts) with COSIGN_PASSWORD, or the password typed at its prompt on a terminal
 * (without echo), signs what another host then verifies: the CLI in processes of its own, and an OCI registry.
 */
import { generateKeyPairSync } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { cosignKeyFile } from '../cosign-key-file.js';
import { example, makeRegistry } from '../helpers.js';
import { OciRegistry, hasRegistry } from '../oci-registry.js';

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

describe.skipIf(!hasRegistry)('toolhost publish --sign-key cosign.key', () => {
  const registry = new OciRegistry();
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  it('signs with the key COSIGN_PASSWORD opens, and says what is wrong without it or with a wrong one', async () => {
    const keyFile = cosignKeyFile(dir, 'publish.key', pair.privateKey, 's3cret');
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
