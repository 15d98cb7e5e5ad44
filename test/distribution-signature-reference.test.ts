/**
 * A signature binds a component to the repository it names (issue 35, T1):
 * one key signs two repositories (acme/files and acme/ctools); anyone with
 * push rights copies files' manifest and its signature into acme/ctools. The
 * signature is genuine and names the digest, but it says acme/files, so
 * loading acme/ctools refuses it — in cosign's tag form and as a DSSE bundle
 * — while the component signed for acme/ctools loads. Mirrors are accepted
 * only through `verify.reference_aliases`. Against docker-registry on loopback.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptedReferences, normalizeReference } from '../host/distribution/signature-policy.js';
import { loadSource } from './distribution-load.js';
import { IN_TOTO, SIGN_PREDICATE, inToto, keyDsseBundle } from './dsse-bundle.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, hasRegistry } from './oci-registry.js';

const ctoolsWasm = new Uint8Array(readFileSync(example('ctools')));
const filesWasm = new Uint8Array(readFileSync(example('files')));

const storedBlobs = (storeDir: string): string[] => {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe('repository names, normalized as a signature is compared', () => {
  it('gives docker.io to a name without a registry and library/ to a one-segment repository there', () => {
    expect(normalizeReference('busybox')).toBe('docker.io/library/busybox');
    expect(normalizeReference('acme/ctools:v2')).toBe('docker.io/acme/ctools');
    expect(normalizeReference('index.docker.io/library/busybox')).toBe('docker.io/library/busybox');
    expect(normalizeReference('registry-1.docker.io/busybox@sha256:00')).toBe('docker.io/library/busybox');
    expect(normalizeReference('GHCR.io/acme/ctools:v1')).toBe('ghcr.io/acme/ctools');
    expect(normalizeReference('127.0.0.1:5000/acme/ctools')).toBe('127.0.0.1:5000/acme/ctools');
    expect(normalizeReference('localhost/acme')).toBe('localhost/acme');
  });

  it('maps a requested repository through an alias in whole path segments, and nothing else', () => {
    const aliases = { 'mirror.internal:5000/acme': 'ghcr.io/acme' };
    expect(acceptedReferences('mirror.internal:5000', 'acme/ctools', aliases)).toEqual(['mirror.internal:5000/acme/ctools', 'ghcr.io/acme/ctools']);
    expect(acceptedReferences('mirror.internal:5000', 'acme-evil/ctools', aliases)).toEqual(['mirror.internal:5000/acme-evil/ctools']);
    expect(acceptedReferences('ghcr.io', 'acme/ctools', aliases)).toEqual(['ghcr.io/acme/ctools']);
    expect(acceptedReferences('mirror.internal', 'busybox', { 'mirror.internal': 'docker.io' })).toEqual(['mirror.internal/busybox', 'docker.io/library/busybox']);
  });
});

describe.skipIf(!hasRegistry)('a signature is accepted only for the repository it names', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-sigref-'));
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'acme.pub');
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  let files: Pusher;
  let ctools: Pusher;
  let filesDigest = '';

  beforeAll(async () => {
    await registry.start();
    writeFileSync(pub, key.publicKey.export({ type: 'spki', format: 'pem' }));
    files = new Pusher(registry.host, 'acme/files');
    ctools = new Pusher(registry.host, 'acme/ctools');
    // The publisher signs both repositories with one key.
    filesDigest = await files.component('v1', filesWasm);
    await files.cosignSign(filesDigest, key.privateKey);
    await ctools.cosignSign(await ctools.component('v1', ctoolsWasm), key.privateKey);
  }, 30_000);
  afterAll(() => registry.close());

  it('loads the component signed for acme/ctools (control)', async () => {
    expect((await loadSource(`oci://${registry.host}/acme/ctools:v1`, { storeDir: store(), verify: { keys: [pub] } })).tools).toContain('echo');
    expect((await loadSource(`oci://${registry.host}/acme/files:v1`, { storeDir: store(), verify: { keys: [pub] } })).error).toBeUndefined();
  }, 60_000);

  it('refuses acme/files\' component and its genuine signature copied into acme/ctools, storing nothing', async () => {
    // The attacker pushes files' manifest (same bytes, same digest) as acme/ctools:v2, and files' signature with it.
    expect(await ctools.component('v2', filesWasm)).toBe(filesDigest);
    await ctools.cosignSign(filesDigest, key.privateKey, filesDigest, `${registry.host}/acme/files`);
    const storeDir = store();
    const { error, tools } = await loadSource(`oci://${registry.host}/acme/ctools:v2`, { storeDir, verify: { keys: [pub] } });
    expect(tools).toBeUndefined();
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference', signedReference: `${registry.host}/acme/files`, accepted: [`${registry.host}/acme/ctools`] } });
    expect(error?.message).toMatch(/is for .*acme\/files, not for .*acme\/ctools/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a DSSE signing statement naming acme/files attached to the copy in acme/ctools', async () => {
    const digest = await ctools.component('v3', filesWasm);
    await ctools.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, `${registry.host}/acme/files`, SIGN_PREDICATE), key.privateKey));
    // The tag form's signature (still acme/files') is no help either.
    const { error } = await loadSource(`oci://${registry.host}/acme/ctools:v3`, { storeDir: store(), verify: { keys: [pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference' } });
  }, 60_000);

  it('refuses a signing statement that names the digest and no repository (cosign 3\'s bundle), and accepts one naming acme/ctools', async () => {
    const repo = new Pusher(registry.host, 'acme/unnamed');
    const unnamed = await repo.component('v1', ctoolsWasm);
    await repo.referrer(unnamed, keyDsseBundle(IN_TOTO, inToto(unnamed, undefined, SIGN_PREDICATE), key.privateKey));
    expect((await loadSource(`oci://${registry.host}/acme/unnamed:v1`, { storeDir: store(), verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference', signedReference: '' } });
    await repo.referrer(unnamed, keyDsseBundle(IN_TOTO, inToto(unnamed, `${registry.host}/acme/unnamed`, SIGN_PREDICATE), key.privateKey));
    expect((await loadSource(`oci://${registry.host}/acme/unnamed:v1`, { storeDir: store(), verify: { keys: [pub] } })).tools).toContain('echo');
  }, 60_000);

  it('accepts a mirror\'s copy only through verify.reference_aliases, and the alias does not widen to another repository', async () => {
    // mirror/acme/ctools holds ctools' manifest and its signature for acme/ctools (as a mirroring copy would).
    const mirror = new Pusher(registry.host, 'mirror/acme/ctools');
    const digest = await mirror.component('v1', ctoolsWasm);
    await mirror.cosignSign(digest, key.privateKey, digest, `${registry.host}/acme/ctools`);
    const source = `oci://${registry.host}/mirror/acme/ctools:v1`;
    expect((await loadSource(source, { storeDir: store(), verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference' } });
    const aliases = { [`${registry.host}/mirror/acme`]: `${registry.host}/acme` };
    expect((await loadSource(source, { storeDir: store(), verify: { keys: [pub], referenceAliases: aliases } })).tools).toContain('echo');
    // Through the same alias, files' signature still does not make files' component ctools.
    const copy = new Pusher(registry.host, 'mirror/acme/ctools');
    expect(await copy.component('v2', filesWasm)).toBe(filesDigest);
    await copy.cosignSign(filesDigest, key.privateKey, filesDigest, `${registry.host}/acme/files`);
    expect((await loadSource(`oci://${registry.host}/mirror/acme/ctools:v2`, { storeDir: store(), verify: { keys: [pub], referenceAliases: aliases } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference' } });
  }, 60_000);
});
