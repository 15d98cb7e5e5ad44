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
import { resolveConfig } from './resolve.js';
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

  return parseAndResolve(text, { file, onDisk: true, display, baseDir: dirname(file), env });
}

/** Where a config's text came from, and what its relative paths start from. */
interface ConfigText {
  /** The file's absolute path, or the name of a config given as an object. */
  file: string;
  /** Whether `file` is a file on disk (a config object has none). */
  onDisk: boolean;
  display: string;
  baseDir: string;
  env: NodeJS.ProcessEnv;
}

/** The stages every config goes through, from its text: parse → schema → semantic checks → resolve. */
async function parseAndResolve(text: string, where: ConfigText): Promise<LoadedConfig> {
  const { file, onDisk, display, baseDir, env } = where;
  // The YAML parser loads only when there is a file to parse (~50 ms a process on the embedded defaults).
  const { ConfigSource } = await import('./source.js');
  const source = ConfigSource.parse(text, file, display);
  const data = source.data;
  const validate = configValidator();
  if (!validate(data)) throw ConfigError.fromProblems(file, display, schemaProblems(validate.errors ?? [], source));

  const { errors, warnings } = checkConfig(data, source, baseDir, onDisk ? file : undefined);
  if (errors.length > 0) throw ConfigError.fromProblems(file, display, byPosition(errors));

  const resolved = resolveConfig(data, { baseDir, ...(onDisk ? { file } : {}), env, originOf: (at) => ({ file, ...source.locate(at) }) });
  return { ...(onDisk ? { file } : {}), config: data, resolved, warnings: byPosition(warnings).map((warning) => formatProblem(display, warning)) };
}

/** How a config object is named in messages (it has no file). */
export const CONFIG_OBJECT_NAME = '<config object>';

/**
 * Check and resolve a config given as an object of `toolhost.yaml`'s shape
 * (what an embedder builds in code), through the same stages as a file:
 * the same schema, checks and errors. Its relative paths start at
 * `options.cwd`. Problems are located in the object's JSON form (two-space
 * indentation), under the name `<config object>`.
 *
 * @throws ConfigError (INVALID_INPUT), as {@link loadConfig} does.
 */
export async function configFromObject(config: ConfigFile, options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  let text: string;
  try {
    // JSON is YAML: the object goes through the file's parser, so positions and messages work the same.
    text = JSON.stringify(config, null, 2) ?? 'null';
  } catch (error) {
    throw new ConfigError({ file: CONFIG_OBJECT_NAME }, `${CONFIG_OBJECT_NAME}: cannot be read as JSON (${(error as Error).message})`);
  }
  return parseAndResolve(text, { file: CONFIG_OBJECT_NAME, onDisk: false, display: CONFIG_OBJECT_NAME, baseDir: resolve(options.cwd ?? process.cwd()), env: options.env ?? process.env });
}

/** A file as messages show it: relative to `cwd` when it is below it, else absolute. */
function displayPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

function byPosition(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column);
}
