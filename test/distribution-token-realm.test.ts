/**
 * Basic credentials and a token realm on another host (auth-scope.ts): a
 * real registry with token auth (docker-registry's `auth.token`, verifying
 * ES256 JWTs by the certificate in their `x5c` header) names a token service
 * this test runs on another origin. Unlisted, the service is asked
 * anonymously — it never sees the credential — and the refusal says how to
 * list it; listed in `distribution.token_realms`, it gets the registry's
 * Basic credential and the private component loads. The decision itself:
 * known pairs (Docker Hub, GitLab.com) over https only, exact host matches.
 */
import { X509Certificate as NodeCertificate, generateKeyPairSync, randomUUID, webcrypto } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../host/base/logger.js';
import { listedRealms, realmMayReceiveCredential } from '../host/distribution/auth-scope.js';
import { RemoteFetcher } from '../host/distribution/fetch.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { ToolhostError } from '../host/index.js';
import { example } from './helpers.js';
import { HTPASSWD, OciRegistry, Pusher, hasRegistry } from './oci-registry.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

describe('which token realms get a registry\'s credential', () => {
  const decide = (registry: string, realm: string, configured: Record<string, string[]> = {}): boolean => realmMayReceiveCredential(`https://${registry}`, new URL(realm), listedRealms(registry, configured));

  it('the registry\'s own origin, and docker\'s known pairs over https', () => {
    expect(decide('ghcr.io', 'https://ghcr.io/token')).toBe(true);
    expect(decide('registry-1.docker.io', 'https://auth.docker.io/token')).toBe(true);
    expect(decide('docker.io', 'https://auth.docker.io/token')).toBe(true);
    expect(decide('registry.gitlab.com', 'https://gitlab.com/jwt/auth')).toBe(true);
  });

  it('no other host unless listed for that registry; exact hosts (and ports) only; never plain http off loopback', () => {
    expect(decide('registry.example.com', 'https://auth.example.com/token')).toBe(false);
    expect(decide('registry.example.com', 'https://auth.example.com/token', { 'registry.example.com': ['auth.example.com'] })).toBe(true);
    expect(decide('registry.example.com', 'https://auth.example.com:8443/token', { 'registry.example.com': ['auth.example.com'] })).toBe(false);
    expect(decide('registry.example.com', 'https://auth.example.com:8443/token', { 'registry.example.com': ['auth.example.com:8443'] })).toBe(true);
    expect(decide('other.example.com', 'https://auth.example.com/token', { 'registry.example.com': ['auth.example.com'] })).toBe(false);
    expect(decide('registry-1.docker.io', 'https://auth.docker.io.evil.example/token')).toBe(false);
    expect(decide('registry-1.docker.io', 'http://auth.docker.io/token')).toBe(false);
    expect(decide('ghcr.io', 'https://ghcr.io:444/token')).toBe(false);
  });
});

