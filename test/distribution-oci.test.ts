/**
 * Remote components from a real OCI registry (docker-registry on loopback):
 * a component signed in cosign's key-based form loads and runs; every way a
 * source can be wrong is refused with its own reason, before anything is
 * transpiled, and nothing is stored. Pinned digests survive a moved tag and
 * the registry's absence. (`toolhost call --load oci://…`, in processes of
 * its own: test/e2e/distribution-oci-cli.test.ts.)
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError } from '../host/index.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { example, makeRegistry } from './helpers.js';
import { HTPASSWD, OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));

function keyPair(dir: string, name: string): { key: KeyObject; pub: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, `${name}.pub`);
  writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(dir, `${name}.pem`), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return { key: privateKey, pub };
}

/** The blobs a store holds (none when it was never written). */
function storedBlobs(storeDir: string): string[] {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Load `source` into a fresh registry with its own store; returns the error, or the tools loaded. */
async function load(source: string, distribution: DistributionOptions, onLimit?: (tool: string, limit: string) => void): Promise<{ error?: ToolhostError; tools?: string[]; echo?: unknown }> {
  const registry = makeRegistry({ distribution });
  if (onLimit) registry.onLimitHit(onLimit);
  try {
    const report = await registry.registerWasmTools(source);
    const result = await registry.execute('echo', { hello: 'oci' });
    return { tools: report.components.flatMap((component) => component.tools), echo: result };
  } catch (error) {
    if (error instanceof ToolhostError) return { error };
    throw error;
  } finally {
    await registry.close();
  }
}

describe.skipIf(!hasRegistry)('components from an OCI registry', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-oci-'));
  let trusted: { key: KeyObject; pub: string };
  let other: { key: KeyObject; pub: string };
  let push: Pusher;
  let signedDigest = '';
  const store = (): string => mkdtempSync(join(dir, 'store-'));

  beforeAll(async () => {
    await registry.start();
    trusted = keyPair(dir, 'trusted');
    other = keyPair(dir, 'other');
    push = new Pusher(registry.host, 'tools/ctools');
    signedDigest = await push.component('v1', wasm);
    await push.cosignSign(signedDigest, trusted.key);
  }, 30_000);
  afterAll(() => registry.close());

  it('loads and runs a component signed in cosign\'s form by a trusted key, and keeps it by digest', async () => {
    const storeDir = store();
    const loaded = await load(`oci://${registry.host}/tools/ctools:v1`, { storeDir, verify: { keys: [trusted.pub] } });
    expect(loaded.error).toBeUndefined();
    expect(loaded.tools).toContain('echo');
    expect(storedBlobs(storeDir)).toEqual(expect.arrayContaining([signedDigest.slice(7), digestOf(wasm).slice(7)]));
  });

  it('refuses a remote source when no trust is configured, before any request', async () => {
    const storeDir = store();
    const { error } = await load(`oci://${registry.host}/tools/ctools:v1`, { storeDir });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'no-trust' } });
    expect(error?.message).toMatch(/--verify-key/);
    expect(storedBlobs(storeDir)).toEqual([]);
  });

  it('refuses an unsigned component', async () => {
    const digest = await push.manifest('bare', { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: await push.blob(Buffer.from('{"os":"wasip2","x":1}'), 'application/vnd.wasm.config.v0+json'), layers: [await push.blob(wasm, 'application/wasm')] });
    const storeDir = store();
    const { error } = await load(`oci://${registry.host}/tools/ctools:bare`, { storeDir, verify: { keys: [trusted.pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'unsigned' } });
    expect(error?.message).toContain(digest);
    expect(storedBlobs(storeDir)).toEqual([]);
  });

  it('refuses a component signed by a key that is not trusted', async () => {
    const storeDir = store();
    const { error } = await load(`oci://${registry.host}/tools/ctools:v1`, { storeDir, verify: { keys: [other.pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
    expect(storedBlobs(storeDir)).toEqual([]);
  });

  it('refuses a trusted signature that names another digest (copied onto this one)', async () => {
    const digest = await push.manifest('copied', { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: await push.blob(Buffer.from('{"os":"wasip2","copied":true}'), 'application/vnd.wasm.config.v0+json'), layers: [await push.blob(wasm, 'application/wasm')] });
    await push.cosignSign(digest, trusted.key, signedDigest);
    const storeDir = store();
    const { error } = await load(`oci://${registry.host}/tools/ctools:copied`, { storeDir, verify: { keys: [trusted.pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-digest', signedDigest } });
    expect(storedBlobs(storeDir)).toEqual([]);
  });

  it('refuses a manifest with two layers, or with a config that is not a Wasm config', async () => {
    const two = await push.component('two-layers', wasm, { extraLayers: [Buffer.from('second')] });
    await push.cosignSign(two, trusted.key);
    const image = await push.component('image-config', wasm, { configType: 'application/vnd.oci.image.config.v1+json' });
    await push.cosignSign(image, trusted.key);
    for (const tag of ['two-layers', 'image-config']) {
      const storeDir = store();
      const { error } = await load(`oci://${registry.host}/tools/ctools:${tag}`, { storeDir, verify: { keys: [trusted.pub] } });
      expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'layout' } });
      expect(storedBlobs(storeDir)).toEqual([]);
    }
  });

  it('refuses a component over the size cap without fetching it, and counts the limit hit', async () => {
    const storeDir = store();
    const hits: string[] = [];
    const { error } = await load(`oci://${registry.host}/tools/ctools:v1`, { storeDir, verify: { keys: [trusted.pub] }, maxComponentBytes: 4096 }, (_tool, limit) => hits.push(limit));
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'too-large', limitHit: 'max_component_bytes' } });
    expect(hits).toEqual(['max_component_bytes']);
    expect(storedBlobs(storeDir).some((hex) => hex === digestOf(wasm).slice(7))).toBe(false);
  });

  it('refuses a layer whose manifest under-declares its size (the registry streams more than declared)', async () => {
    const lying = await push.component('lying', wasm, { declaredSize: 1000 });
    await push.cosignSign(lying, trusted.key);
    const storeDir = store();
    const { error } = await load(`oci://${registry.host}/tools/ctools:lying`, { storeDir, verify: { keys: [trusted.pub] } });
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'digest-mismatch' } });
    expect(storedBlobs(storeDir).some((hex) => hex === digestOf(wasm).slice(7))).toBe(false);
  });

  it('loads a pinned digest after its tag moved, and refuses the tag\'s new, unsigned target', async () => {
    const original = await push.component('moving', wasm);
    await push.cosignSign(original, trusted.key);
    await push.manifest('moving', { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: await push.blob(Buffer.from('{"os":"wasip2","moved":true}'), 'application/vnd.wasm.config.v0+json'), layers: [await push.blob(wasm, 'application/wasm')] });
    const verify = { keys: [trusted.pub] };
    expect((await load(`oci://${registry.host}/tools/ctools:moving`, { storeDir: store(), verify })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'unsigned' } });
    expect((await load(`oci://${registry.host}/tools/ctools@${original}`, { storeDir: store(), verify })).tools).toContain('echo');
  });
});

