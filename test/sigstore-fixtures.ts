/**
 * A private Sigstore for tests, built here and independent of toolhost: a
 * certificate authority (a Fulcio-like root that issues short-lived leaf
 * certificates carrying the OIDC issuer extension 1.3.6.1.4.1.57264.1.8 and an
 * e-mail or URI subject alternative name), a transparency log (a Rekor-like
 * key: a `dsse` entry, its signed entry timestamp, and its inclusion proof in
 * a two-leaf RFC 6962 Merkle tree under a signed checkpoint), the
 * `trusted_root.json` naming both, and keyless DSSE bundles signed with a
 * leaf's key. Certificates are issued with @peculiar/x509 (node:crypto cannot
 * issue X.509); signatures, hashes and canonical JSON are node:crypto's and
 * @sigstore/core's.
 */
import 'reflect-metadata';
import { createHash, createPrivateKey, generateKeyPairSync, sign, webcrypto, type KeyObject } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { bundleToJSON, toDSSEBundle } from '@sigstore/bundle';
import { dsse, json } from '@sigstore/core';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKeyPair = webcrypto.CryptoKeyPair;
type CryptoKey = webcrypto.CryptoKey;

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const OID_ISSUER_V2 = '1.3.6.1.4.1.57264.1.8';
const INTOTO = 'application/vnd.in-toto+json';

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

/** A DER UTF8String (short strings only: the test's issuer URLs). */
function utf8String(text: string): Uint8Array {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length > 127) throw new Error('utf8String: too long for this test helper');
  return Buffer.concat([Buffer.from([0x0c, bytes.length]), bytes]);
}

async function ecKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as Promise<CryptoKeyPair>;
}

async function toKeyObject(key: CryptoKey): Promise<KeyObject> {
  return createPrivateKey({ key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key)), format: 'der', type: 'pkcs8' });
}

/** A leaf certificate and the key it certifies. */
export interface Leaf {
  der: Buffer;
  key: KeyObject;
}

/** A Fulcio-like certificate authority: one self-signed root. */
export class TestCa {
  private constructor(readonly root: x509.X509Certificate, private readonly keys: CryptoKeyPair) {}

  static async create(name = 'CN=toolhost test fulcio,O=toolhost-test'): Promise<TestCa> {
    const keys = await ecKeys();
    const root = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name,
      notBefore: new Date('2020-01-01T00:00:00Z'),
      notAfter: new Date('2040-01-01T00:00:00Z'),
      keys,
      signingAlgorithm: EC,
      extensions: [
        new x509.BasicConstraintsExtension(true, 1, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new TestCa(root, keys);
  }

  get rootDer(): Buffer {
    return Buffer.from(this.root.rawData);
  }

  /** A code-signing leaf for `subject` (an e-mail, or a URI when it has a scheme) whose OIDC issuer is `issuer`. */
  async issue(options: { subject: string; issuer: string; notBefore: Date; notAfter: Date }): Promise<Leaf> {
    const keys = await ecKeys();
    const san = /^[a-z]+:\/\//.test(options.subject) ? { type: 'url' as const, value: options.subject } : { type: 'email' as const, value: options.subject };
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: createHash('sha256').update(`${options.subject}${Math.random()}`).digest('hex').slice(0, 16),
      subject: '',
      issuer: this.root.subject,
      notBefore: options.notBefore,
      notAfter: options.notAfter,
      publicKey: keys.publicKey,
      signingKey: this.keys.privateKey,
      signingAlgorithm: EC,
      extensions: [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension(['1.3.6.1.5.5.7.3.3']),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(this.keys.publicKey),
        new x509.SubjectAlternativeNameExtension([san], true),
        new x509.Extension(OID_ISSUER_V2, false, utf8String(options.issuer)),
      ],
    });
    return { der: Buffer.from(cert.rawData), key: await toKeyObject(keys.privateKey) };
  }
}

/** A Rekor-like transparency log: one key that signs entry timestamps and checkpoints. */
export class TestLog {
  readonly key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  readonly baseUrl = 'https://rekor.toolhost.test';
  readonly origin = 'rekor.toolhost.test - 1';

  get spki(): Buffer {
    return this.key.publicKey.export({ type: 'spki', format: 'der' });
  }

  /** The log's id: sha256 of its public key (DER). */
  get logId(): Buffer {
    return sha256(this.spki);
  }

