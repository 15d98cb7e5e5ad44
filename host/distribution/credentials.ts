/**
 * Registry credentials: from the config (`distribution.auth`: a user name and
 * the environment variable holding the password, so no secret sits in the
 * file), else from docker's `config.json` (`$DOCKER_CONFIG/config.json`, else
 * `~/.docker/config.json`) as docker reads it: the registry's `credHelpers`
 * entry, else `credsStore`, runs that credential helper
 * (credential-helper.ts, under a time limit and an output cap); else its
 * `auths` entry. Docker Hub's names (docker.io, index.docker.io,
 * registry-1.docker.io) are docker's `https://index.docker.io/v1/`. A
 * credential is only ever sent to the registry it is for, and to the token
 * realms auth-scope.ts allows (see oci-client.ts).
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CredentialHelperError, DEFAULT_CREDENTIAL_HELPER_MAX_BYTES, DEFAULT_CREDENTIAL_HELPER_TIMEOUT_MS, runCredentialHelper, type Credential, type HelperLimits } from './credential-helper.js';
import { unavailable } from './errors.js';

export type { Credential } from './credential-helper.js';

/** `distribution.auth` as resolved: by registry (`host[:port]`). */
export type ConfiguredAuth = Record<string, { username: string; passwordEnv: string }>;

/** The docker config file that would be read: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. */
export function dockerConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.DOCKER_CONFIG || join(homedir(), '.docker'), 'config.json');
}

interface DockerConfig {
  auths?: Record<string, { auth?: string; username?: string; password?: string }>;
  credsStore?: string;
  credHelpers?: Record<string, string>;
}

/** Docker Hub's registry names, and the server name docker keeps its credential under. */
const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
const DOCKER_HUB_SERVER = 'https://index.docker.io/v1/';

/** The name docker keeps a registry's credential under (and gives its helpers). */
export const dockerServerFor = (registry: string): string => DOCKER_HUB.has(registry) ? DOCKER_HUB_SERVER : registry;

/** A config key (`host[:port]`, sometimes a URL such as `https://index.docker.io/v1/`) as `host[:port]`. */
const hostOf = (key: string): string => key.replace(/^https?:\/\//, '').replace(/\/.*$/, '');

function readDockerConfig(env: NodeJS.ProcessEnv): DockerConfig {
  try {
    return JSON.parse(readFileSync(dockerConfigPath(env), 'utf8')) as DockerConfig;
  } catch {
    return {};
  }
}

function fromAuths(server: string, auths: NonNullable<DockerConfig['auths']>): Credential | undefined {
  const entry = Object.entries(auths).find(([key]) => key === server || hostOf(key) === hostOf(server))?.[1];
  if (entry === undefined) return undefined;
  if (typeof entry.auth === 'string' && entry.auth !== '') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof entry.username === 'string' && typeof entry.password === 'string') return { username: entry.username, password: entry.password };
  return undefined;
}

/** Limits of credential helpers (`distribution.credential_helper_*`), defaulted. */
export interface CredentialLookup {
  helperTimeoutMs?: number | undefined;
  helperMaxBytes?: number | undefined;
  /** The load's signal: its abort stops the helper. */
  signal?: AbortSignal | undefined;
}

/**
 * The credential for `registry`: the config's (its password variable must be set), else docker's (a credential
 * helper's, else `auths`), else none. `what` names the source for errors.
 * @throws SOURCE_UNAVAILABLE (`details.reason: "credential-helper"`) when docker's helper cannot give one.
 */
export async function credentialFor(registry: string, configured: ConfiguredAuth = {}, env: NodeJS.ProcessEnv = process.env, lookup: CredentialLookup = {}, what = `oci://${registry}`): Promise<Credential | undefined> {
  const entry = configured[registry];
  if (entry !== undefined) {
    const password = env[entry.passwordEnv];
    return password === undefined ? undefined : { username: entry.username, password };
  }
  const config = readDockerConfig(env);
  const server = dockerServerFor(registry);
  const helperEntry = Object.entries(config.credHelpers ?? {}).find(([key]) => key === server || hostOf(key) === hostOf(server));
  const helper = helperEntry?.[1] ?? config.credsStore;
  if (typeof helper === 'string' && helper !== '') {
    const limits: HelperLimits = { timeoutMs: lookup.helperTimeoutMs ?? DEFAULT_CREDENTIAL_HELPER_TIMEOUT_MS, maxBytes: lookup.helperMaxBytes ?? DEFAULT_CREDENTIAL_HELPER_MAX_BYTES, signal: lookup.signal };
    try {
      return await runCredentialHelper(helper, helperEntry?.[0] ?? server, limits, env);
    } catch (error) {
      if (!(error instanceof CredentialHelperError)) throw error;
      throw unavailable(what, `no credential for ${registry}: ${error.message}`, { reason: 'credential-helper', ...(error.limitHit === undefined ? {} : { limitHit: error.limitHit }) });
    }
  }
  return fromAuths(server, config.auths ?? {});
}