describe.skipIf(!hasRegistry)('a token realm on another host, against a registry with token auth', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-realm-'));
  const signer = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const SERVICE = 'toolhost-test-registry';
  const ISSUER = 'toolhost-test-token-service';
  const seen: Array<string | undefined> = [];
  const pub = join(dir, 'key.pub');
  let certDer = '';
  let tokens: Server;
  let registry: OciRegistry;
  let source = '';
  const realmHost = (): string => `127.0.0.1:${(tokens.address() as { port: number }).port}`;

  /** A token for `access` (what the registry checks: issuer, audience, lifetime, the x5c certificate's signature). */
  const mint = (access: Array<{ type: string; name: string; actions: string[] }>): Promise<string> => new SignJWT({ access })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', x5c: [certDer] })
    .setIssuer(ISSUER).setSubject(HTPASSWD.username).setAudience(SERVICE)
    .setIssuedAt().setNotBefore(Math.floor(Date.now() / 1000) - 60).setExpirationTime('5m').setJti(randomUUID())
    .sign(signer.privateKey);

  beforeAll(async () => {
    const keys = {
      privateKey: await webcrypto.subtle.importKey('pkcs8', signer.privateKey.export({ type: 'pkcs8', format: 'der' }), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']),
      publicKey: await webcrypto.subtle.importKey('spki', signer.publicKey.export({ type: 'spki', format: 'der' }), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']),
    };
    const cert = await x509.X509CertificateGenerator.createSelfSigned({ serialNumber: '01', name: 'CN=toolhost test token signer', notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 86_400_000), keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'], signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } });
    certDer = Buffer.from(cert.rawData).toString('base64');
    const bundle = join(dir, 'token-signer.pem');
    writeFileSync(bundle, new NodeCertificate(Buffer.from(cert.rawData)).toString());

    // The token service: a token for the scope asked, only to the registry's Basic credential.
    const basic = `Basic ${Buffer.from(`${HTPASSWD.username}:${HTPASSWD.password}`).toString('base64')}`;
    tokens = createServer((request, response) => {
      seen.push(request.headers.authorization);
      if (request.headers.authorization !== basic) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"details":"credentials required"}');
        return;
      }
      const scope = new URL(request.url ?? '/', 'http://x').searchParams.get('scope') ?? '';
      const [, name = '', actions = ''] = scope.split(':');
      void mint([{ type: 'repository', name, actions: actions.split(',') }]).then((token) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token, expires_in: 300 }));
      });
    });
    await new Promise<void>((resolve) => tokens.listen(0, '127.0.0.1', resolve));
    registry = new OciRegistry({ token: { realm: `http://${realmHost()}/token`, service: SERVICE, issuer: ISSUER, rootCertBundle: bundle } });
    await registry.start();

    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(pub, key.publicKey.export({ type: 'spki', format: 'pem' }));
    const push = new Pusher(registry.host, 'private/tool', `Bearer ${await mint([{ type: 'repository', name: 'private/tool', actions: ['pull', 'push'] }])}`);
    const digest = await push.component('v1', new Uint8Array(readFileSync(example('ctools'))));
    await push.cosignSign(digest, key.privateKey);
    source = `oci://${registry.host}/private/tool:v1`;
  }, 30_000);
  afterAll(async () => {
    tokens.close();
    await registry.close();
  });

  async function fetchWith(options: Partial<DistributionOptions>): Promise<ToolhostError | undefined> {
    const env = { REGISTRY_PASSWORD: HTPASSWD.password, DOCKER_CONFIG: dir };
    const fetcher = new RemoteFetcher({ storeDir: mkdtempSync(join(dir, 'store-')), verify: { keys: [pub] }, auth: { [registry.host]: { username: HTPASSWD.username, passwordEnv: 'REGISTRY_PASSWORD' } }, ...options }, silentLogger, env);
    try {
      await fetcher.fetch(source, undefined);
      return undefined;
    } catch (error) {
      if (error instanceof ToolhostError) return error;
      throw error;
    }
  }

  it('asks an unlisted realm anonymously, never with the credential, and says how to list it', async () => {
    seen.length = 0;
    const error = await fetchWith({});
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { status: 401, withheldFrom: realmHost() } });
    expect(error?.message).toMatch(new RegExp(`token service ${realmHost().replace(/\./g, '\\.')}.*distribution\\.token_realms lists it for ${registry.host.replace(/\./g, '\\.')}`));
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((header) => header === undefined)).toBe(true);
  }, 60_000);

  it('sends the Basic credential to a realm listed for the registry, and loads', async () => {
    seen.length = 0;
    expect(await fetchWith({ tokenRealms: { [registry.host]: [realmHost()] } })).toBeUndefined();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((header) => header?.startsWith('Basic '))).toBe(true);
    // Listed for another registry, it is still withheld.
    seen.length = 0;
    expect(await fetchWith({ tokenRealms: { 'elsewhere.example': [realmHost()] } })).toMatchObject({ code: 'SOURCE_UNAVAILABLE' });
    expect(seen.every((header) => header === undefined)).toBe(true);
  }, 60_000);
});
