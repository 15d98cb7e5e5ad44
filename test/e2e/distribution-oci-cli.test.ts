/**
 * `toolhost call --load oci://… --verify-key` (in processes of its own) on a component pushed to a real OCI registry
 * (docker-registry on loopback) and signed in cosign's key-based form by another program; without a trusted key the
 * remote source is refused. (Loading from a registry through the library: test/distribution-oci.test.ts.)
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { example } from '../helpers.js';
import { OciRegistry, Pusher, hasRegistry } from '../oci-registry.js';

describe.skipIf(!hasRegistry)('toolhost call on a component from an OCI registry', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-oci-cli-'));
  const trusted = { pub: join(dir, 'trusted.pub') };

  beforeAll(async () => {
    await registry.start();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(trusted.pub, publicKey.export({ type: 'spki', format: 'pem' }));
    const push = new Pusher(registry.host, 'tools/ctools');
    await push.cosignSign(await push.component('v1', new Uint8Array(readFileSync(example('ctools')))), privateKey);
  }, 30_000);
  afterAll(() => registry.close());

  it('runs `toolhost call --load oci://… --verify-key` on a component pushed and signed by another program', async () => {
    const run = await runCli(['call', 'echo', '--args', '{"via":"cli"}', '--load', `oci://${registry.host}/tools/ctools:v1`, '--verify-key', trusted.pub], 90_000, { env: { TOOLHOST_LOG: 'error' } });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ via: 'cli' });
    const refused = await runCli(['call', 'echo', '--args', '{}', '--load', `oci://${registry.host}/tools/ctools:v1`]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stderr.trim().split('\n').at(-1)!)).toMatchObject({ error: { code: 'SOURCE_UNTRUSTED' } });
  }, 120_000);
});
