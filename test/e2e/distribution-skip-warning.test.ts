/**
 * `--insecure-skip-verify` is never silent: `toolhost list` marks every tool of
 * a component loaded without checking its signature (stdout) and warns once per
 * source (stderr, also with --json); verified components carry no mark.
 * Against a real registry (docker-registry on loopback).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { example } from '../helpers.js';
import { runCli } from '../cli-runner.js';
import { OciRegistry, Pusher, hasRegistry } from '../oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));

describe.skipIf(!hasRegistry)('list and --insecure-skip-verify', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-skip-'));
  const pub = join(dir, 'key.pub');

  beforeAll(async () => {
    await registry.start();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
    await new Pusher(registry.host, 'tools/unsigned').component('v1', wasm);
    const signed = new Pusher(registry.host, 'tools/signed');
    await signed.cosignSign(await signed.component('v1', wasm), privateKey);
  }, 30_000);
  afterAll(() => registry.close());

  it('marks the tools of a component loaded unverified, and warns on stderr', async () => {
    const source = `oci://${registry.host}/tools/unsigned:v1`;
    const run = await runCli(['list', '--load', source, '--insecure-skip-verify'], 90_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^echo {2}\(.*; from unsigned\)$/m);
    expect(run.stdout).toContain(`WARNING: UNVERIFIED: loaded from ${source}`);
    expect(run.stderr).toContain(`toolhost: warning: ${source} is loaded WITHOUT signature verification`);
    const json = await runCli(['list', '--json', '--load', source, '--insecure-skip-verify'], 90_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    expect(JSON.parse(json.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'echo' })]));
    expect(json.stderr).toContain(`${source} is loaded WITHOUT signature verification`);
  }, 120_000);

  it('marks nothing for a component whose signature was verified', async () => {
    const run = await runCli(['list', '--load', `oci://${registry.host}/tools/signed:v1`, '--verify-key', pub], 90_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^echo /m);
    expect(run.stdout).not.toContain('UNVERIFIED');
  }, 120_000);
});
