/**
 * The content-addressed store of fetched components, beside the transpile
 * cache (`<cacheDir>/store-v1/` unless configured): every manifest, config
 * and layer under `blobs/sha256/<hex>`, and the signatures a manifest was
 * verified with under `signatures/sha256/<hex>.json`, so a pinned digest
 * fetched once loads (and is verified again, with the trust configured then)
 * with the registry gone. The transpile cache is keyed by the layer's sha256,
 * the same digest.
 *
 * Guarantees: a blob is written only after it matched its digest, through a
 * temporary file renamed into place (no half blob is ever visible), and
 * every read is hashed again (a blob that no longer matches is treated as
 * absent). Signatures are not trusted because they are stored: they are
 * checked against the keys at every load. Not guaranteed: garbage
 * collection (nothing is ever removed).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A signature as stored: cosign's tag form (the simple-signing payload and its signature), or a Sigstore bundle. */
export type StoredSignature = {
  /** The payload, base64. */
  payload: string;
  /** The signature (DER ECDSA), base64. */
  signature: string;
} | {
  /** A Sigstore bundle's JSON, base64. */
  bundle: string;
};

const hexOf = (digest: string): string => {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`not a sha256 digest: ${digest}`);
  return digest.slice('sha256:'.length);
};

export class ComponentStore {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  #blobPath(digest: string): string {
    return join(this.root, 'blobs', 'sha256', hexOf(digest));
  }

  /** A blob's bytes if the store holds it and they still match the digest. */
  async get(digest: string): Promise<Uint8Array | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.#blobPath(digest));
    } catch {
      return undefined;
    }
    const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    return actual === digest ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined;
  }

  /** Keep bytes already verified against `digest` (checked again here). */
  async put(digest: string, bytes: Uint8Array): Promise<void> {
    const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (actual !== digest) throw new Error(`refusing to store bytes under ${digest}: their sha256 is ${actual}`);
    await this.#write(this.#blobPath(digest), bytes);
  }

  /** The signatures a manifest digest was verified with, if any were kept. */
  async signatures(digest: string): Promise<StoredSignature[]> {
    try {
      const parsed = JSON.parse(await readFile(join(this.root, 'signatures', 'sha256', `${hexOf(digest)}.json`), 'utf8')) as unknown;
      return Array.isArray(parsed) ? parsed.filter((entry): entry is StoredSignature => (typeof entry?.payload === 'string' && typeof entry?.signature === 'string') || typeof entry?.bundle === 'string') : [];
    } catch {
      return [];
    }
  }

  async putSignatures(digest: string, signatures: readonly StoredSignature[]): Promise<void> {
    await this.#write(join(this.root, 'signatures', 'sha256', `${hexOf(digest)}.json`), Buffer.from(JSON.stringify(signatures)));
  }

  async #write(path: string, bytes: Uint8Array): Promise<void> {
    const dir = join(path, '..');
    await mkdir(dir, { recursive: true });
    const temp = join(dir, `.tmp-${randomBytes(6).toString('hex')}`);
    try {
      await writeFile(temp, bytes);
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }
}
