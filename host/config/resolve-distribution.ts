/**
 * The `distribution` section and every `verify` entry (the section's own and a tool entry's) resolved: paths made
 * absolute against the config file's directory, snake_case turned into the fetcher's options. Kept apart from
 * resolve.ts, which holds the rest of the file's sections.
 */
import { resolve } from 'node:path';
import type { DistributionOptions, TrustPolicy } from '../distribution/options.js';
import type { DistributionSection, VerifyEntry } from './types.js';

export function resolveVerify(entry: VerifyEntry, baseDir: string): TrustPolicy {
  return {
    ...(entry.keys === undefined ? {} : { keys: entry.keys.map((key) => resolve(baseDir, key)) }),
    ...(entry.trusted_root === undefined ? {} : { trustedRoot: resolve(baseDir, entry.trusted_root) }),
    ...(entry.identities === undefined ? {} : {
      identities: entry.identities.map(({ issuer, subject, subject_regexp: pattern }) => ({ issuer, ...(subject === undefined ? {} : { subject }), ...(pattern === undefined ? {} : { subjectRegExp: pattern }) })),
    }),
    ...(entry.reference_aliases === undefined ? {} : { referenceAliases: { ...entry.reference_aliases } }),
    ...(entry.require_attestations === undefined ? {} : { requireAttestations: entry.require_attestations.map(({ predicate_type: type, builder_id: id }) => ({ predicateType: type, ...(id === undefined ? {} : { builderId: id }) })) }),
    ...(entry.skip === undefined ? {} : { skip: entry.skip }),
  };
}

/** The `distribution` section with absolute paths (the fetcher defaults the rest). */
export function resolveDistribution(section: DistributionSection, baseDir: string): DistributionOptions {
  const options: DistributionOptions = {};
  if (section.store_dir !== undefined) options.storeDir = resolve(baseDir, section.store_dir);
  if (section.insecure_registries !== undefined) options.insecureRegistries = [...section.insecure_registries];
  if (section.registries !== undefined) options.registries = [...section.registries];
  if (section.auth !== undefined) options.auth = Object.fromEntries(Object.entries(section.auth).map(([registry, entry]) => [registry, { username: entry.username, passwordEnv: entry.password_env }]));
  if (section.token_realms !== undefined) options.tokenRealms = Object.fromEntries(Object.entries(section.token_realms).map(([registry, hosts]) => [registry, [...hosts]]));
  if (section.verify !== undefined) options.verify = resolveVerify(section.verify, baseDir);
  if (section.max_manifest_bytes !== undefined) options.maxManifestBytes = section.max_manifest_bytes;
  if (section.max_component_bytes !== undefined) options.maxComponentBytes = section.max_component_bytes;
  if (section.max_signature_layers !== undefined) options.maxSignatureLayers = section.max_signature_layers;
  if (section.max_signature_bytes !== undefined) options.maxSignatureBytes = section.max_signature_bytes;
  if (section.credential_helper_timeout_ms !== undefined) options.credentialHelperTimeoutMs = section.credential_helper_timeout_ms;
  if (section.credential_helper_max_bytes !== undefined) options.credentialHelperMaxBytes = section.credential_helper_max_bytes;
  if (section.load_timeout_ms !== undefined) options.loadTimeoutMs = section.load_timeout_ms;
  return options;
}
