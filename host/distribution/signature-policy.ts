/**
 * What a signature means: the one place that decides whether a payload a
 * trusted signer signed is a signature of *this* component, loaded under
 * *this* name. The cryptography (who signed) is cosign.ts's, bundle.ts's and
 * keyless.ts's; this module reads what was signed, only after that.
 *
 * A verified payload is a signature of the manifest `digest` loaded from
 * `REGISTRY/REPO` only when it is one of:
 *
 * - cosign's simple-signing payload (the `sha256-HEX.sig` tag form, or a DSSE
 *   envelope of payload type `application/vnd.dev.cosign.simplesigning.v1+json`)
 *   whose `critical.type` is `cosign container image signature`, whose
 *   `critical.image.docker-manifest-digest` is `digest`, and whose
 *   `critical.identity.docker-reference` names the repository;
 * - a DSSE envelope of payload type `application/vnd.in-toto+json` whose
 *   statement's `predicateType` is cosign's signing predicate
 *   (`https://sigstore.dev/cosign/sign/v1`, what `cosign sign` writes) and one
 *   of whose subjects has the sha256 `digest` and, as its `name`, the
 *   repository.
 *
 * "Names the repository": equal after normalization (a tag or digest suffix
 * dropped; no registry, `docker.io`, `index.docker.io` and
 * `registry-1.docker.io` all mean `docker.io`; a one-segment repository on
 * docker.io is `library/NAME`; any other registry as written, host lowercased),
 * or equal to what `verify.reference_aliases` maps the requested repository to
 * (a mirror, explicitly: `{ "mirror.internal:5000/acme": "ghcr.io/acme" }` —
 * whole path segments, nothing implied).
 *
 * Never a signature: an attestation (an in-toto statement with any other
 * predicate: SBOM, provenance, a vulnerability scan, whatever it says), a DSSE
 * payload of any other type (plain `application/json` included), a message
 * signature over the manifest's bytes (it names no repository), and a
 * statement about the digest that names no repository (cosign 3's bundle
 * statement carries the digest only: anyone able to push the same signed
 * manifest into another repository could serve it under that name).
 *
 * A policy may also *require* attestations (`verify.require_attestations`):
 * for each requirement, a DSSE in-toto statement by a trusted signer (the
 * same keys or keyless identities) with that `predicateType`, naming the
 * digest and the repository on one subject as a signature must, and, when the
 * requirement names a `builder_id`, SLSA provenance built by it
 * (`predicate.runDetails.builder.id`, v1; `predicate.builder.id`, v0.2). An
 * attestation is required *beside* a signature, never instead of one; what
 * its predicate claims beyond the builder is not interpreted.
 *
 * What a signature guarantees: the signer vouched for these exact manifest
 * bytes under this repository name. What it does not: freshness. It carries no
 * tag and no time: a tag moved back to an older digest the same signer once
 * signed for this repository (a downgrade to a version with a known hole)
 * verifies. toolhost.lock is what protects against that: a locked tag is never
 * resolved again (its pinned manifest and layer digests are fetched), so a
 * moved tag changes nothing until `toolhost update` re-resolves it, and that
 * update is the operator's act, shown in the lock's diff. Nor does a signature
 * say the component is safe: the grant in the config bounds what it may do.
 */

/** `critical.type` of cosign's simple-signing payload. */
export const SIMPLE_SIGNING_TYPE = 'cosign container image signature';
/** The DSSE payload type (and OCI media type) of a simple-signing payload. */
export const SIMPLE_SIGNING_PAYLOAD = 'application/vnd.dev.cosign.simplesigning.v1+json';
/** The in-toto predicate type `cosign sign` writes: the one statement that is a signature. */
export const COSIGN_SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';
/** The DSSE payload type of an in-toto statement. */
export const IN_TOTO_PAYLOAD = 'application/vnd.in-toto+json';
const IN_TOTO_STATEMENTS: ReadonlySet<string> = new Set(['https://in-toto.io/Statement/v1', 'https://in-toto.io/Statement/v0.1']);
const DOCKER_HUB: ReadonlySet<string> = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** By requested repository prefix (`host[:port]` or `host[:port]/path`): the prefix a signature may name instead. */
export type ReferenceAliases = Readonly<Record<string, string>>;

