/**
 * Keyless Sigstore bundles, verified offline against a pinned
 * trusted_root.json: a test certificate authority and a test transparency log
 * (test/sigstore-fixtures.ts) sign DSSE bundles that are attached as OCI 1.1
 * referrers in a real registry (docker-registry 2.8: the `sha256-HEX`
 * referrers tag). Accepted for a configured identity (issuer + subject, exact
 * or by pattern); refused, with nothing stored, for another issuer or subject,
 * a certificate of a CA the root does not name, a statement about another
 * digest, a log entry edited after the log signed it, a certificate expired
 * at the time the log integrated the entry, a certificate without an SCT under
 * a root that lists CT logs, and a trusted root with no identities (which
 * would trust anyone the CA certified).
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { ToolhostError } from '../host/index.js';
import { silentLogger } from '../host/base/logger.js';
import { RemoteFetcher, lockEntryOf } from '../host/distribution/fetch.js';
import type { Identity } from '../host/distribution/keyless.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { example } from './helpers.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from './oci-registry.js';
import { loadSource } from './distribution-load.js';
import { TestCa, TestLog, keylessBundle, statement, trustedRoot, type Leaf } from './sigstore-fixtures.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));
const BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const ISSUER = 'https://token.actions.githubusercontent.com';
const SUBJECT = 'https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1';

const storedBlobs = (storeDir: string): string[] => {
  const dir = join(storeDir, 'blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** What a keyless refusal says @sigstore/verify reported. */
const detailOf = (error: ToolhostError | undefined): string => String((error?.details as { detail?: unknown } | undefined)?.detail);

