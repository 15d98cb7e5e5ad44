/**
 * The content-addressed store of fetched components, beside the transpile
 * cache (`<cacheDir>/store-v1/` unless configured): every manifest, config
 * and layer under `blobs/sha256/<hex>`, and the signatures a manifest was
 * verified with under `signatures/sha256/<hex>.json`, so a pinned digest
 * fetched once loads (and is verified again, with the trust configured then)
 * with the registry gone. The transpile cache is keyed by the layer's sha256,
 * the same digest.
 *
 * A blob of `CHUNKED_MIN_FILE` or more (a componentize-js component: ~12 MB)
 * is kept as content-addressed chunks (base/chunk-store.ts): its place holds
 * the recipe, `blobs/sha256/<hex>.chunks`, and the chunks live in the chunk
 * store the host shares with the transpile cache (`<cacheDir>/chunks-v1/` when
 * the store lies in the cache), so the engine every componentize-js tool
 * carries is on disk once, not once a tool and again in the cache (issue 37).
 * What is read back is the blob as it was published, byte for byte (and hashed
 * again): the split is local, never published.
 *
 * Guarantees: a blob is written only after it matched its digest, through a
 * temporary file renamed into place (no half blob is ever visible), and
 * every read is hashed again (a blob that no longer matches is treated as
 * absent). Signatures are not trusted because they are stored: they are
 * checked against the keys at every load.
 *
 * A digest is not an answer to every request that names it: beside each
 * digest a request is answered by (an OCI manifest, a URL's bytes) the store
 * records which sources it was fetched for and how each was accepted
 * (`sources/sha256/<hex>.json`: the source normalized, `signature` with the
 * signer, `digest` for a URL's pin, or `skip` for a load under verify.skip).
 * fetch.ts answers a request from the store only when a record names that
 * request's own source (and still verifies an OCI manifest's kept signatures
 * under the request's own trust): a URL is answered from the store only if
 * that exact URL served those bytes before, so a client cannot reach a
 * component the operator loaded unverified by naming its digest under some
 * other URL or repository. Records are kept per digest, most recent
 * {@link MAX_RECORDS} only; a record lost to two concurrent writers only
 * costs a fetch. Nothing is removed but by `remove`; chunks no recipe names any
 * more are removed by `toolhost gc` (base/chunk-gc.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CHUNKED_MIN_FILE, ChunkStore, parseRecipe } from '../base/chunk-store.js';

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

/** For whom a stored digest was fetched, and how it was accepted. */
export interface StoreRecord {
  /** The source, normalized: `oci://REGISTRY/REPOSITORY` (whatever tag or digest named it), or the URL without its fragment. */
  source: string;
  /** `signature`: verified by `signer`; `digest`: a URL's bytes matched its pinned sha256; `skip`: loaded unverified (verify.skip). */
  policy: 'signature' | 'digest' | 'skip';
  /** The accepted key's fingerprint, the keyless identity, or the key file. */
  signer?: string;
}

/** Most records kept per digest (the most recent). */
export const MAX_RECORDS = 64;

const isRecord = (value: unknown): value is StoreRecord => {
  const entry = value as Partial<StoreRecord> | null;
  return typeof entry === 'object' && entry !== null && typeof entry.source === 'string'
    && (entry.policy === 'signature' || entry.policy === 'digest' || entry.policy === 'skip')
    && (entry.signer === undefined || typeof entry.signer === 'string');
};

const hexOf = (digest: string): string => {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`not a sha256 digest: ${digest}`);
  return digest.slice('sha256:'.length);
};

export class ComponentStore {
  readonly root: string;
  readonly #chunks: ChunkStore;

  /** `chunks`: where large blobs' chunks go (default `<root>/chunks-v1`; the host passes the cache's). */
  constructor(root: string, chunks: ChunkStore = new ChunkStore(join(root, 'chunks-v1'))) {
    this.root = root;
    this.#chunks = chunks;
  }

  #blobPath(digest: string): string {
    return join(this.root, 'blobs', 'sha256', hexOf(digest));
  }

  /** A blob's bytes if the store holds it (whole, or as chunks) and they still match the digest. */
  async get(digest: string): Promise<Uint8Array | undefined> {
    let bytes: Buffer | undefined;
    try {
      bytes = await readFile(this.#blobPath(digest));
    } catch {
      try {
        const recipe = parseRecipe(await readFile(`${this.#blobPath(digest)}.chunks`, 'utf8'));
        bytes = recipe === undefined ? undefined : await this.#chunks.get(recipe);
      } catch {
        bytes = undefined;
      }
    }
    if (bytes === undefined) return undefined;
    const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    return actual === digest ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined;
  }

  /** Keep bytes already verified against `digest` (checked again here). */
  async put(digest: string, bytes: Uint8Array): Promise<void> {
    const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (actual !== digest) throw new Error(`refusing to store bytes under ${digest}: their sha256 is ${actual}`);
    if (bytes.length < CHUNKED_MIN_FILE) return this.#write(this.#blobPath(digest), bytes);
    const recipe = await this.#chunks.put(bytes);
    await this.#write(`${this.#blobPath(digest)}.chunks`, Buffer.from(JSON.stringify(recipe)));
  }

  /**
   * Forget a blob: its bytes (or its recipe: the chunks stay until `toolhost gc` finds no recipe names them,
   * base/chunk-gc.ts), the signatures and the source records kept with it. Absent parts are no error.
   */
  async remove(digest: string): Promise<void> {
    const hex = hexOf(digest);
    await Promise.all([
      rm(this.#blobPath(digest), { force: true }),
      rm(`${this.#blobPath(digest)}.chunks`, { force: true }),
      rm(join(this.root, 'signatures', 'sha256', `${hex}.json`), { force: true }),
      rm(this.#recordsPath(digest), { force: true }),
    ]);
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

  /** The sources `digest` was fetched for, and how each was accepted (none when it was never recorded). */
  async records(digest: string): Promise<StoreRecord[]> {
    try {
      const parsed = JSON.parse(await readFile(this.#recordsPath(digest), 'utf8')) as unknown;
      return Array.isArray(parsed) ? parsed.filter(isRecord) : [];
    } catch {
      return [];
    }
  }

  /** The records of `digest` that name `source` (normalized as {@link StoreRecord.source}). */
  async recordsFor(digest: string, source: string): Promise<StoreRecord[]> {
    return (await this.records(digest)).filter((record) => record.source === source);
  }

  /** Record that `digest` was fetched and accepted for a source (kept after the blobs it answers with). */
  async addRecord(digest: string, record: StoreRecord): Promise<void> {
    const same = (other: StoreRecord): boolean => other.source === record.source && other.policy === record.policy && other.signer === record.signer;
    const kept = (await this.records(digest)).filter((other) => !same(other));
    const entry: StoreRecord = { source: record.source, policy: record.policy, ...(record.signer === undefined ? {} : { signer: record.signer }) };
    await this.#write(this.#recordsPath(digest), Buffer.from(JSON.stringify([...kept, entry].slice(-MAX_RECORDS))));
  }

  #recordsPath(digest: string): string {
    return join(this.root, 'sources', 'sha256', `${hexOf(digest)}.json`);
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
