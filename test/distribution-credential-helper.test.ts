/**
 * Docker credential helpers: docker's config.json names a helper
 * (`credHelpers` for one registry, `credsStore` for all); toolhost runs
 * `docker-credential-NAME get` with the server on stdin and uses the
 * `{Username, Secret}` it prints against a real registry with htpasswd Basic
 * auth. The helper is a shell script this test writes to a temporary
 * directory first on PATH; its behaviour is chosen by an environment variable.
 * "credentials not found" is no credential (the registry's 401 is reported);
 * a helper that hangs, floods its output, fails, or is not on PATH is a
 * SOURCE_UNAVAILABLE that says so (a limit hit names its limit), and its
 * output never appears in the message.
 */
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../host/base/logger.js';
import { RemoteFetcher } from '../host/distribution/fetch.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { ToolhostError } from '../host/index.js';
import { example } from './helpers.js';
import { HTPASSWD, OciRegistry, Pusher, hasRegistry } from './oci-registry.js';

const HELPER = `#!/bin/sh
# A docker credential helper for tests: HELPER_MODE chooses what it does.
read -r server
printf '%s' "$server" > "$HELPER_SEEN"
case "$HELPER_MODE" in
  good) printf '{"ServerURL":"%s","Username":"${HTPASSWD.username}","Secret":"${HTPASSWD.password}"}' "$server" ;;
  missing) echo "credentials not found in native keychain"; exit 1 ;;
  hang) sleep 30 ;;
  flood) head -c 200000 /dev/zero | tr '\\0' 'x' ;;
  fail) echo "helper exploded: secret-looking-output" >&2; exit 3 ;;
  garbage) echo "not json but a SECRET-VALUE" ;;
esac
`;

describe.skipIf(!hasRegistry)('docker credential helpers', () => {
  const registry = new OciRegistry({ auth: true });
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-credhelper-'));
  const bin = join(dir, 'bin');
  const seen = join(dir, 'seen');
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'key.pub');
  let source = '';

  beforeAll(async () => {
    await registry.start();
    mkdirSync(bin);
    writeFileSync(join(bin, 'docker-credential-toolhosttest'), HELPER);
    chmodSync(join(bin, 'docker-credential-toolhosttest'), 0o755);
    writeFileSync(pub, key.publicKey.export({ type: 'spki', format: 'pem' }));
    const push = new Pusher(registry.host, 'private/tool', `Basic ${Buffer.from(`${HTPASSWD.username}:${HTPASSWD.password}`).toString('base64')}`);
    const digest = await push.component('v1', new Uint8Array(readFileSync(example('ctools'))));
    await push.cosignSign(digest, key.privateKey);
    source = `oci://${registry.host}/private/tool:v1`;
  }, 30_000);
  afterAll(() => registry.close());

  /** Fetch with docker's config `docker` (written to a fresh DOCKER_CONFIG) and the helper in `mode`. */
  async function fetchWith(docker: unknown, mode: string, options: Partial<DistributionOptions> = {}): Promise<{ error?: ToolhostError; ms: number }> {
    const config = mkdtempSync(join(dir, 'docker-'));
    writeFileSync(join(config, 'config.json'), JSON.stringify(docker));
    const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, DOCKER_CONFIG: config, HELPER_MODE: mode, HELPER_SEEN: seen };
    const fetcher = new RemoteFetcher({ storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [pub] }, ...options }, silentLogger, env);
    const started = performance.now();
    try {
      await fetcher.fetch(source, undefined);
      return { ms: performance.now() - started };
    } catch (error) {
      if (error instanceof ToolhostError) return { error, ms: performance.now() - started };
      throw error;
    }
  }

  it('fetches with what credHelpers\' helper gives for this registry, the registry named on its stdin', async () => {
    writeFileSync(seen, '');
    expect(await fetchWith({ credHelpers: { [registry.host]: 'toolhosttest' } }, 'good')).toEqual({ ms: expect.any(Number) as unknown });
    expect(readFileSync(seen, 'utf8')).toBe(registry.host);
  }, 60_000);

  it('uses credsStore for every registry, and a credHelpers entry before it', async () => {
    expect((await fetchWith({ credsStore: 'toolhosttest' }, 'good')).error).toBeUndefined();
    const other = await fetchWith({ credsStore: 'toolhosttest', credHelpers: { [registry.host]: 'absent' } }, 'good');
    expect(other.error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'credential-helper' } });
    expect(other.error?.message).toMatch(/docker-credential-absent is not on PATH/);
  }, 60_000);

  it('treats "credentials not found" as no credential: the registry\'s refusal is what is reported', async () => {
    const { error } = await fetchWith({ credsStore: 'toolhosttest' }, 'missing');
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { status: 401 } });
  }, 60_000);

  it('kills a helper past its time limit or output cap, naming the limit', async () => {
    const slow = await fetchWith({ credsStore: 'toolhosttest' }, 'hang', { credentialHelperTimeoutMs: 300 });
    expect(slow.error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'credential-helper', limitHit: 'credential_helper_timeout_ms' } });
    expect(slow.ms).toBeLessThan(10_000);
    const flood = await fetchWith({ credsStore: 'toolhosttest' }, 'flood', { credentialHelperMaxBytes: 1024 });
    expect(flood.error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'credential-helper', limitHit: 'credential_helper_max_bytes' } });
  }, 60_000);

  it('says why a helper failed without repeating what it printed on stdout', async () => {
    const failed = await fetchWith({ credsStore: 'toolhosttest' }, 'fail');
    expect(failed.error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'credential-helper' } });
    expect(failed.error?.message).toMatch(/docker-credential-toolhosttest get failed \(exit 3\): helper exploded/);
    const garbage = await fetchWith({ credsStore: 'toolhosttest' }, 'garbage');
    expect(garbage.error?.message).toMatch(/printed something that is not JSON/);
    expect(garbage.error?.message).not.toMatch(/SECRET-VALUE/);
    const badName = await fetchWith({ credsStore: '../../bin/sh' }, 'good');
    expect(badName.error?.message).toMatch(/is not a plain name/);
  }, 60_000);
});
