/**
 * What a signature means (host/distribution/signature-policy.ts), read from
 * payloads directly: which verified payloads are signatures of a digest
 * under a repository name, and which are not (attestations, other payload
 * types, other digests, other or no repositories).
 */
import { describe, expect, it } from 'vitest';
import { checkAttestation, checkDssePayload, checkSimpleSigning } from '../host/distribution/signature-policy.js';

const digest = `sha256:${'ab'.repeat(32)}`;
const subject = { digest, references: ['ghcr.io/acme/ctools'] };
const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
const simple = (reference: string, type = 'cosign container image signature', named = digest): Uint8Array => json({ critical: { identity: { 'docker-reference': reference }, image: { 'docker-manifest-digest': named }, type }, optional: null });
const statement = (predicateType: string, name: string | undefined, type = 'https://in-toto.io/Statement/v1', predicate: unknown = {}): Uint8Array => json({ _type: type, subject: [{ ...(name === undefined ? {} : { name }), digest: { sha256: digest.slice(7) } }], predicateType, predicate });

describe('what a verified payload means', () => {
  it('accepts cosign\'s simple-signing payload for this digest and repository, in the tag form or a DSSE envelope', () => {
    expect(checkSimpleSigning(simple('ghcr.io/acme/ctools:v1'), subject)).toEqual({ ok: true });
    expect(checkDssePayload('application/vnd.dev.cosign.simplesigning.v1+json', simple('ghcr.io/acme/ctools'), subject)).toEqual({ ok: true });
  });

  it('refuses a simple-signing payload of another type, digest or repository, or with none', () => {
    expect(checkSimpleSigning(simple('ghcr.io/acme/ctools', 'cosign container image attestation'), subject)).toMatchObject({ ok: false, reason: 'not-a-signature' });
    expect(checkSimpleSigning(simple('ghcr.io/acme/ctools', undefined, `sha256:${'cd'.repeat(32)}`), subject)).toMatchObject({ ok: false, reason: 'wrong-digest' });
    expect(checkSimpleSigning(simple('ghcr.io/acme/files'), subject)).toEqual({ ok: false, reason: 'wrong-reference', names: 'ghcr.io/acme/files' });
    expect(checkSimpleSigning(simple(''), subject)).toEqual({ ok: false, reason: 'wrong-reference', names: '' });
    expect(checkSimpleSigning(Buffer.from('not json'), subject)).toMatchObject({ ok: false, reason: 'not-a-signature' });
  });

  it('accepts an in-toto statement (v1 or v0.1) with cosign\'s signing predicate naming the digest and repository', () => {
    expect(checkDssePayload('application/vnd.in-toto+json', statement('https://sigstore.dev/cosign/sign/v1', 'ghcr.io/acme/ctools'), subject)).toEqual({ ok: true });
    expect(checkDssePayload('application/vnd.in-toto+json', statement('https://sigstore.dev/cosign/sign/v1', 'ghcr.io/acme/ctools', 'https://in-toto.io/Statement/v0.1'), subject)).toEqual({ ok: true });
  });

  it('refuses attestations, other payload types, another statement type, and a statement naming no repository', () => {
    for (const predicate of ['https://spdx.dev/Document', 'https://cyclonedx.org/bom', 'https://slsa.dev/provenance/v1', 'https://cosign.sigstore.dev/attestation/vuln/v1']) {
      expect(checkDssePayload('application/vnd.in-toto+json', statement(predicate, 'ghcr.io/acme/ctools'), subject)).toMatchObject({ ok: false, reason: 'not-a-signature' });
    }
    expect(checkDssePayload('application/json', statement('https://sigstore.dev/cosign/sign/v1', 'ghcr.io/acme/ctools'), subject)).toMatchObject({ ok: false, reason: 'not-a-signature' });
    expect(checkDssePayload('application/vnd.in-toto+json', statement('https://sigstore.dev/cosign/sign/v1', 'ghcr.io/acme/ctools', 'https://example.com/Statement'), subject)).toMatchObject({ ok: false, reason: 'not-a-signature' });
    expect(checkDssePayload('application/vnd.in-toto+json', statement('https://sigstore.dev/cosign/sign/v1', undefined), subject)).toEqual({ ok: false, reason: 'wrong-reference', names: '' });
  });

  it('reads a required attestation: its predicate, the binding, and the SLSA builder (v1 and v0.2)', () => {
    const required = { predicateType: 'https://slsa.dev/provenance/v1', builderId: 'https://builder.example/v1' };
    const v1 = { runDetails: { builder: { id: 'https://builder.example/v1' } } };
    expect(checkAttestation('application/vnd.in-toto+json', statement(required.predicateType, 'ghcr.io/acme/ctools', undefined, v1), subject, required)).toEqual({ ok: true });
    expect(checkAttestation('application/vnd.in-toto+json', statement('https://slsa.dev/provenance/v0.2', 'ghcr.io/acme/ctools', undefined, { builder: { id: 'https://builder.example/v1' } }), subject, { ...required, predicateType: 'https://slsa.dev/provenance/v0.2' })).toEqual({ ok: true });
    expect(checkAttestation('application/vnd.in-toto+json', statement(required.predicateType, 'ghcr.io/acme/ctools', undefined, { runDetails: { builder: { id: 'https://evil.example' } } }), subject, required)).toMatchObject({ ok: false, reason: 'not-a-signature' });
    expect(checkAttestation('application/vnd.in-toto+json', statement(required.predicateType, 'ghcr.io/acme/files', undefined, v1), subject, required)).toMatchObject({ ok: false, reason: 'wrong-reference' });
  });
});
