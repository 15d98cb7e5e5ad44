/**
 * Credentials stay with their origin on every request, not only on redirects: a registry that answers the blob
 * upload POST with a `Location` on another origin (another loopback port) gets the PUTs sent there without the
 * registry's Authorization, so a hostile registry cannot collect the docker login password at a server of its
 * choosing. Control: a publish with htpasswd credentials to Debian's docker-registry (its uploads' Locations on
 * its own origin) succeeds and the pushed component loads.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { publishComponent } from '../host/distribution/publish.js';
import { parseSource, type OciSource } from '../host/distribution/source.js';
import { example } from './helpers.js';
import { HTPASSWD, OciRegistry, hasRegistry } from './oci-registry.js';
import { loadSource } from './distribution-load.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));
const credential = { username: HTPASSWD.username, password: HTPASSWD.password };
const basic = `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString('base64')}`;

function listen(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
const portOf = (server: Server): number => (server.address() as { port: number }).port;
const drain = async (request: IncomingMessage): Promise<void> => {
  for await (const _chunk of request) { /* read the body */ }
};

describe('publish sends the registry\'s credential only to the registry\'s origin', () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const server of servers) server.close();
  });

  it('sends no Authorization to an upload Location on another origin', async () => {
    const elsewhere: Array<{ method: string; authorization: string | undefined }> = [];
    const collector = await listen(async (request, response) => {
      elsewhere.push({ method: request.method ?? '', authorization: request.headers.authorization });
      await drain(request);
      // Whatever it is asked, it asks for credentials: they must not be given to it either.
      response.writeHead(401, { 'www-authenticate': 'Basic realm="collector"' }).end();
    });
    servers.push(collector);
    const atRegistry: Array<string | undefined> = [];
    const registry = await listen(async (request, response) => {
      atRegistry.push(request.headers.authorization);
      await drain(request);
      if (request.headers.authorization !== basic) {
        response.writeHead(401, { 'www-authenticate': 'Basic realm="hostile"' }).end();
        return;
      }
      if (request.method === 'HEAD') {
        response.writeHead(404).end();
        return;
      }
      if (request.method === 'POST' && /\/blobs\/uploads\/$/.test(request.url ?? '')) {
        response.writeHead(202, { location: `http://127.0.0.1:${portOf(collector)}/upload/1?state=x` }).end();
        return;
      }
      response.writeHead(201).end();
    });
    servers.push(registry);
    const target = parseSource(`oci://127.0.0.1:${portOf(registry)}/acme/tool:v1`) as OciSource;
    await expect(publishComponent(wasm, target, { exports: [], imports: [], credential })).rejects.toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { status: 401 } });
    // The registry saw the credential (it is the registry's); the other origin was asked, and never got it.
    expect(atRegistry).toContain(basic);
    expect(elsewhere.length).toBeGreaterThan(0);
    expect(elsewhere.every(({ authorization }) => authorization === undefined)).toBe(true);
  }, 30_000);

  it.skipIf(!hasRegistry)('publishes with htpasswd credentials to docker-registry, and the component loads', async () => {
    const oci = new OciRegistry({ auth: true });
    await oci.start();
    try {
      const dir = mkdtempSync(join(tmpdir(), 'toolhost-publoc-'));
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const pub = join(dir, 'key.pub');
      writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
      const target = parseSource(`oci://${oci.host}/acme/tool:v1`) as OciSource;
      const report = await publishComponent(wasm, target, { exports: [], imports: [], credential, signingKey: privateKey });
      expect(report.manifestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      process.env.TOOLHOST_TEST_PUBLOC_PASSWORD = HTPASSWD.password;
      const loaded = await loadSource(`oci://${oci.host}/acme/tool:v1`, {
        storeDir: join(dir, 'store'),
        verify: { keys: [pub] },
        auth: { [oci.host]: { username: HTPASSWD.username, passwordEnv: 'TOOLHOST_TEST_PUBLOC_PASSWORD' } },
      });
      expect(loaded.error).toBeUndefined();
      expect(loaded.tools).toContain('echo');
    } finally {
      delete process.env.TOOLHOST_TEST_PUBLOC_PASSWORD;
      await oci.close();
    }
  }, 60_000);
});
