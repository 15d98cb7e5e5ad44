/**
 * A policy may require attestations beside the signature
 * (`verify.require_attestations`): SLSA provenance from a named builder, by
 * the trusted key, naming the component's digest and repository. A signed
 * component without it, with provenance from another builder, by another
 * key, or for another repository is refused (`missing-attestation`); with it,
 * it loads, and loads again offline from the store (the attestation is kept
 * beside the signature). An attestation never stands in for the signature.
 * Against docker-registry on loopback.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../host/config/index.js';
import type { TrustPolicy } from '../host/distribution/options.js';
import { loadSource } from './distribution-load.js';
import { IN_TOTO, inToto, keyDsseBundle } from './dsse-bundle.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, hasRegistry } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));
const SLSA = 'https://slsa.dev/provenance/v1';
const BUILDER = 'https://github.com/acme/builder/.github/workflows/build.yml@refs/tags/v1';
const provenance = (builder: string): unknown => ({ buildDefinition: { buildType: 'https://acme.example/build/v1' }, runDetails: { builder: { id: builder } } });

describe.skipIf(!hasRegistry)('attestations a policy requires beside the signature', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-attpolicy-'));
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'acme.pub');
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  let push: Pusher;
  let name = '';
  let tags = 0;
  let verify: TrustPolicy;

  /** A fresh component in acme/ctools, signed by the trusted key in cosign's tag form. */
  async function signed(): Promise<{ source: string; digest: string }> {
    tags += 1;
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag: tags })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(`t${tags}`, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer] });
    await push.cosignSign(digest, key.privateKey);
    return { source: `oci://${registry.host}/acme/ctools:t${tags}`, digest };
  }

  beforeAll(async () => {
    await registry.start();
    writeFileSync(pub, key.publicKey.export({ type: 'spki', format: 'pem' }));
    push = new Pusher(registry.host, 'acme/ctools');
    name = `${registry.host}/acme/ctools`;
    verify = { keys: [pub], requireAttestations: [{ predicateType: SLSA, builderId: BUILDER }] };
  }, 30_000);
  afterAll(() => registry.close());

  it('refuses a signed component without provenance, or with provenance from another builder, by another key or for another repository', async () => {
    const bare = await signed();
    expect((await loadSource(bare.source, { storeDir: store(), verify: { keys: [pub] } })).tools).toContain('echo');
    expect((await loadSource(bare.source, { storeDir: store(), verify })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'missing-attestation', predicateType: SLSA, builderId: BUILDER } });

    const elsewhere = await signed();
    await push.referrer(elsewhere.digest, keyDsseBundle(IN_TOTO, inToto(elsewhere.digest, name, SLSA, provenance('https://evil.example/builder')), key.privateKey));
    await push.referrer(elsewhere.digest, keyDsseBundle(IN_TOTO, inToto(elsewhere.digest, name, SLSA, provenance(BUILDER)), other.privateKey));
    await push.referrer(elsewhere.digest, keyDsseBundle(IN_TOTO, inToto(elsewhere.digest, `${registry.host}/acme/files`, SLSA, provenance(BUILDER)), key.privateKey));
    const { error } = await loadSource(elsewhere.source, { storeDir: store(), verify });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'missing-attestation' } });
    expect(error?.message).toMatch(/looked at 3: one for .*acme\/files; provenance by builder "https:\/\/evil\.example\/builder"/);
  }, 60_000);

  it('never takes the attestation for the signature: provenance alone does not load an unsigned component', async () => {
    tags += 1;
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag: tags })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(`t${tags}`, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer] });
    await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, name, SLSA, provenance(BUILDER)), key.privateKey));
    expect((await loadSource(`oci://${registry.host}/acme/ctools:t${tags}`, { storeDir: store(), verify })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-a-signature' } });
  }, 60_000);

  it('loads a signed component with provenance from the named builder, and again offline from the store (control)', async () => {
    const good = await signed();
    await push.referrer(good.digest, keyDsseBundle(IN_TOTO, inToto(good.digest, name, SLSA, provenance(BUILDER)), key.privateKey), { 'dev.sigstore.bundle.predicateType': SLSA });
    const storeDir = store();
    expect((await loadSource(good.source, { storeDir, verify })).tools).toContain('echo');
    await registry.stop();
    expect((await loadSource(`oci://${registry.host}/acme/ctools@${good.digest}`, { storeDir, verify })).tools).toContain('echo');
  }, 60_000);

  it('takes the requirement from toolhost.yaml, and refuses an entry without a predicate type', async () => {
    const file = join(dir, 'toolhost.yaml');
    writeFileSync(file, `distribution:\n  verify:\n    keys: [acme.pub]\n    require_attestations: [{ predicate_type: "${SLSA}", builder_id: "${BUILDER}" }]\n`);
    expect((await loadConfig(file, { env: {} })).resolved.distribution.verify).toMatchObject({ requireAttestations: [{ predicateType: SLSA, builderId: BUILDER }] });
    writeFileSync(file, `distribution:\n  verify:\n    keys: [acme.pub]\n    require_attestations: [{ builder_id: "${BUILDER}" }]\n`);
    await expect(loadConfig(file, { env: {} })).rejects.toBeInstanceOf(ConfigError);
  });
});