/** What a signature must bind: the manifest digest and the repository names it may carry (normalized). */
export interface SignedSubject {
  digest: string;
  references: readonly string[];
}

/** What a verified payload says, read against the subject. */
export type ClaimCheck =
  | { ok: true }
  | { ok: false; reason: 'wrong-digest'; names: string }
  /** `names`: the repository it names ('' for none). */
  | { ok: false; reason: 'wrong-reference'; names: string }
  /** An attestation or a payload of another type: `kind` says which. */
  | { ok: false; reason: 'not-a-signature'; kind: string };

/**
 * A repository reference, normalized: `[registry/]path[:tag|@digest]` → `registry/path` (see the header).
 * A first segment is a registry when it has a `.` or a `:` or is `localhost` (docker's rule).
 */
export function normalizeReference(reference: string): string {
  let name = reference.trim();
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > slash) name = name.slice(0, colon);
  const first = name.indexOf('/');
  const head = first < 0 ? '' : name.slice(0, first);
  const explicit = head.includes('.') || head.includes(':') || head === 'localhost';
  let registry = explicit ? head.toLowerCase() : 'docker.io';
  let path = explicit ? name.slice(first + 1) : name;
  if (DOCKER_HUB.has(registry)) {
    registry = 'docker.io';
    if (!path.includes('/')) path = `library/${path}`;
  }
  return `${registry}/${path}`;
}

/** Whether `full` is `prefix` or lies under it in whole path segments. */
const under = (full: string, prefix: string): boolean => full === prefix || full.startsWith(`${prefix}/`);

/**
 * The references a signature may name for a load of `registry/repository`: itself, and what each alias whose
 * key is a prefix of it (whole segments) maps it to — normalized.
 */
export function acceptedReferences(registry: string, repository: string, aliases: ReferenceAliases = {}): string[] {
  const requested = `${registry.toLowerCase()}/${repository}`;
  const accepted = new Set([normalizeReference(requested)]);
  for (const [from, to] of Object.entries(aliases)) {
    const prefix = from.replace(/\/+$/, '');
    const head = prefix.split('/')[0]!;
    const key = `${head.toLowerCase()}${prefix.slice(head.length)}`;
    if (under(requested, key)) accepted.add(normalizeReference(`${to.replace(/\/+$/, '')}${requested.slice(key.length)}`));
  }
  return [...accepted];
}

const parseJson = (bytes: Uint8Array): unknown => {
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
};
const record = (value: unknown): Record<string, unknown> | undefined => typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
const text = (value: unknown): string => typeof value === 'string' ? value : '';
const names = (reference: string, subject: SignedSubject): boolean => reference !== '' && subject.references.includes(normalizeReference(reference));

/** A simple-signing payload (cosign's tag form, or a DSSE envelope of that payload type) read against `subject`. */
export function checkSimpleSigning(payload: Uint8Array, subject: SignedSubject): ClaimCheck {
  const critical = record(record(parseJson(payload))?.['critical']);
  const type = text(critical?.['type']);
  if (type !== SIMPLE_SIGNING_TYPE) return { ok: false, reason: 'not-a-signature', kind: `a simple-signing payload of type ${JSON.stringify(type)}` };
  const digest = text(record(critical?.['image'])?.['docker-manifest-digest']);
  if (digest !== subject.digest) return { ok: false, reason: 'wrong-digest', names: digest };
  const reference = text(record(critical?.['identity'])?.['docker-reference']);
  return names(reference, subject) ? { ok: true } : { ok: false, reason: 'wrong-reference', names: reference };
}

/**
 * A DSSE envelope's payload (its type and bytes) read against `subject`: a simple-signing payload, or an in-toto
 * statement with cosign's signing predicate naming the digest and the repository on one subject.
 */
