/**
 * Sigstore bundles attached as OCI 1.1 referrers, against a real registry
 * (docker-registry 2.8, which has no Referrers API: the `sha256-<hex>`
 * referrers tag is the fallback), verified with a public key by
 * @sigstore/verify (key-only, offline). The bundles are built here with
 * @sigstore/bundle's builders and node:crypto, independently of toolhost:
 * a DSSE in-toto statement naming it and its repository (accepted), and a
 * message signature over the manifest (refused: it names no repository).
 * Untrusted keys, a statement naming another digest, and a referrer whose
 * subject is another manifest are refused (or ignored), with nothing stored.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleToJSON, toDSSEBundle, toMessageSignatureBundle } from '@sigstore/bundle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { example } from './helpers.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';
import { loadSource } from './distribution-load.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));
const BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

const storedBlobs = (storeDir: string): string[] => {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** A message-signature bundle: ECDSA P-256 over the manifest's bytes. */
function messageBundle(manifest: Uint8Array, key: KeyObject): unknown {
  return bundleToJSON(toMessageSignatureBundle({ digest: createHash('sha256').update(manifest).digest(), signature: sign('sha256', manifest, key), keyHint: 'test-key' }));
}

/** A DSSE bundle: an in-toto statement naming `subject` and the repository `name` (cosign's sign predicate), signed over DSSE's PAE. */
function dsseBundle(subject: string, key: KeyObject, name: string): unknown {
  const type = 'application/vnd.in-toto+json';
  const statement = Buffer.from(JSON.stringify({ _type: 'https://in-toto.io/Statement/v1', subject: [{ name, digest: { sha256: subject.slice(7) } }], predicateType: 'https://sigstore.dev/cosign/sign/v1', predicate: {} }));
  const pae = Buffer.concat([Buffer.from(`DSSEv1 ${type.length} ${type} ${statement.length} `), statement]);
  return bundleToJSON(toDSSEBundle({ artifact: statement, artifactType: type, signature: sign('sha256', pae, key), keyHint: 'test-key' }));
}

describe.skipIf(!hasRegistry)('Sigstore bundle referrers', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-bundle-'));
  const trusted = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'trusted.pub');
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  let push: Pusher;
  /** Referrers pushed so far, by subject (the fallback tag's index is rewritten with all of them). */
  const referrers = new Map<string, Array<{ mediaType: string; digest: string; size: number; artifactType: string }>>();

  /** A fresh component artifact (its own config, so its own digest) and its manifest's bytes. */
  async function component(tag: string): Promise<{ digest: string; manifest: Uint8Array }> {
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(tag, { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] });
    const response = await fetch(`http://${registry.host}/v2/tools/bundled/manifests/${digest}`, { headers: { accept: OCI_MANIFEST } });
    return { digest, manifest: new Uint8Array(await response.arrayBuffer()) };
  }

  /** Attach `bundle` as a referrer whose subject is `subject`, listed in `listedUnder`'s referrers tag. */
  async function attach(bundle: unknown, subject: string, listedUnder = subject): Promise<void> {
    const layer = await push.blob(Buffer.from(JSON.stringify(bundle)), BUNDLE);
    const config = await push.blob(Buffer.from('{}'), 'application/vnd.oci.empty.v1+json');
    const manifest = { schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: BUNDLE, config, layers: [layer], subject: { mediaType: OCI_MANIFEST, digest: subject, size: 0 } };
    const bytes = Buffer.from(JSON.stringify(manifest));
    const digest = await push.manifest(digestOf(bytes), manifest);
    const list = [...(referrers.get(listedUnder) ?? []), { mediaType: OCI_MANIFEST, digest, size: bytes.byteLength, artifactType: BUNDLE }];
    referrers.set(listedUnder, list);
    const put = await fetch(`http://${registry.host}/v2/tools/bundled/manifests/${listedUnder.replace(':', '-')}`, {
      method: 'PUT', headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' }, body: JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: list }),
    });
    if (put.status !== 201) throw new Error(`referrers tag: ${put.status} ${await put.text()}`);
  }

  beforeAll(async () => {
    await registry.start();
    writeFileSync(pub, trusted.publicKey.export({ type: 'spki', format: 'pem' }));
    push = new Pusher(registry.host, 'tools/bundled');
  }, 30_000);
  afterAll(() => registry.close());

  const kept = { storeDir: '', digest: '' };

  it('refuses a component whose only signature is a message-signature bundle by a trusted key: it names no repository', async () => {
    const { digest, manifest } = await component('message');
    await attach(messageBundle(manifest, trusted.privateKey), digest);
    const storeDir = store();
    expect((await loadSource(`oci://${registry.host}/tools/bundled:message`, { storeDir, verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference', signedReference: '' } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('loads a component signed by a DSSE bundle whose statement names its digest and its repository', async () => {
    const { digest } = await component('dsse');
    await attach(dsseBundle(digest, trusted.privateKey, `${registry.host}/tools/bundled`), digest);
    kept.storeDir = store();
    kept.digest = digest;
    expect(await loadSource(`oci://${registry.host}/tools/bundled:dsse`, { storeDir: kept.storeDir, verify: { keys: [pub] } })).toEqual({ tools: expect.arrayContaining(['echo']) as unknown });
  }, 60_000);

  it('refuses a bundle by an untrusted key, and a trusted statement naming another digest', async () => {
    const untrusted = await component('untrusted');
    await attach(messageBundle(untrusted.manifest, other.privateKey), untrusted.digest);
    await attach(dsseBundle(untrusted.digest, other.privateKey, `${registry.host}/tools/bundled`), untrusted.digest);
    let storeDir = store();
    expect((await loadSource(`oci://${registry.host}/tools/bundled:untrusted`, { storeDir, verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
    expect(storedBlobs(storeDir)).toEqual([]);

    const elsewhere = await component('elsewhere');
    const copied = await component('copied');
    await attach(dsseBundle(elsewhere.digest, trusted.privateKey, `${registry.host}/tools/bundled`), copied.digest);
    storeDir = store();
    expect((await loadSource(`oci://${registry.host}/tools/bundled:copied`, { storeDir, verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-digest', signedDigest: elsewhere.digest } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('ignores a referrer listed for this digest whose subject is another manifest', async () => {
    const signed = await component('signed-elsewhere');
    await attach(messageBundle(signed.manifest, trusted.privateKey), signed.digest);
    const target = await component('borrowed');
    // The trusted bundle of another manifest, listed under this one's referrers tag.
    await attach(messageBundle(signed.manifest, trusted.privateKey), signed.digest, target.digest);
    const storeDir = store();
    expect((await loadSource(`oci://${registry.host}/tools/bundled:borrowed`, { storeDir, verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'unsigned' } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('verifies a kept bundle again offline, with the registry gone (and refuses it to another key)', async () => {
    await registry.stop();
    const pinned = `oci://${registry.host}/tools/bundled@${kept.digest}`;
    expect((await loadSource(pinned, { storeDir: kept.storeDir, verify: { keys: [pub] } })).tools).toContain('echo');
    const otherPub = join(dir, 'other.pub');
    writeFileSync(otherPub, other.publicKey.export({ type: 'spki', format: 'pem' }));
    expect((await loadSource(pinned, { storeDir: kept.storeDir, verify: { keys: [otherPub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
  }, 60_000);
});
