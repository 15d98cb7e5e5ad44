/** Which config file to use. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The config file looked for in the working directory. */
export const CONFIG_FILE_NAME = 'toolhost.yaml';

/**
 * The config file to load: `--config PATH` wins (whether or not it exists:
 * loading a missing one is an error); else `./toolhost.yaml` when present;
 * else undefined, which {@link loadConfig} takes as "the embedded defaults".
 *
 * @param cwd the working directory
 * @param configOption the `--config` option, if given
 * @returns an absolute path, or undefined
 */
export function findConfig(cwd: string, configOption?: string): string | undefined {
  if (configOption !== undefined) return resolve(cwd, configOption);
  const candidate = join(resolve(cwd), CONFIG_FILE_NAME);
  return existsSync(candidate) ? candidate : undefined;
}
