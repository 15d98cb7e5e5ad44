/** A configuration ready to use: what `loadConfig` and `embeddedConfig` return. */
import type { ResolvedConfig } from './resolve.js';
import type { ConfigFile } from './types.js';

export interface LoadedConfig {
  /** The config file (absolute), or undefined when the embedded defaults were used. */
  file?: string;
  /** The file's data as validated (snake_case, as written); `{}` for the embedded defaults. */
  config: ConfigFile;
  /** The configuration in the host's terms. */
  resolved: ResolvedConfig;
  /**
   * Things that work but probably not as meant (a grant that needs approval
   * when approval is `never`, an unbuilt example directory), formatted like
   * errors: `<file>:<line>:<column>: <path> <message>`. Print them to stderr.
   */
  warnings: string[];
}
