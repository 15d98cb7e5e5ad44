/**
 * The embedded defaults, used when there is no config file: the example tools
 * in `guest-tools/dist`, each with the grant and default policy of
 * `host/config/examples.ts`; MCP over HTTP on 127.0.0.1:3000 and gRPC on
 * 127.0.0.1:50063; every other setting the host's default (DENY_ALL, MINIMAL,
 * no approvals, the audit log on stderr).
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { EXAMPLE_LOAD_OPTIONS } from './examples.js';
import { examplesDir } from './package-root.js';
import type { LoadedConfig } from './loaded-config.js';
import { resolveConfig, type ToolLoad } from './resolve.js';

export interface EmbeddedConfigOptions {
  /** Where `TOOLHOST_LOG` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The directory of the example components (default: the package's built `guest-tools/dist`). */
  examplesDir?: string;
}

/**
 * The configuration used when no config file exists. When the example tools
 * are not built, it loads no component and says so in `warnings`.
 */
export function embeddedConfig(options: EmbeddedConfigOptions = {}): LoadedConfig {
  const resolved = resolveConfig({}, { baseDir: process.cwd(), env: options.env ?? process.env });
  const warnings: string[] = [];
  const dir = options.examplesDir ?? examplesDir();
  resolved.tools = dir === undefined ? [] : exampleLoads(dir);
  if (resolved.tools.length === 0) {
    warnings.push(`embedded defaults: the example tools are not built (${dir ?? 'guest-tools/dist'} has no .wasm file): run \`npm run build:guests\`, or write a toolhost.yaml`);
  }
  return { config: {}, resolved, warnings };
}

/** One load per example component in `dir` (sorted), each with its embedded grant. */
export function exampleLoads(dir: string): ToolLoad[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.wasm'))
    .sort()
    .map((name) => ({ path: join(dir, name), options: structuredClone(EXAMPLE_LOAD_OPTIONS[basename(name, '.wasm')] ?? {}) }));
}
