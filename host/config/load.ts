/**
 * Loading `toolhost.yaml`: read → parse YAML (keeping positions) → validate
 * against the published schema → semantic checks → resolve into the host's
 * values. Every problem is a {@link ConfigError} whose message starts with
 * `<file>:<line>:<column>:`. Without a file, the embedded defaults are used.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { checkConfig } from './checks.js';
import { embeddedConfig } from './defaults.js';
import type { LoadedConfig } from './loaded-config.js';
import { ConfigError, formatProblem, type ConfigProblem } from './errors.js';
import { resolveConfig, type ResolvedConfig } from './resolve.js';
import { configValidator } from './schema.js';
import { schemaProblems } from './schema-errors.js';
import type { ConfigFile } from './types.js';

export type { LoadedConfig };

export interface LoadConfigOptions {
  /** Where `TOOLHOST_LOG` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** What a relative `path` is resolved against, and messages show file names relative to (default `process.cwd()`). */
  cwd?: string;
}

/**
 * Load a config file, or the embedded defaults when `path` is undefined (see
 * {@link findConfig} for choosing the path).
 *
 * @param path the config file (relative to `options.cwd`)
 * @throws ConfigError (INVALID_INPUT) for an unreadable file, a YAML syntax
 *   error, a schema violation or a failed semantic check; the message starts
 *   with `<file>:<line>:<column>:` and `details.problems` lists every problem
 *   found at that stage.
 */
export async function loadConfig(path?: string, options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  if (path === undefined) return embeddedConfig({ env });
  const cwd = options.cwd ?? process.cwd();
  const file = resolve(cwd, path);
  const display = displayPath(file, cwd);

  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError({ file }, `${display}: cannot read the config file (${reason})`);
  }

  // The YAML parser loads only when there is a file to parse (~50 ms a process on the embedded defaults).
  const { ConfigSource } = await import('./source.js');
  const source = ConfigSource.parse(text, file, display);
  const data = source.data;
  const validate = configValidator();
  if (!validate(data)) throw ConfigError.fromProblems(file, display, schemaProblems(validate.errors ?? [], source));

  const baseDir = dirname(file);
  const { errors, warnings } = checkConfig(data, source, baseDir);
  if (errors.length > 0) throw ConfigError.fromProblems(file, display, byPosition(errors));

  const resolved = resolveConfig(data, { baseDir, file, env, originOf: (at) => ({ file, ...source.locate(at) }) });
  return { file, config: data, resolved, warnings: byPosition(warnings).map((warning) => formatProblem(display, warning)) };
}

/** A file as messages show it: relative to `cwd` when it is below it, else absolute. */
function displayPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

function byPosition(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column);
}
