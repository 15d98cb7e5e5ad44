/**
 * A real OCI registry for tests: Debian's docker-registry (CNCF distribution
 * 2.8) with a config of its own (127.0.0.1, an ephemeral port, storage in a
 * temp dir; optionally htpasswd Basic auth), stopped by pid. Plus a pusher
 * that speaks the distribution API with fetch, so tests write artifacts and
 * cosign signatures themselves (node:crypto), independently of toolhost.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasRegistry = spawnSync('docker-registry', ['--version'], { stdio: 'ignore' }).status === 0;

/** user `toolhost`, password `secret-pw` (bcrypt, cost 4). */
export const HTPASSWD = { username: 'toolhost', password: 'secret-pw', line: 'toolhost:$2b$04$mUwUlVyWlRY.LVN/q3RmbOmShoBhGzm0Uokb3xoRCxqBPrHhbDGE6' };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Token auth (distribution's `auth.token`): the realm it names in its challenges, and what it checks in a JWT. */
export interface RegistryTokenAuth {
  realm: string;
  service: string;
  issuer: string;
  /** PEM certificates whose keys may sign tokens (a token carries its certificate in its `x5c` header). */
  rootCertBundle: string;
}

export class OciRegistry {
  readonly dir = mkdtempSync(join(tmpdir(), 'toolhost-registry-'));
  port = 0;
  #child: ChildProcess | undefined;
  readonly #auth: boolean;
  readonly #token: RegistryTokenAuth | undefined;

  /** `auth`: htpasswd Basic auth ({@link HTPASSWD}); `token`: Bearer tokens from a token service (JWTs it verifies). */
  constructor(options: { auth?: boolean; token?: RegistryTokenAuth } = {}) {
    this.#auth = options.auth === true;
    this.#token = options.token;
  }

  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Where the registry keeps a blob's bytes (rewrite it to corrupt what it serves). */
  blobPath(digest: string): string {
    const hex = digest.slice('sha256:'.length);
    return join(this.dir, 'data', 'docker', 'registry', 'v2', 'blobs', 'sha256', hex.slice(0, 2), hex, 'data');
  }

  async start(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      this.port = await freePort();
      const token = this.#token;
      const auth = this.#auth ? `auth:\n  htpasswd:\n    realm: toolhost-test\n    path: ${join(this.dir, 'htpasswd')}\n`
        : token !== undefined ? `auth:\n  token:\n    realm: ${token.realm}\n    service: ${token.service}\n    issuer: ${token.issuer}\n    rootcertbundle: ${token.rootCertBundle}\n` : '';
      if (this.#auth) writeFileSync(join(this.dir, 'htpasswd'), `${HTPASSWD.line}\n`);
      writeFileSync(join(this.dir, 'config.yml'), `version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: ${join(this.dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${this.port}\n  secret: toolhost-test\n${auth}`);
      const child = spawn('docker-registry', ['serve', join(this.dir, 'config.yml')], { stdio: 'ignore' });
      this.#child = child;
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && child.exitCode === null) {
        try {
          const response = await fetch(`http://${this.host}/v2/`);
          if (response.status === 200 || response.status === 401) return;
        } catch {
          // not up yet
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill('SIGKILL');
    }
    throw new Error('could not start docker-registry');
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export const digestOf = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

/** Push artifacts with plain fetch (the test's own client, not toolhost's). */
export class Pusher {
  constructor(readonly host: string, readonly repository: string, readonly authorization?: string) {}

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.authorization === undefined ? extra : { ...extra, authorization: this.authorization };
  }

  async blob(bytes: Uint8Array, mediaType: string): Promise<{ mediaType: string; digest: string; size: number }> {
    const digest = digestOf(bytes);
    const start = await fetch(`http://${this.host}/v2/${this.repository}/blobs/uploads/`, { method: 'POST', headers: this.#headers() });
    if (start.status !== 202) throw new Error(`upload start: ${start.status}`);
    const location = new URL(start.headers.get('location')!, `http://${this.host}/`);
    location.searchParams.set('digest', digest);
    const put = await fetch(location, { method: 'PUT', headers: this.#headers({ 'content-type': 'application/octet-stream' }), body: bytes });
    if (put.status !== 201) throw new Error(`upload: ${put.status} ${await put.text()}`);
    return { mediaType, digest, size: bytes.byteLength };
  }

  async manifest(reference: string, manifest: unknown): Promise<string> {
    const bytes = json(manifest);
    const put = await fetch(`http://${this.host}/v2/${this.repository}/manifests/${reference}`, {
      method: 'PUT', headers: this.#headers({ 'content-type': 'application/vnd.oci.image.manifest.v1+json' }), body: bytes,
    });
    if (put.status !== 201) throw new Error(`manifest: ${put.status} ${await put.text()}`);
    return digestOf(bytes);
  }

  /** A CNCF Wasm artifact (variants: extra layers, another config type); returns the manifest digest. */
  async component(tag: string, wasm: Uint8Array, variant: { configType?: string; extraLayers?: Uint8Array[]; declaredSize?: number } = {}): Promise<string> {
    const layer = await this.blob(wasm, 'application/wasm');
    const config = await this.blob(json({ architecture: 'wasm', os: 'wasip2', layerDigests: [layer.digest] }), variant.configType ?? 'application/vnd.wasm.config.v0+json');
    const extra = await Promise.all((variant.extraLayers ?? []).map((bytes) => this.blob(bytes, 'application/wasm')));
    const first = variant.declaredSize === undefined ? layer : { ...layer, size: variant.declaredSize };
    return this.manifest(tag, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [first, ...extra] });
  }

  /**
   * cosign's tag-form signature of `digest` with `key` (the payload may name `names` instead, and another
   * repository than this one as `reference`).
   */
  async cosignSign(digest: string, key: KeyObject, names = digest, reference = `${this.host}/${this.repository}`): Promise<void> {
    const payload = json({ critical: { identity: { 'docker-reference': reference }, image: { 'docker-manifest-digest': names }, type: 'cosign container image signature' }, optional: null });
    await this.signatureManifest(digest, [{ payload, signature: sign('sha256', payload, { key, dsaEncoding: 'der' }).toString('base64') }]);
  }

  readonly #referrers = new Map<string, Array<{ mediaType: string; digest: string; size: number; artifactType: string; annotations?: Record<string, string> }>>();

  /**
   * Attach a Sigstore bundle (its JSON) as an OCI 1.1 referrer of `subject`, listed (with `annotations`) in the
   * `sha256-HEX` referrers tag beside the ones this pusher attached before (distribution 2.8 has no Referrers API).
   */
  async referrer(subject: string, bundle: unknown, annotations?: Record<string, string>): Promise<string> {
    const type = 'application/vnd.dev.sigstore.bundle.v0.3+json';
    const layer = await this.blob(json(bundle), type);
    const config = await this.blob(json({}), 'application/vnd.oci.empty.v1+json');
    const manifest = { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', artifactType: type, config, layers: [layer], subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: subject, size: 0 } };
    const bytes = json(manifest);
    const digest = await this.manifest(digestOf(bytes), manifest);
    const list = [...(this.#referrers.get(subject) ?? []), { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: bytes.byteLength, artifactType: type, ...(annotations === undefined ? {} : { annotations }) }];
    this.#referrers.set(subject, list);
    const put = await fetch(`http://${this.host}/v2/${this.repository}/manifests/${subject.replace(':', '-')}`, {
      method: 'PUT', headers: this.#headers({ 'content-type': 'application/vnd.oci.image.index.v1+json' }), body: JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: list }),
    });
    if (put.status !== 201) throw new Error(`referrers tag: ${put.status} ${await put.text()}`);
    return digest;
  }

  /** A `sha256-HEX.sig` manifest of `digest` with these simple-signing layers (payload bytes, base64 signature), in order. */
  async signatureManifest(digest: string, layers: ReadonlyArray<{ payload: Uint8Array; signature: string }>): Promise<void> {
    const pushed = [];
    for (const { payload, signature } of layers) {
      pushed.push({ ...await this.blob(payload, 'application/vnd.dev.cosign.simplesigning.v1+json'), annotations: { 'dev.cosignproject.cosign/signature': signature } });
    }
    const config = await this.blob(json({ architecture: '', os: '', rootfs: { type: 'layers', diff_ids: pushed.map((layer) => layer.digest) }, config: {} }), 'application/vnd.oci.image.config.v1+json');
    await this.manifest(`${digest.replace(':', '-')}.sig`, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: pushed });
  }
}