export function checkDssePayload(payloadType: string, payload: Uint8Array, subject: SignedSubject): ClaimCheck {
  if (payloadType === SIMPLE_SIGNING_PAYLOAD) return checkSimpleSigning(payload, subject);
  if (payloadType !== IN_TOTO_PAYLOAD) return { ok: false, reason: 'not-a-signature', kind: `a DSSE payload of type ${JSON.stringify(payloadType)}` };
  const statement = record(parseJson(payload));
  const predicate = text(statement?.['predicateType']);
  if (!IN_TOTO_STATEMENTS.has(text(statement?.['_type'])) || predicate !== COSIGN_SIGN_PREDICATE) {
    return { ok: false, reason: 'not-a-signature', kind: `an attestation (in-toto predicate ${JSON.stringify(predicate)})` };
  }
  const subjects = Array.isArray(statement?.['subject']) ? (statement['subject'] as unknown[]).map(record) : [];
  const matching = subjects.filter((entry) => `sha256:${text(record(entry?.['digest'])?.['sha256'])}` === subject.digest);
  if (matching.length === 0) return { ok: false, reason: 'wrong-digest', names: subjects.map((entry) => `sha256:${text(record(entry?.['digest'])?.['sha256'])}`).join(', ') };
  const named = matching.map((entry) => text(entry?.['name']));
  return named.some((reference) => names(reference, subject)) ? { ok: true } : { ok: false, reason: 'wrong-reference', names: named.filter((name) => name !== '').join(', ') };
}

/** A message signature (over the manifest's bytes): it binds the digest and names no repository, so it is not accepted. */
export function checkMessageSignature(): ClaimCheck {
  return { ok: false, reason: 'wrong-reference', names: '' };
}

/** An attestation a policy requires beside the signature. */
export interface AttestationRequirement {
  predicateType: string;
  /** SLSA provenance: the builder's id, exactly. */
  builderId?: string;
}

/** The builder id SLSA provenance names (v1 `runDetails.builder.id`, v0.2 `builder.id`), '' for none. */
function builderOf(predicate: Record<string, unknown> | undefined): string {
  return text(record(record(record(predicate?.['runDetails'])?.['builder']))?.['id']) || text(record(predicate?.['builder'])?.['id']);
}

/**
 * A DSSE payload read as the attestation `required` asks for: an in-toto statement with its predicate type, naming
 * the digest and the repository on one subject (as a signature must), and built by its builder when it names one.
 */
export function checkAttestation(payloadType: string, payload: Uint8Array, subject: SignedSubject, required: AttestationRequirement): ClaimCheck {
  if (payloadType !== IN_TOTO_PAYLOAD) return { ok: false, reason: 'not-a-signature', kind: `a DSSE payload of type ${JSON.stringify(payloadType)}` };
  const statement = record(parseJson(payload));
  const predicate = text(statement?.['predicateType']);
  if (!IN_TOTO_STATEMENTS.has(text(statement?.['_type'])) || predicate !== required.predicateType) {
    return { ok: false, reason: 'not-a-signature', kind: `an attestation of another predicate (${JSON.stringify(predicate)})` };
  }
  const subjects = Array.isArray(statement?.['subject']) ? (statement['subject'] as unknown[]).map(record) : [];
  const matching = subjects.filter((entry) => `sha256:${text(record(entry?.['digest'])?.['sha256'])}` === subject.digest);
  if (matching.length === 0) return { ok: false, reason: 'wrong-digest', names: '' };
  if (!matching.some((entry) => names(text(entry?.['name']), subject))) return { ok: false, reason: 'wrong-reference', names: matching.map((entry) => text(entry?.['name'])).join(', ') };
  if (required.builderId !== undefined) {
    const builder = builderOf(record(statement?.['predicate']));
    if (builder !== required.builderId) return { ok: false, reason: 'not-a-signature', kind: `provenance by builder ${JSON.stringify(builder)}` };
  }
  return { ok: true };
}

/** Why a refusal of `wrong-reference` happened, for its message. */
export function referenceRefusal(signed: string, subject: SignedSubject): string {
  const accepted = subject.references.join(', ');
  return signed === ''
    ? `its signature by a trusted signer names no repository (a message signature, or a statement with the digest only, as cosign 3's bundles write it): it could be replayed into any repository, so it is not accepted for ${accepted}; sign in cosign's tag form (cosign sign --key … --new-bundle-format=false) or with toolhost publish --sign-key, which name the repository`
    : `its signature by a trusted signer is for ${signed}, not for ${accepted}: a signature binds a component to the repository it names (a mirror is accepted only through distribution.verify.reference_aliases)`;
}