  /**
   * The log entry of a DSSE envelope signed by `leaf`'s certificate, integrated at `integratedTime` (seconds):
   * at index 0 of a two-leaf tree, with its signed entry timestamp and its inclusion proof (bundle JSON).
   */
  entry(envelope: { payload: Buffer; signature: Buffer }, leafDer: Buffer, integratedTime: number): Record<string, unknown> {
    const pem = `-----BEGIN CERTIFICATE-----\n${leafDer.toString('base64')}\n-----END CERTIFICATE-----\n`;
    const body = Buffer.from(json.canonicalize({
      apiVersion: '0.0.1',
      kind: 'dsse',
      spec: {
        payloadHash: { algorithm: 'sha256', value: sha256(envelope.payload).toString('hex') },
        signatures: [{ signature: envelope.signature.toString('base64'), verifier: Buffer.from(pem).toString('base64') }],
      },
    }));
    const logIndex = 0;
    const set = sign('sha256', Buffer.from(json.canonicalize({ body: body.toString('base64'), integratedTime, logIndex, logID: this.logId.toString('hex') })), this.key.privateKey);
    // RFC 6962: the leaf hash, a sibling leaf, the root over both.
    const leafHash = sha256(Buffer.from([0]), body);
    const sibling = sha256(Buffer.from([0]), Buffer.from('another entry'));
    const rootHash = sha256(Buffer.from([1]), leafHash, sibling);
    const note = `${this.origin}\n2\n${rootHash.toString('base64')}\n`;
    const noteSignature = Buffer.concat([this.logId.subarray(0, 4), sign('sha256', Buffer.from(note), this.key.privateKey)]);
    return {
      logIndex: String(logIndex),
      logId: { keyId: this.logId.toString('base64') },
      kindVersion: { kind: 'dsse', version: '0.0.1' },
      integratedTime: String(integratedTime),
      inclusionPromise: { signedEntryTimestamp: set.toString('base64') },
      inclusionProof: {
        logIndex: String(logIndex),
        rootHash: rootHash.toString('base64'),
        treeSize: '2',
        hashes: [sibling.toString('base64')],
        checkpoint: { envelope: `${note}\n\u2014 rekor.toolhost.test ${noteSignature.toString('base64')}\n` },
      },
      canonicalizedBody: body.toString('base64'),
    };
  }
}

const logInstance = (log: TestLog): unknown => ({
  baseUrl: log.baseUrl,
  hashAlgorithm: 'SHA2_256',
  publicKey: { rawBytes: log.spki.toString('base64'), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start: '2020-01-01T00:00:00Z' } },
  logId: { keyId: log.logId.toString('base64') },
});

/**
 * The `trusted_root.json` naming `cas` (certificate authorities) and `log` (no timestamp authorities; CT logs only
 * when `ctlogs` names some).
 */
export function trustedRoot(cas: readonly TestCa[], log: TestLog, ctlogs: readonly TestLog[] = []): unknown {
  return {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [logInstance(log)],
    certificateAuthorities: cas.map((ca, i) => ({
      subject: { organization: 'toolhost-test', commonName: `test fulcio ${i}` },
      uri: `https://fulcio${i}.toolhost.test`,
      certChain: { certificates: [{ rawBytes: ca.rootDer.toString('base64') }] },
      validFor: { start: '2020-01-01T00:00:00Z' },
    })),
    ctlogs: ctlogs.map(logInstance),
    timestampAuthorities: [],
  };
}

/**
 * An in-toto statement with cosign's signing predicate naming `digest` (`sha256:HEX`) and, as the subject's name,
 * the repository `name` (`REGISTRY/REPO`; cosign 3 writes the digest only, which toolhost does not accept).
 */
export function statement(digest: string, name: string): Buffer {
  return Buffer.from(JSON.stringify({ _type: 'https://in-toto.io/Statement/v1', subject: [{ name, digest: { sha256: digest.slice('sha256:'.length) } }], predicateType: 'https://sigstore.dev/cosign/sign/v1', predicate: {} }));
}

/**
 * A keyless DSSE bundle (v0.3, bundle JSON): `payload` signed by `leaf`'s key, its certificate, and the log's
 * entry integrated at `integratedTime`. `tamper` edits the entry after it was signed.
 */
export function keylessBundle(payload: Buffer, leaf: Leaf, log: TestLog, integratedTime: number, tamper?: (entry: Record<string, unknown>) => void): unknown {
  const signature = sign('sha256', dsse.preAuthEncoding(INTOTO, payload), leaf.key);
  const bundle = bundleToJSON(toDSSEBundle({ artifact: payload, artifactType: INTOTO, signature, certificate: leaf.der })) as { verificationMaterial: { tlogEntries: unknown[] } };
  const entry = log.entry({ payload, signature }, leaf.der, integratedTime);
  tamper?.(entry);
  bundle.verificationMaterial.tlogEntries = [entry];
  return bundle;
}
