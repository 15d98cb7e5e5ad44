/**
 * `publish` with a key attaches a Sigstore bundle as an OCI 1.1 referrer
 * besides cosign's tag-form signature, and the load path verifies what it
 * pushed: against a real registry without the Referrers API
 * (docker-registry 2.8), the referrers tag `sha256-HEX` lists it; with the
 * cosign tag overwritten by a stranger's signature, the bundle alone carries
 * the load; a second bundle for the same digest is added beside the first.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../host/distribution/oci-client.js';
import { publishComponent, pushBundleReferrer } from '../host/distribution/publish.js';
import { parseSource, type OciSource } from '../host/distribution/source.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, hasRegistry } from './oci-registry.js';
import { loadSource } from './distribution-load.js';

const BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

describe.skipIf(!hasRegistry)('publish attaches a Sigstore bundle referrer that the load path verifies', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-pubbundle-'));
  const author = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const second = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = (name: string, key: typeof author): string => {
    const file = join(dir, `${name}.pub`);
    writeFileSync(file, key.publicKey.export({ type: 'spki', format: 'pem' }));
    return file;
  };
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  const referrersTag = async (digest: string): Promise<Array<{ digest: string; artifactType: string }>> => {
    const response = await fetch(`http://${registry.host}/v2/acme/signed/manifests/${digest.replace(':', '-')}`, { headers: { accept: 'application/vnd.oci.image.index.v1+json' } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { manifests: Array<{ digest: string; artifactType: string }> }).manifests;
  };

  it('lists the bundle in the referrers tag, and loads on the bundle alone when the cosign tag is a stranger\'s', async () => {
    const target = parseSource(`oci://${registry.host}/acme/signed:v1`) as OciSource;
    const report = await publishComponent(new Uint8Array(readFileSync(example('ctools'))), target, { exports: [], imports: [], signingKey: author.privateKey });
    expect(report.bundleListed).toBe(report.manifestDigest.replace(':', '-'));
    const listed = await referrersTag(report.manifestDigest);
    expect(listed).toEqual([expect.objectContaining({ digest: report.bundle, artifactType: BUNDLE })]);
    const referrer = await (await fetch(`http://${registry.host}/v2/acme/signed/manifests/${report.bundle!}`, { headers: { accept: OCI_MANIFEST } })).json() as { subject: { digest: string }; layers: Array<{ mediaType: string }> };
    expect(referrer).toMatchObject({ subject: { digest: report.manifestDigest }, layers: [{ mediaType: BUNDLE }] });

    // cosign's tag now holds a stranger's signature: only the bundle is by the author.
    await new Pusher(registry.host, 'acme/signed').cosignSign(report.manifestDigest, stranger.privateKey);
    const pinned = `oci://${registry.host}/acme/signed@${report.manifestDigest}`;
    expect((await loadSource(pinned, { storeDir: store(), verify: { keys: [pub('author', author)] } })).tools).toContain('echo');
    expect((await loadSource(pinned, { storeDir: store(), verify: { keys: [pub('second', second)] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });

    // A second bundle for the same digest (a co-signer) is listed beside the first, and each one verifies.
    const client = new RegistryClient(registry.host, 'acme/signed', { insecureRegistries: [], maxManifestBytes: 1 << 20, maxBlobBytes: 1 << 20 });
    const manifest = await client.manifest(report.manifestDigest);
    const again = await pushBundleReferrer(client, { mediaType: OCI_MANIFEST, digest: report.manifestDigest, size: manifest!.bytes.byteLength }, second.privateKey);
    expect((await referrersTag(report.manifestDigest)).map((entry) => entry.digest)).toEqual([report.bundle, again.digest]);
    expect((await loadSource(pinned, { storeDir: store(), verify: { keys: [pub('second', second)] } })).tools).toContain('echo');
    expect((await loadSource(pinned, { storeDir: store(), verify: { keys: [pub('author', author)] } })).tools).toContain('echo');
  }, 90_000);
});
