/**
 * A signed component copied to a mirror with Debian's skopeo (1.9) still
 * verifies there, in both signature forms: cosign's `sha256-HEX.sig` tag, and
 * the Sigstore bundle referrer listed in the `sha256-HEX` referrers tag. skopeo
 * rewrites that index without each entry's `artifactType` (issue 41): the
 * referrer is then known by its own manifest's `artifactType` (or config media
 * type), which the host reads when the index entry says nothing. Against a
 * real docker-registry (distribution 2.8, no Referrers API).
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishComponent } from '../host/distribution/publish.js';
import { parseSource, type OciSource } from '../host/distribution/source.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, hasRegistry } from './oci-registry.js';
import { loadSource } from './distribution-load.js';

const hasSkopeo = spawnSync('skopeo', ['--version'], { stdio: 'ignore' }).status === 0;
const INDEX = 'application/vnd.oci.image.index.v1+json';

describe.skipIf(!hasRegistry || !hasSkopeo)('a signed component copied by skopeo verifies in the mirror', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-skopeo-'));
  const author = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const keyFile = join(dir, 'author.pub');
  writeFileSync(keyFile, author.publicKey.export({ type: 'spki', format: 'pem' }));
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  const copy = (from: string, to: string): void => {
    const run = spawnSync('skopeo', ['copy', '--all', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${registry.host}/${from}`, `docker://${registry.host}/${to}`], { encoding: 'utf8', timeout: 60_000 });
    if (run.status !== 0) throw new Error(`skopeo copy ${from} ${to}: ${run.stderr}`);
  };
  const index = async (repository: string, tag: string): Promise<{ manifests: Array<Record<string, unknown>> }> => {
    const response = await fetch(`http://${registry.host}/v2/${repository}/manifests/${tag}`, { headers: { accept: INDEX } });
    expect(response.status).toBe(200);
    return await response.json() as { manifests: Array<Record<string, unknown>> };
  };
  const mirrorTrust = (): { keys: string[]; referenceAliases: Record<string, string> } => ({ keys: [keyFile], referenceAliases: { [`${registry.host}/mirror`]: `${registry.host}/acme` } });
  let published: Awaited<ReturnType<typeof publishComponent>>;

  beforeAll(async () => {
    const target = parseSource(`oci://${registry.host}/acme/tool:v1`) as OciSource;
    published = await publishComponent(new Uint8Array(readFileSync(example('ctools'))), target, { exports: [], imports: [], signingKey: author.privateKey });
    copy('acme/tool:v1', 'mirror/tool:v1');
  }, 90_000);

  it('verifies the tag form (sha256-HEX.sig) skopeo copied', async () => {
    copy(`acme/tool:${published.signature!}`, `mirror/tool:${published.signature!}`);
    const pinned = `oci://${registry.host}/mirror/tool@${published.manifestDigest}`;
    const loaded = await loadSource(pinned, { storeDir: store(), verify: mirrorTrust() });
    expect(loaded.error).toBeUndefined();
    expect(loaded.tools).toContain('echo');
  }, 90_000);

  it('verifies the bundle referrer whose index entry skopeo copied without artifactType', async () => {
    const tag = published.manifestDigest.replace(':', '-');
    // A repository with only the referrers tag: no cosign tag to fall back on.
    copy('acme/tool:v1', 'bundled/tool:v1');
    copy(`acme/tool:${tag}`, `bundled/tool:${tag}`);
    const copied = await index('bundled/tool', tag);
    expect(copied.manifests).toHaveLength(1);
    expect(copied.manifests[0]!.digest).toBe(published.bundle);
    // What this test is about: skopeo 1.9 drops the entry's artifactType (a newer one may keep it; then the test
    // still checks the copy verifies).
    if (spawnSync('skopeo', ['--version'], { encoding: 'utf8' }).stdout.includes(' 1.9')) expect(copied.manifests[0]!.artifactType).toBeUndefined();
    const pinned = `oci://${registry.host}/bundled/tool@${published.manifestDigest}`;
    const trust = { keys: [keyFile], referenceAliases: { [`${registry.host}/bundled`]: `${registry.host}/acme` } };
    const loaded = await loadSource(pinned, { storeDir: store(), verify: trust });
    expect(loaded.error).toBeUndefined();
    expect(loaded.tools).toContain('echo');
  }, 90_000);

  it('still refuses an untyped index entry whose manifest is not a Sigstore bundle (control)', async () => {
    // A referrers index entry without artifactType pointing at the component's own manifest (not a bundle).
    const pusher = new Pusher(registry.host, 'odd/tool');
    const digest = await pusher.component('v1', new Uint8Array(readFileSync(example('ctools'))));
    const put = await fetch(`http://${registry.host}/v2/odd/tool/manifests/${digest.replace(':', '-')}`, {
      method: 'PUT', headers: { 'content-type': INDEX },
      body: JSON.stringify({ schemaVersion: 2, mediaType: INDEX, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: 1 }] }),
    });
    expect(put.status).toBe(201);
    const { error } = await loadSource(`oci://${registry.host}/odd/tool@${digest}`, { storeDir: store(), verify: { keys: [keyFile] } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'unsigned' } });
  }, 90_000);
});
