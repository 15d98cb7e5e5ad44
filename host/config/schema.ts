/**
 * The published JSON Schema of `toolhost.yaml` (`toolhost.schema.json` at the
 * package root, JSON Schema draft-07), read and compiled once per process.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { packageRoot } from './package-root.js';
import type { ConfigFile } from './types.js';

/** The schema's file name, at the package root. */
export const CONFIG_SCHEMA_FILE = 'toolhost.schema.json';

let schema: Record<string, unknown> | undefined;
let validator: ValidateFunction<ConfigFile> | undefined;

/** The absolute path of the published schema. */
export function configSchemaPath(): string {
  return join(packageRoot(), CONFIG_SCHEMA_FILE);
}

/** The published schema, parsed (read once). */
export function configSchema(): Record<string, unknown> {
  schema ??= JSON.parse(readFileSync(configSchemaPath(), 'utf8')) as Record<string, unknown>;
  return schema;
}

/**
 * The schema compiled with ajv (once): every error is collected (`allErrors`)
 * and carries the failing schema and data (`verbose`), which the error
 * messages use. The schema is the package's own file, checked against the
 * draft-07 meta-schema by test/config-schema.test.ts, not on every start
 * (compiling the meta-schema costs ~30 ms of CPU a process).
 */
export function configValidator(): ValidateFunction<ConfigFile> {
  if (!validator) {
    // (Unoptimized code: it validates one file a process, and ajv's optimizing pass costs more than it saves.)
    const ajv = new Ajv({ allErrors: true, verbose: true, allowUnionTypes: true, strict: true, strictRequired: false, validateSchema: false, code: { optimize: false } });
    validator = ajv.compile<ConfigFile>(configSchema());
  }
  return validator;
}
