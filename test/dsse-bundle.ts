/** Key-signed Sigstore DSSE bundles and in-toto statements, built with @sigstore's builders and node:crypto (for the distribution tests). */
import { sign, type KeyObject } from 'node:crypto';
import { bundleToJSON, toDSSEBundle } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';

export const IN_TOTO = 'application/vnd.in-toto+json';
export const SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';

/** A DSSE bundle (v0.3 JSON) in which `key` signs `payload` as `payloadType` (no log entry: the key is the trust). */
export function keyDsseBundle(payloadType: string, payload: Uint8Array, key: KeyObject): unknown {
  const signature = sign('sha256', dsse.preAuthEncoding(payloadType, Buffer.from(payload)), { key, dsaEncoding: 'der' });
  return bundleToJSON(toDSSEBundle({ artifact: Buffer.from(payload), artifactType: payloadType, signature, keyHint: 'test-key' }));
}

/** An in-toto statement about `digest` (`sha256:HEX`), its subject named `name` (omitted when undefined). */
export function inToto(digest: string, name: string | undefined, predicateType: string, predicate: unknown = {}): Buffer {
  const subject = { ...(name === undefined ? {} : { name }), digest: { sha256: digest.slice('sha256:'.length) } };
  return Buffer.from(JSON.stringify({ _type: 'https://in-toto.io/Statement/v1', subject: [subject], predicateType, predicate }));
}
