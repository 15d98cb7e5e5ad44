/**
 * Where remote tools may come from (`distribution.registries`), against a real
 * registry (docker-registry on loopback): the config and the CLI may name any
 * source until the list is set, then only listed registries, repository
 * prefixes and URL prefixes; the runtime load admin tool (how MCP and gRPC
 * clients load components) loads none unless the list names it, and never an
 * unverified one. Every refusal comes before any request and stores nothing.
 */
import { createServer, type Server } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError } from '../host/index.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { registerAdminTools } from '../host/tools/admin-tools.js';
import { example, makeRegistry } from './helpers.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));

const storedBlobs = (storeDir: string): string[] => {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** Load `source` through the config path (`registerWasmTools`) or the admin tool; the error, or the tools. */
async function load(source: string, distribution: DistributionOptions, via: 'config' | 'admin'): Promise<{ error?: { code: string; details?: unknown }; echo?: unknown }> {
  const registry = makeRegistry({ distribution });
  registerAdminTools(registry, { callers: 'any' });
  try {
    if (via === 'config') {
      await registry.registerWasmTools(source);
    } else {
      const loaded = await registry.execute('toolhost_load', { path: source });
      if (loaded.isError) return { error: loaded.error! };
    }
    const result = await registry.execute('echo', { from: via });
    return { echo: JSON.parse((result.content[0] as { text: string }).text) as unknown };
  } catch (error) {
    if (error instanceof ToolhostError) return { error };
    throw error;
  } finally {
    await registry.close();
  }
}

describe.skipIf(!hasRegistry)('distribution.registries', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-allow-'));
  const pub = join(dir, 'trusted.pub');
  let requests = 0;
  let files: Server;
  let filesBase = '';
  const store = (): string => mkdtempSync(join(dir, 'store-'));

  beforeAll(async () => {
    await registry.start();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
    for (const repository of ['team/ctools', 'teamx/ctools', 'other/ctools']) {
      const push = new Pusher(registry.host, repository);
      await push.cosignSign(await push.component('v1', wasm), privateKey);
    }
    files = await new Promise<Server>((resolve) => {
      const server = createServer((request, response) => {
        requests += 1;
        response.writeHead(200, { 'content-type': 'application/wasm' }).end(wasm);
      });
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    filesBase = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
  }, 30_000);
  afterAll(async () => {
    files.close();
    await registry.close();
  });

  it('lets the config load any source while the list is unset, and only listed ones once it is set', async () => {
    const verify = { keys: [pub] };
    expect((await load(`oci://${registry.host}/other/ctools:v1`, { storeDir: store(), verify }, 'config')).echo).toEqual({ from: 'config' });
    const registries = [`${registry.host}/team`, `${filesBase}/allowed/`];
    expect((await load(`oci://${registry.host}/team/ctools:v1`, { storeDir: store(), verify, registries }, 'config')).echo).toEqual({ from: 'config' });
    for (const refused of [`oci://${registry.host}/other/ctools:v1`, `oci://${registry.host}/teamx/ctools:v1`, `oci://localhost:${registry.port}/team/ctools:v1`]) {
      const storeDir = store();
      const { error } = await load(refused, { storeDir, verify, registries }, 'config');
      expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-allowed' } });
      expect(storedBlobs(storeDir)).toEqual([]);
    }
    const pinned = `#sha256=${digestOf(wasm).slice(7)}`;
    expect((await load(`${filesBase}/allowed/ctools.wasm${pinned}`, { storeDir: store(), registries }, 'config')).echo).toEqual({ from: 'config' });
    const before = requests;
    expect((await load(`${filesBase}/allowedx/ctools.wasm${pinned}`, { storeDir: store(), registries }, 'config')).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-allowed' } });
    expect(requests).toBe(before);
  }, 90_000);

  it('refuses every remote source to the runtime load tool unless the list names it, and never loads one unverified', async () => {
    const source = `oci://${registry.host}/team/ctools:v1`;
    const storeDir = store();
    // Trust is configured, but no list: a client may not pick where code comes from.
    expect((await load(source, { storeDir, verify: { keys: [pub] } }, 'admin')).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-allowed' } });
    const before = requests;
    expect((await load(`${filesBase}/allowed/ctools.wasm#sha256=${digestOf(wasm).slice(7)}`, { storeDir }, 'admin')).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'not-allowed' } });
    expect(requests).toBe(before);
    // Listed but the host skips verification: a runtime load is verified anyway, so refused.
    expect((await load(source, { storeDir, registries: [registry.host], verify: { skip: true } }, 'admin')).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'no-trust' } });
    expect(storedBlobs(storeDir)).toEqual([]);
    // Listed and verified: loads and runs.
    expect((await load(source, { storeDir, registries: [registry.host], verify: { keys: [pub] } }, 'admin')).echo).toEqual({ from: 'admin' });
  }, 90_000);
});