describe.skipIf(!hasRegistry)('keyless Sigstore bundles against a pinned trusted root', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-keyless-'));
  const rootFile = join(dir, 'trusted_root.json');
  const log = new TestLog();
  let ca: TestCa;
  let stranger: TestCa;
  let push: Pusher;
  const now = Math.floor(Date.now() / 1000);
  const valid = { notBefore: new Date((now - 300) * 1000), notAfter: new Date((now + 300) * 1000) };
  const store = (): string => mkdtempSync(join(dir, 'store-'));
  const trust = (identities: Identity[] | undefined): Pick<DistributionOptions, 'verify'> => ({ verify: { trustedRoot: rootFile, ...(identities === undefined ? {} : { identities }) } });
  const exactly = [{ issuer: ISSUER, subject: SUBJECT }];

  /** A fresh component artifact (its own config, so its own digest); returns its tag's source and digest. */
  async function component(tag: string): Promise<{ source: string; digest: string }> {
    const layer = await push.blob(wasm, 'application/wasm');
    const config = await push.blob(Buffer.from(JSON.stringify({ os: 'wasip2', tag })), 'application/vnd.wasm.config.v0+json');
    const digest = await push.manifest(tag, { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] });
    return { source: `oci://${registry.host}/tools/keyless:${tag}`, digest };
  }

  /** Attach `bundle` as the one referrer of `subject` (the fallback referrers tag). */
  async function attach(bundle: unknown, subject: string): Promise<void> {
    const layer = await push.blob(Buffer.from(JSON.stringify(bundle)), BUNDLE);
    const config = await push.blob(Buffer.from('{}'), 'application/vnd.oci.empty.v1+json');
    const manifest = { schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: BUNDLE, config, layers: [layer], subject: { mediaType: OCI_MANIFEST, digest: subject, size: 0 } };
    const bytes = Buffer.from(JSON.stringify(manifest));
    const digest = await push.manifest(digestOf(bytes), manifest);
    const put = await fetch(`http://${registry.host}/v2/tools/keyless/manifests/${subject.replace(':', '-')}`, {
      method: 'PUT', headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' },
      body: JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [{ mediaType: OCI_MANIFEST, digest, size: bytes.byteLength, artifactType: BUNDLE }] }),
    });
    if (put.status !== 201) throw new Error(`referrers tag: ${put.status} ${await put.text()}`);
  }

  /** A component signed keyless by `leaf` (its statement naming `names`, by default its own digest, and `repository`, by default its own). */
  async function signed(tag: string, leaf: Leaf, options: { names?: string; repository?: string; integratedTime?: number; tamper?: (entry: Record<string, unknown>) => void } = {}): Promise<{ source: string; digest: string }> {
    const artifact = await component(tag);
    await attach(keylessBundle(statement(options.names ?? artifact.digest, options.repository ?? `${registry.host}/tools/keyless`), leaf, log, options.integratedTime ?? now, options.tamper), artifact.digest);
    return artifact;
  }

  beforeAll(async () => {
    await registry.start();
    push = new Pusher(registry.host, 'tools/keyless');
    ca = await TestCa.create();
    stranger = await TestCa.create('CN=someone else,O=elsewhere');
    writeFileSync(rootFile, JSON.stringify(trustedRoot([ca], log)));
  }, 30_000);
  afterAll(() => registry.close());

  it('loads a component signed keyless by the configured identity (exact subject, or an anchored RE2 pattern)', async () => {
    const { source } = await signed('right', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }));
    expect((await loadSource(source, { storeDir: store(), ...trust(exactly) })).tools).toContain('echo');
    // Who signed is the identity, as toolhost.lock records it.
    const fetched = await new RemoteFetcher({ storeDir: store(), ...trust(exactly) }, silentLogger).fetch(source, undefined);
    expect(lockEntryOf(fetched).signer).toBe(`${SUBJECT} (${ISSUER})`);
    const pattern = [{ issuer: ISSUER, subjectRegExp: 'https://github\\.com/acme/tools/\\.github/workflows/[a-z]+\\.yml@refs/tags/v[0-9]+' }];
    expect((await loadSource(source, { storeDir: store(), ...trust(pattern) })).tools).toContain('echo');
    // Anchored: a pattern that matches only a part of the subject is no match.
    const partial = [{ issuer: ISSUER, subjectRegExp: 'https://github\\.com/acme/tools' }];
    expect((await loadSource(source, { storeDir: store(), ...trust(partial) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-identity' } });
  }, 60_000);

  it('accepts an e-mail subject too', async () => {
    const { source } = await signed('email', await ca.issue({ subject: 'dev@acme.example', issuer: 'https://accounts.google.com', ...valid }));
    expect((await loadSource(source, { storeDir: store(), ...trust([{ issuer: 'https://accounts.google.com', subject: 'dev@acme.example' }]) })).tools).toContain('echo');
  }, 60_000);

  it('refuses another issuer and another subject, naming the identity that signed', async () => {
    const otherIssuer = await signed('other-issuer', await ca.issue({ subject: SUBJECT, issuer: 'https://evil.example', ...valid }));
    let storeDir = store();
    expect((await loadSource(otherIssuer.source, { storeDir, ...trust(exactly) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-identity', identity: `${SUBJECT} (https://evil.example)` } });
    expect(storedBlobs(storeDir)).toEqual([]);

    const otherSubject = await signed('other-subject', await ca.issue({ subject: 'https://github.com/mallory/tools/.github/workflows/release.yml@refs/tags/v1', issuer: ISSUER, ...valid }));
    storeDir = store();
    expect((await loadSource(otherSubject.source, { storeDir, ...trust(exactly) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-identity' } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a certificate that does not chain to the pinned root', async () => {
    const { source } = await signed('stranger', await stranger.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }));
    const storeDir = store();
    const { error } = await loadSource(source, { storeDir, ...trust(exactly) });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'invalid-signature' } });
    expect(detailOf(error)).toMatch(/CERTIFICATE_ERROR/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a bundle by the trusted identity whose statement names another repository', async () => {
    const { source } = await signed('other-repo', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }), { repository: `${registry.host}/tools/files` });
    const storeDir = store();
    expect((await loadSource(source, { storeDir, ...trust(exactly) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-reference', signedReference: `${registry.host}/tools/files` } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a bundle whose statement names another digest', async () => {
    const elsewhere = await component('elsewhere');
    const { source } = await signed('copied', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }), { names: elsewhere.digest });
    const storeDir = store();
    expect((await loadSource(source, { storeDir, ...trust(exactly) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'wrong-digest', signedDigest: elsewhere.digest } });
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a log entry edited after the log signed it', async () => {
    const leaf = await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid });
    // The integrated time moved (to pass off a signature as made elsewhen): the signed entry timestamp no longer verifies.
    const moved = await signed('moved-time', leaf, { tamper: (entry) => { entry.integratedTime = String(now - 60); } });
    let storeDir = store();
    let { error } = await loadSource(moved.source, { storeDir, ...trust(exactly) });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'invalid-signature' } });
    expect(detailOf(error)).toMatch(/TLOG_INCLUSION_PROMISE_ERROR/);
    expect(storedBlobs(storeDir)).toEqual([]);
    // The inclusion proof's sibling hash changed: the root no longer matches the signed checkpoint.
    const proof = await signed('moved-proof', leaf, {
      tamper: (entry) => {
        const inclusion = entry.inclusionProof as { hashes: string[] };
        inclusion.hashes = [Buffer.alloc(32, 7).toString('base64')];
      },
    });
    storeDir = store();
    ({ error } = await loadSource(proof.source, { storeDir, ...trust(exactly) }));
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'invalid-signature' } });
    expect(detailOf(error)).toMatch(/TLOG_INCLUSION_PROOF_ERROR/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a certificate that had expired when the log integrated the entry', async () => {
    const expired = await ca.issue({ subject: SUBJECT, issuer: ISSUER, notBefore: new Date((now - 3600) * 1000), notAfter: new Date((now - 3000) * 1000) });
    const { source } = await signed('expired', expired);
    const storeDir = store();
    const { error } = await loadSource(source, { storeDir, ...trust(exactly) });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'invalid-signature' } });
    expect(detailOf(error)).toMatch(/expired/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('asks for an SCT when the pinned root lists CT logs (a certificate without one is refused)', async () => {
    const { source } = await signed('no-sct', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }));
    const withCt = join(dir, 'trusted_root_ct.json');
    writeFileSync(withCt, JSON.stringify(trustedRoot([ca], log, [new TestLog()])));
    const storeDir = store();
    const { error } = await loadSource(source, { storeDir, verify: { trustedRoot: withCt, identities: exactly } });
    expect(error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'invalid-signature' } });
    expect(detailOf(error)).toMatch(/expected 1 SCTs, got 0/);
    expect(storedBlobs(storeDir)).toEqual([]);
  }, 60_000);

  it('refuses a trusted root without identities, and identities without a trusted root, before any request', async () => {
    const { source } = await signed('no-identity', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }));
    expect((await loadSource(source, { storeDir: store(), ...trust(undefined) })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'no-trust' } });
    expect((await loadSource(source, { storeDir: store(), verify: { identities: exactly } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'no-trust' } });
    // A keyless bundle is no signature by a key: with keys only it is untrusted.
    const keyFile = join(dir, 'unrelated.pub');
    writeFileSync(keyFile, generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }));
    expect((await loadSource(source, { storeDir: store(), verify: { keys: [keyFile] } })).error).toMatchObject({ code: 'SOURCE_UNTRUSTED', details: { reason: 'untrusted-key' } });
  }, 60_000);

  it('takes its trust from toolhost.yaml: verify.trusted_root (relative to the file) and identities', async () => {
    const { source } = await signed('from-config', await ca.issue({ subject: SUBJECT, issuer: ISSUER, ...valid }));
    const project = mkdtempSync(join(dir, 'project-'));
    writeFileSync(join(project, 'root.json'), readFileSync(rootFile));
    const file = join(project, 'toolhost.yaml');
    const yaml = (identity: string): string => ['distribution:', '  verify:', '    trusted_root: root.json', '    identities:', `      - ${identity}`, ''].join('\n');
    writeFileSync(file, yaml(`{ issuer: "${ISSUER}", subject_regexp: "https://github\\\\.com/acme/.*" }`));
    const { resolved } = await loadConfig(file, { env: {} });
    expect(resolved.distribution.verify).toEqual({ trustedRoot: join(project, 'root.json'), identities: [{ issuer: ISSUER, subjectRegExp: 'https://github\\.com/acme/.*' }] });
    expect((await loadSource(source, { ...resolved.distribution, storeDir: store() })).tools).toContain('echo');
    // An identity names exactly one of subject and subject_regexp, and always an issuer.
    writeFileSync(file, yaml(`{ issuer: "${ISSUER}", subject: a@b.c, subject_regexp: ".*" }`));
    await expect(loadConfig(file, { env: {} })).rejects.toBeInstanceOf(ConfigError);
    writeFileSync(file, yaml('{ subject: a@b.c }'));
    await expect(loadConfig(file, { env: {} })).rejects.toBeInstanceOf(ConfigError);
  }, 60_000);
});
