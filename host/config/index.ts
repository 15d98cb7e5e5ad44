/**
 * The config file, `toolhost.yaml`: find it, load and check it, resolve it
 * into the host's values.
 *
 * ```ts
 * const loaded = await loadConfig(findConfig(process.cwd(), options.config));
 * for (const warning of loaded.warnings) process.stderr.write(`${warning}\n`);
 * const host = await createHost(loaded); // host/compose: registry, components, HTTP tools, MCP imports
 * ```
 */
export { checkConfig } from './checks.js';
export type { CheckResult } from './checks.js';
export { embeddedConfig, exampleLoads } from './defaults.js';
export type { EmbeddedConfigOptions } from './defaults.js';
export { ConfigError, formatProblem } from './errors.js';
export type { ConfigErrorDetails, ConfigProblem } from './errors.js';
export { CONFIG_FILE_NAME, findConfig } from './find.js';
export { loadConfig } from './load.js';
export type { LoadConfigOptions, LoadedConfig } from './load.js';
export {
  DEFAULT_GRPC,
  DEFAULT_LOG_LEVEL,
  DEFAULT_MCP_HTTP,
  resolveConfig,
  resolveGrant,
  resolvePolicyDefaults,
  resolveRetry,
} from './resolve.js';
export type {
  ConfigOrigin,
  HttpToolSpec,
  McpHttpServerSpec,
  McpServerSpec,
  McpStdioServerSpec,
  ResolveContext,
  ResolvedConfig,
  ServerSettings,
  ToolLoad,
} from './resolve.js';
export { CONFIG_SCHEMA_FILE, configSchema, configSchemaPath, configValidator } from './schema.js';
export { schemaProblems } from './schema-errors.js';
export { ConfigSource, formatPath } from './source.js';
export type { Anchor, ConfigPath } from './source.js';
export type * from './types.js';
