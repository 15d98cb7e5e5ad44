/**
 * Registry credentials: from the config (`distribution.auth`: a user name and
 * the environment variable holding the password, so no secret sits in the
 * file), else from docker's `config.json` (`$DOCKER_CONFIG/config.json`, else
 * `~/.docker/config.json`, its `auths` entries). Credential helpers
 * (`credsStore`, `credHelpers`) are not run. A credential is only ever sent to
 * the registry it is for (see oci-client.ts).
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** A user name and password for one registry. */
export interface Credential {
  username: string;
  password: string;
}

/** `distribution.auth` as resolved: by registry (`host[:port]`). */
export type ConfiguredAuth = Record<string, { username: string; passwordEnv: string }>;

/** The docker config file that would be read: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. */
export function dockerConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.DOCKER_CONFIG || join(homedir(), '.docker'), 'config.json');
}

function fromDockerConfig(registry: string, env: NodeJS.ProcessEnv): Credential | undefined {
  let auths: Record<string, { auth?: string; username?: string; password?: string }>;
  try {
    auths = (JSON.parse(readFileSync(dockerConfigPath(env), 'utf8')) as { auths?: typeof auths }).auths ?? {};
  } catch {
    return undefined;
  }
  // Docker keys entries by `host[:port]`, sometimes as a URL (`https://index.docker.io/v1/`).
  const entry = Object.entries(auths).find(([key]) => key === registry || key.replace(/^https?:\/\//, '').replace(/\/.*$/, '') === registry)?.[1];
  if (entry === undefined) return undefined;
  if (typeof entry.auth === 'string' && entry.auth !== '') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof entry.username === 'string' && typeof entry.password === 'string') return { username: entry.username, password: entry.password };
  return undefined;
}

/** The credential for `registry`: the config's (its password variable must be set), else docker's, else none. */
export function credentialFor(registry: string, configured: ConfiguredAuth = {}, env: NodeJS.ProcessEnv = process.env): Credential | undefined {
  const entry = configured[registry];
  if (entry !== undefined) {
    const password = env[entry.passwordEnv];
    return password === undefined ? undefined : { username: entry.username, password };
  }
  return fromDockerConfig(registry, env);
}
