/**
 * Signature manifests are bounded (issue 35, T4): a `sha256-HEX.sig`
 * manifest with more layers than `distribution.max_signature_layers`, or a
 * referrers index listing more bundles, is refused before any payload is
 * fetched; a payload declaring more than `max_signature_bytes` is never
 * requested; payloads are fetched one at a time, each checked before the
 * next (the first accepted one ends the search). Each refusal is a
 * SOURCE_INTEGRITY `too-large` counted as a limit hit. A counting front on
 * loopback sees every request toolhost makes to docker-registry.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError } from '../host/index.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { IN_TOTO, SIGN_PREDICATE, inToto, keyDsseBundle } from './dsse-bundle.js';
import { example, makeRegistry } from './helpers.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));

/** Load `source` into a fresh registry, counting limit hits. */
async function load(source: string, distribution: DistributionOptions): Promise<{ error?: ToolhostError; tools?: string[]; limits: string[] }> {
  const registry = makeRegistry({ distribution });
  const limits: string[] = [];
  registry.onLimitHit((_tool, limit) => limits.push(limit));
  try {
    const report = await registry.registerWasmTools(source);
    return { tools: report.components.flatMap((component) => component.tools), limits };
  } catch (error) {
    if (error instanceof ToolhostError) return { error, limits };
    throw error;
  } finally {
    await registry.close();
  }
}

describe.skipIf(!hasRegistry)('signature manifests are bounded', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-siglimits-'));
  const trusted = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'trusted.pub');
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  /** Every request the front passed on (`METHOD PATH`). */
  const requests: string[] = [];
  let front: Server;
  let frontHost = '';
  let push: Pusher;
  let tags = 0;

  /** A fresh unsigned component in acme/ctools (its own config, so its own digest). */
  async function component(): Promise<{ source: string; digest: string }> {
    tags += 1;
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag: tags })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(`t${tags}`, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer] });
    return { source: `oci://${frontHost}/acme/ctools:t${tags}`, digest };
  }

  /** A simple-signing layer for `digest` under the front's name, by `key` (`pad`: bytes of filler, to make it distinct or large). */
  function layer(digest: string, key: KeyObject, pad: string): { payload: Uint8Array; signature: string } {
    const payload = Buffer.from(JSON.stringify({ critical: { identity: { 'docker-reference': `${frontHost}/acme/ctools` }, image: { 'docker-manifest-digest': digest }, type: 'cosign container image signature' }, optional: { pad } }));
    return { payload, signature: sign('sha256', payload, { key, dsaEncoding: 'der' }).toString('base64') };
  }

  const blobReads = (digests: readonly string[]): string[] => requests.filter((line) => digests.some((digest) => line.endsWith(`/blobs/${digest}`)));

  beforeAll(async () => {
    await registry.start();
    writeFileSync(pub, trusted.publicKey.export({ type: 'spki', format: 'pem' }));
    push = new Pusher(registry.host, 'acme/ctools');
    front = createServer(async (request, response) => {
      requests.push(`${request.method} ${request.url}`);
      const upstream = await fetch(`http://${registry.host}${request.url}`, { method: request.method, headers: { accept: String(request.headers.accept ?? '') }, redirect: 'manual' });
      const headers: Record<string, string> = {};
      upstream.headers.forEach((value, name) => { if (name !== 'content-length' && name !== 'content-encoding' && name !== 'transfer-encoding') headers[name] = value; });
      response.writeHead(upstream.status, headers).end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    frontHost = `127.0.0.1:${(front.address() as { port: number }).port}`;
  }, 30_000);
  afterAll(async () => {
    await new Promise((resolve) => front.close(resolve));
    await registry.close();
  });

  it('refuses a .sig manifest of 40 layers over the default cap of 16 without fetching any payload, and counts the limit hit', async () => {
    const { source, digest } = await component();
    // 39 signatures by another key, and the trusted one last: none of them is looked at.
    const layers = [...Array.from({ length: 39 }, (_, index) => layer(digest, other.privateKey, `junk-${index}`)), layer(digest, trusted.privateKey, 'real')];
    await push.signatureManifest(digest, layers);
    requests.length = 0;
    const { error, limits } = await load(source, { storeDir: store(), verify: { keys: [pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'too-large', limitHit: 'max_signature_layers', count: 40, cap: 16 } });
    expect(error?.message).toMatch(/40 signature layers, over the cap of 16 \(distribution\.max_signature_layers\)/);
    expect(limits).toEqual(['max_signature_layers']);
    expect(blobReads(layers.map(({ payload }) => digestOf(payload)))).toEqual([]);
    expect(blobReads([digestOf(wasm)])).toEqual([]);

    // The operator may raise the cap: then they are read one at a time until the trusted one, and it loads.
    requests.length = 0;
    expect((await load(source, { storeDir: store(), verify: { keys: [pub] }, maxSignatureLayers: 40 })).tools).toContain('echo');
    expect(blobReads(layers.map(({ payload }) => digestOf(payload)))).toHaveLength(40);
  }, 60_000);

  it('fetches payloads one at a time and stops at the first accepted one', async () => {
    const { source, digest } = await component();
    const layers = [layer(digest, trusted.privateKey, 'first'), ...Array.from({ length: 10 }, (_, index) => layer(digest, other.privateKey, `later-${index}`))];
    await push.signatureManifest(digest, layers);
    requests.length = 0;
    expect((await load(source, { storeDir: store(), verify: { keys: [pub] } })).tools).toContain('echo');
    expect(blobReads(layers.map(({ payload }) => digestOf(payload)))).toEqual([`GET /v2/acme/ctools/blobs/${digestOf(layers[0]!.payload)}`]);
  }, 60_000);

  it('refuses a payload declaring more than max_signature_bytes without requesting it', async () => {
    const { source, digest } = await component();
    const large = layer(digest, trusted.privateKey, 'x'.repeat(200 * 1024));
    await push.signatureManifest(digest, [large]);
    requests.length = 0;
    const { error, limits } = await load(source, { storeDir: store(), verify: { keys: [pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'too-large', limitHit: 'max_signature_bytes', cap: 65536 } });
    expect(error?.message).toMatch(/distribution\.max_signature_bytes/);
    expect(limits).toEqual(['max_signature_bytes']);
    expect(blobReads([digestOf(large.payload)])).toEqual([]);
    // Under a cap that admits it, the same signature is accepted (control).
    expect((await load(source, { storeDir: store(), verify: { keys: [pub] }, maxSignatureBytes: 256 * 1024 })).tools).toContain('echo');
  }, 60_000);

  it('refuses a referrers index listing more bundles than the cap before fetching any of them', async () => {
    const { source, digest } = await component();
    const referrers: string[] = [];
    for (let index = 0; index < 17; index += 1) {
      referrers.push(await push.referrer(digest, keyDsseBundle(IN_TOTO, inToto(digest, `${frontHost}/acme/ctools`, SIGN_PREDICATE, { index }), other.privateKey)));
    }
    requests.length = 0;
    const { error } = await load(source, { storeDir: store(), verify: { keys: [pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'too-large', limitHit: 'max_signature_layers', count: 17 } });
    expect(requests.filter((line) => referrers.some((referrer) => line.endsWith(`/manifests/${referrer}`)))).toEqual([]);
  }, 60_000);
});
