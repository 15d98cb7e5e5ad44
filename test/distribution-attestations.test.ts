/**
 * Attestations are never signatures (issue 35, T2): a DSSE envelope by the
 * trusted key that names the component's digest and repository, but whose
 * statement is an SBOM, a vulnerability scan (even one saying FAILED) or
 * SLSA provenance, or whose payload is not an in-toto statement at all
 * (plain `application/json`), or a tag-form payload of another
 * `critical.type`, does not make an unsigned component load; nothing is
 * stored. The control: the same key's signing statement (cosign's sign
 * predicate) loads it. Against docker-registry on loopback.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSource } from './distribution-load.js';
import { IN_TOTO, SIGN_PREDICATE, inToto, keyDsseBundle } from './dsse-bundle.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, hasRegistry } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));

const storedBlobs = (storeDir: string): string[] => {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe.skipIf(!hasRegistry)('attestations by the trusted key are not signatures', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-attest-'));
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'acme.pub');
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  let push: Pusher;
  let name = '';
  let tags = 0;

  /** A fresh component (its own config, so its own digest) in acme/ctools, unsigned. */
  async function component(): Promise<{ source: string; digest: string }> {
    tags += 1;
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag: tags })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(`t${tags}`, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer] });
    return { source: `oci://${registry.host}/acme/ctools:t${tags}`, digest };
  }

  beforeAll(async () => {
    await registry.start();
    writeFileSync(pub, key.publicKey.export({ type: 'spki', format: 'pem' }));
    push = new Pusher(registry.host, 'acme/ctools');
    name = `${registry.host}/acme/ctools`;
  }, 30_000);
  afterAll(() => registry.close());

  it('refuses a component whose only DSSE envelopes are an SBOM, a failed vulnerability scan and SLSA provenance', async () => {
    const { source, digest } = await component();
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, 'https://spdx.dev/Document', { spdxVersion: 'SPDX-2.3', name: 'ctools' }), key.privateKey));
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, 'https://cosign.sigstore.dev/attestation/vuln/v1', { scanner: { result: 'FAILED' } }), key.privateKey));
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, 'https://slsa.dev/provenance/v1', { buildDefinition: {} }), key.privateKey));
    const storeDir = store();
    const { error, tools } = await loadSource(source, { storeDir, verify: { keys: [pub] } });
    expect(tools).toBeUndefined();
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-a-signature' } });
    expect(error?.message).toMatch(/attestation \(in-toto predicate "https:\/\/spdx\.dev\/Document"\)/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a DSSE envelope whose payload is plain application/json naming the digest', async () => {
    const { source, digest } = await component();
    const payload = Buffer.from(JSON.stringify({ critical: { identity: { 'docker-reference': name }, image: { 'docker-manifest-digest': digest }, type: 'cosign container image signature' } }));
    await push.referrer(digest, keyDsseBundle('application/json', payload, key.privateKey));
    const storeDir = store();
    expect((await loadSource(source, { storeDir, verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-a-signature', signed: 'a DSSE payload of type "application/json"' } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a tag-form payload whose critical.type is not cosign\'s signature type', async () => {
    const { source, digest } = await component();
    const payload = Buffer.from(JSON.stringify({ critical: { identity: { 'docker-reference': name }, image: { 'docker-manifest-digest': digest }, type: 'acme vulnerability report: FAILED' }, optional: null }));
    await push.signatureManifest(digest, [{ payload, signature: sign('sha256', payload, { key: key.privateKey, dsaEncoding: 'der' }).toString('base64') }]);
    expect((await loadSource(source, { storeDir: store(), verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-a-signature' } });
  }, 60_000);

  it('loads it once the same key\'s signing statement is attached beside the attestations (control)', async () => {
    const { source, digest } = await component();
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, 'https://spdx.dev/Document'), key.privateKey));
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, SIGN_PREDICATE), key.privateKey));
    expect((await loadSource(source, { storeDir: store(), verify: { keys: [pub] } })).tools).toContain('echo');
  }, 60_000);
});
