/**
 * What the distribution room is configured with (`distribution:` in
 * toolhost.yaml, resolved), its defaults, and the per-load trust policy.
 * Plain data only.
 */
import type { TokenRealms } from './auth-scope.js';
import type { ConfiguredAuth } from './credentials.js';
import type { Identity } from './keyless.js';
import type { LockEntries } from './lock.js';
import type { AttestationRequirement } from './signature-policy.js';

/** Default cap on a manifest (a signature manifest, a referrers index) or a config blob: 4 MiB (what registries commonly accept). */
export const DEFAULT_MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** Default cap on the layers of a `sha256-HEX.sig` manifest (and the bundle referrers of one digest): 16. */
export const DEFAULT_MAX_SIGNATURE_LAYERS = 16;
/** Default cap on one signature payload or Sigstore bundle: 64 KiB (a keyless bundle is ~5-10 KB). */
export const DEFAULT_MAX_SIGNATURE_BYTES = 64 * 1024;
/** Default cap on a component layer: 64 MiB (a componentize-js component is ~12 MB). */
export const DEFAULT_MAX_COMPONENT_BYTES = 64 * 1024 * 1024;

/** Default overall deadline of one remote load (resolve, signatures, blobs): 2 minutes. */
export const DEFAULT_LOAD_TIMEOUT_MS = 120_000;

/** Who must have signed a remote component (per load, or global). */
export interface TrustPolicy {
  /** PEM public key files (ECDSA P-256, cosign.pub): a signature by any of them is trusted. */
  keys?: readonly string[];
  /** Keyless: a pinned Sigstore `trusted_root.json` (Fulcio CAs, Rekor logs, CT logs); needs `identities`. */
  trustedRoot?: string;
  /** Keyless: the OIDC issuer and certificate subject of each trusted signer; needs `trustedRoot`. */
  identities?: readonly Identity[];
  /**
   * By requested repository prefix (`host[:port]` or `host[:port]/path`, whole segments): the prefix a signature
   * may name instead (a mirror of a repository signed under its origin's name; signature-policy.ts).
   */
  referenceAliases?: Readonly<Record<string, string>>;
  /** Attestations required beside the signature, by the same signers (e.g. SLSA provenance from a named builder). */
  requireAttestations?: readonly AttestationRequirement[];
  /** Load without verifying (a warning is logged). */
  skip?: boolean;
}

/**
 * The `oci://` sources among `loads` that load without a verified signature: their own `verify` (else `global`)
 * says `skip`. What `list` warns about (a URL source is pinned by its digest: nothing to skip).
 */
export function unverifiedSources(loads: ReadonlyArray<{ path: string; verify?: TrustPolicy | undefined }>, global: TrustPolicy | undefined): string[] {
  return loads.filter(({ path, verify }) => /^oci:\/\//i.test(path) && (verify ?? global)?.skip === true).map(({ path }) => path);
}

/** The distribution settings of a host. */
export interface DistributionOptions {
  /** The content-addressed store (default `<cacheDir>/store-v1`). */
  storeDir?: string;
  /** Registries (`host[:port]` or `host`) spoken to over plain http (loopback always may be). */
  insecureRegistries?: readonly string[];
  /** Credentials by registry: a user name and the environment variable holding the password. */
  auth?: ConfiguredAuth;
  /** By registry (`host[:port]`): token realm hosts on another origin that may receive its credential (auth-scope.ts). */
  tokenRealms?: TokenRealms;
  /** The trust every remote source gets unless its own entry says otherwise. */
  verify?: TrustPolicy;
  maxManifestBytes?: number;
  maxComponentBytes?: number;
  /** Most layers of a `sha256-HEX.sig` manifest, and bundle referrers of a digest (default 16). */
  maxSignatureLayers?: number;
  /** Most bytes of one signature payload or bundle (default 65 536). */
  maxSignatureBytes?: number;
  /** How long a docker credential helper may take (ms, default 30 000). */
  credentialHelperTimeoutMs?: number;
  /** Most bytes a docker credential helper may print (default 65 536). */
  credentialHelperMaxBytes?: number;
  /** Overall deadline of one remote load, every request and the credential helper included (ms, default 120 000). */
  loadTimeoutMs?: number;
  /** CA certificates (PEM) for registries with a private CA. */
  ca?: string;
  /**
   * Where remote components may come from: registries (`host[:port]`), repository prefixes
   * (`host[:port]/team/`), URL prefixes (`https://host/path/`). Absent: any, for the config and the CLI; none,
   * for loads asked for at runtime (the admin load tool).
   */
  registries?: readonly string[];
  /** toolhost.lock's entries: a locked tag is fetched by its pinned digest, never resolved again. */
  lock?: LockEntries;
}