describe.skipIf(!hasRegistry)('a registry that goes away, and one that corrupts what it serves', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-oci-'));

  it('loads a pinned digest from the store with the registry gone (the signature is checked again, offline)', async () => {
    const registry = new OciRegistry();
    await registry.start();
    try {
      const { key, pub } = keyPair(dir, 'offline');
      const push = new Pusher(registry.host, 'tools/offline');
      const digest = await push.component('v1', wasm);
      await push.cosignSign(digest, key);
      const storeDir = mkdtempSync(join(dir, 'store-'));
      const pinned = `oci://${registry.host}/tools/offline@${digest}`;
      expect((await load(pinned, { storeDir, verify: { keys: [pub] } })).tools).toContain('echo');
      await registry.stop();
      expect((await load(pinned, { storeDir, verify: { keys: [pub] } })).tools).toContain('echo');
      // The stored signature is not trust: another key refuses it offline too.
      expect((await load(pinned, { storeDir, verify: { keys: [keyPair(dir, 'else').pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
      // A store that never fetched it has nothing to offer.
      expect((await load(pinned, { storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [pub] } })).error).toMatchObject({ code: 'SOURCE_UNAVAILABLE' });
    } finally {
      await registry.close();
    }
  }, 60_000);

  it('asks the registry again when the signatures it kept are by none of the trusted keys (a publisher that rotated its key)', async () => {
    const registry = new OciRegistry();
    await registry.start();
    try {
      const old = keyPair(dir, 'old');
      const rotated = keyPair(dir, 'rotated');
      const push = new Pusher(registry.host, 'tools/rotated');
      const digest = await push.component('v1', wasm);
      await push.cosignSign(digest, old.key);
      const storeDir = mkdtempSync(join(dir, 'store-'));
      const pinned = `oci://${registry.host}/tools/rotated@${digest}`;
      expect((await load(pinned, { storeDir, verify: { keys: [old.pub] } })).tools).toContain('echo');
      // Re-signed with a new key (the signature tag now holds only the new signature); the operator trusts the new key.
      await push.cosignSign(digest, rotated.key);
      expect((await load(pinned, { storeDir, verify: { keys: [rotated.pub] } })).tools).toContain('echo');
      // Offline, both signatures are kept: either key is accepted; a third is refused.
      await registry.stop();
      expect((await load(pinned, { storeDir, verify: { keys: [old.pub] } })).tools).toContain('echo');
      expect((await load(pinned, { storeDir, verify: { keys: [rotated.pub] } })).tools).toContain('echo');
      expect((await load(pinned, { storeDir, verify: { keys: [keyPair(dir, 'third').pub] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
    } finally {
      await registry.close();
    }
  }, 60_000);

  it('refuses a blob the registry serves corrupted, and stores nothing of it', async () => {
    const registry = new OciRegistry();
    await registry.start();
    try {
      const { key, pub } = keyPair(dir, 'corrupt');
      const push = new Pusher(registry.host, 'tools/corrupt');
      const digest = await push.component('v1', wasm);
      await push.cosignSign(digest, key);
      const corrupted = Buffer.from(wasm);
      corrupted[corrupted.length - 1] = (corrupted[corrupted.length - 1] ?? 0) ^ 0xff;
      writeFileSync(registry.blobPath(digestOf(wasm)), corrupted);
      const storeDir = mkdtempSync(join(dir, 'store-'));
      const { error } = await load(`oci://${registry.host}/tools/corrupt:v1`, { storeDir, verify: { keys: [pub] } });
      expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'digest-mismatch', expected: digestOf(wasm) } });
      expect(storedBlobs(storeDir).some((hex) => hex === digestOf(wasm).slice(7))).toBe(false);
    } finally {
      await registry.close();
    }
  }, 60_000);

  it('authenticates with Basic credentials (htpasswd), and sends none to the host a blob redirect leads to', async () => {
    const registry = new OciRegistry({ auth: true });
    await registry.start();
    const basic = `Basic ${Buffer.from(`${HTPASSWD.username}:${HTPASSWD.password}`).toString('base64')}`;
    // A front that redirects blob reads to another origin (as registries redirect to object storage).
    const seen: Array<string | undefined> = [];
    const storage = await listen(createServer(async (request, response) => {
      seen.push(request.headers.authorization);
      const upstream = await fetch(`http://${registry.host}${request.url}`, { headers: { authorization: basic } });
      response.writeHead(upstream.status, { 'content-type': 'application/octet-stream' }).end(Buffer.from(await upstream.arrayBuffer()));
    }));
    const front = await listen(createServer(async (request, response) => {
      if (/\/blobs\/sha256:/.test(request.url ?? '') && request.headers.authorization !== undefined) {
        response.writeHead(307, { location: `http://127.0.0.1:${port(storage)}${request.url}` }).end();
        return;
      }
      const upstream = await fetch(`http://${registry.host}${request.url}`, { method: request.method, headers: { ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}), accept: String(request.headers.accept ?? '') } });
      const headers: Record<string, string> = {};
      upstream.headers.forEach((value, name) => { if (name !== 'content-length' && name !== 'content-encoding' && name !== 'transfer-encoding') headers[name] = value; });
      response.writeHead(upstream.status, headers).end(Buffer.from(await upstream.arrayBuffer()));
    }));
    try {
      const { key, pub } = keyPair(dir, 'private');
      const push = new Pusher(registry.host, 'tools/private', basic);
      const digest = await push.component('v1', wasm);
      await push.cosignSign(digest, key);
      const source = `oci://127.0.0.1:${port(front)}/tools/private:v1`;
      // Without credentials: refused with a message saying how to configure them.
      const denied = await load(source, { storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [pub] } });
      expect(denied.error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { status: 401 } });
      process.env.TOOLHOST_TEST_REGISTRY_PASSWORD = HTPASSWD.password;
      const loaded = await load(source, {
        storeDir: mkdtempSync(join(dir, 'store-')),
        // The front serves the registry's repositories under its own name: signatures name the registry's.
        verify: { keys: [pub], referenceAliases: { [`127.0.0.1:${port(front)}`]: registry.host } },
        auth: { [`127.0.0.1:${port(front)}`]: { username: HTPASSWD.username, passwordEnv: 'TOOLHOST_TEST_REGISTRY_PASSWORD' } },
      });
      expect(loaded.error).toBeUndefined();
      expect(loaded.tools).toContain('echo');
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((header) => header === undefined)).toBe(true);
    } finally {
      delete process.env.TOOLHOST_TEST_REGISTRY_PASSWORD;
      storage.close();
      front.close();
      await registry.close();
    }
  }, 60_000);
});

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function port(server: Server): number {
  return (server.address() as { port: number }).port;
}
