/**
 * The store answers only what was fetched and accepted for that source. The operator loads a component under
 * verify.skip (unverified, from docker-registry on loopback), so its bytes sit in the store; a client of the admin
 * load tool then names that component's digest under another spelling — an unreachable URL under a listed URL
 * prefix, the OCI name, another repository, the store's file path — and is refused every time, nothing registered.
 * Controls: a URL fetched before loads again from the store without a request; an honest URL loads from its server.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DistributionOptions } from '../host/distribution/options.js';
import { registerAdminTools } from '../host/tools/admin-tools.js';
import { example, fixture, hasCGuests, makeRegistry } from './helpers.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';

const honest = new Uint8Array(readFileSync(example('ctools')));
const unverified = new Uint8Array(readFileSync(fixture('counter')));

/** Ask the admin load tool for `path` in a fresh registry: its error, and every tool registered afterwards. */
async function adminLoad(path: string, distribution: DistributionOptions): Promise<{ error?: { code: string; details?: unknown }; tools: string[] }> {
  const registry = makeRegistry({ distribution });
  // Any caller, and local files from anywhere: what is tested here is the store's own rule, not admin access's.
  registerAdminTools(registry, { callers: 'any', loadDirs: ['/'] });
  try {
    const loaded = await registry.execute('toolhost_load', { path });
    return { ...(loaded.isError ? { error: loaded.error! } : {}), tools: registry.names().filter((name) => !name.startsWith('toolhost_')) };
  } finally {
    await registry.close();
  }
}

describe.skipIf(!hasRegistry || !hasCGuests)('the store answers only what was verified for that source', () => {
  const oci = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-storesrc-'));
  const storeDir = join(dir, 'store');
  const pub = join(dir, 'trusted.pub');
  let files: Server;
  let filesBase = '';
  let deadBase = '';
  let requests = 0;
  let manifestDigest = '';
  let unverifiedTools: string[] = [];
  const distribution = (): DistributionOptions => ({ storeDir, verify: { keys: [pub] }, registries: [oci.host, `${deadBase}/allowed/`, `${filesBase}/allowed/`] });

  beforeAll(async () => {
    await oci.start();
    writeFileSync(pub, generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }));
    manifestDigest = await new Pusher(oci.host, 'acme/unsigned').component('v1', unverified);
    files = await new Promise<Server>((resolve) => {
      const server = createServer((request, response) => {
        requests += 1;
        if (request.url === '/allowed/ctools.wasm') response.writeHead(200, { 'content-type': 'application/wasm' }).end(honest);
        else response.writeHead(404).end();
      });
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    filesBase = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
    // A port nothing listens on: the URL is under a listed prefix and can never be fetched.
    const dead = await new Promise<Server>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    deadBase = `http://127.0.0.1:${(dead.address() as { port: number }).port}`;
    await new Promise((resolve) => dead.close(resolve));
    // The operator's config loads a component unverified: its manifest and layer are now in the store.
    const registry = makeRegistry({ distribution: distribution() });
    try {
      const report = await registry.registerWasmTools(`oci://${oci.host}/acme/unsigned:v1`, { verify: { skip: true } });
      unverifiedTools = report.components.flatMap((component) => component.tools);
    } finally {
      await registry.close();
    }
    expect(unverifiedTools.length).toBeGreaterThan(0);
  }, 60_000);
  afterAll(async () => {
    files.close();
    await oci.close();
  });

  it('refuses an unreachable URL under a listed prefix that names the unverified component\'s digest', async () => {
    const { error, tools } = await adminLoad(`${deadBase}/allowed/counter.wasm#sha256=${digestOf(unverified).slice(7)}`, distribution());
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE' });
    expect(tools).toEqual([]);
  }, 60_000);

  it('refuses a reachable listed URL that does not serve those bytes, though the store holds them', async () => {
    const before = requests;
    const { error, tools } = await adminLoad(`${filesBase}/allowed/counter.wasm#sha256=${digestOf(unverified).slice(7)}`, distribution());
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { status: 404 } });
    expect(requests).toBe(before + 1);
    expect(tools).toEqual([]);
  }, 60_000);

  it('refuses the unverified component by its OCI name, and its digest under another repository', async () => {
    for (const path of [`oci://${oci.host}/acme/unsigned@${manifestDigest}`, `oci://${oci.host}/acme/other@${manifestDigest}`]) {
      const { error, tools } = await adminLoad(path, distribution());
      expect(error?.code).toMatch(/^SOURCE_(UNTRUSTED|UNAVAILABLE)$/);
      expect(tools).toEqual([]);
    }
  }, 60_000);

  it('refuses the store\'s own files by path, directly or through a symlink', async () => {
    const blob = join(storeDir, 'blobs', 'sha256', digestOf(unverified).slice(7));
    const link = join(dir, 'innocent.wasm');
    symlinkSync(blob, link);
    for (const path of [blob, join(storeDir, 'blobs', '..', 'blobs', 'sha256', digestOf(unverified).slice(7)), link]) {
      const { error, tools } = await adminLoad(path, distribution());
      expect(error).toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned', kind: 'store' } });
      expect(tools).toEqual([]);
    }
  }, 60_000);

  it('loads an honest listed URL from its server, then again from the store without a request', async () => {
    const source = `${filesBase}/allowed/ctools.wasm#sha256=${digestOf(honest).slice(7)}`;
    const before = requests;
    expect((await adminLoad(source, distribution())).tools).toContain('echo');
    expect(requests).toBe(before + 1);
    expect((await adminLoad(source, distribution())).tools).toContain('echo');
    expect(requests).toBe(before + 1);
  }, 60_000);

  it('answers a source toolhost.lock pins from a store written before the records existed, and no other', async () => {
    const source = `${filesBase}/allowed/ctools.wasm#sha256=${digestOf(honest).slice(7)}`;
    const legacy = join(dir, 'legacy-store');
    const config = async (lock?: DistributionOptions['lock']): Promise<string[]> => {
      const registry = makeRegistry({ distribution: { storeDir: legacy, ...(lock === undefined ? {} : { lock }) } });
      try {
        return (await registry.registerWasmTools(source)).components.flatMap((component) => component.tools);
      } finally {
        await registry.close();
      }
    };
    expect(await config()).toContain('echo');
    rmSync(join(legacy, 'sources'), { recursive: true, force: true });
    const before = requests;
    expect(await config({ [source]: { pinned: source, layerDigest: digestOf(honest), size: honest.byteLength, signer: 'pinned' } })).toContain('echo');
    expect(requests).toBe(before);
    rmSync(join(legacy, 'sources'), { recursive: true, force: true });
    expect(await config()).toContain('echo');
    expect(requests).toBe(before + 1);
  }, 60_000);
});
