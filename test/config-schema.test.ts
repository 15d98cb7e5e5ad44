/**
 * The published schema, toolhost.schema.json: a draft-07 schema that ajv
 * compiles in strict mode, closed everywhere (no key it does not describe)
 * and documented everywhere (editors show the descriptions).
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { configSchema, configSchemaPath, configValidator } from '../host/config/index.js';
import { join } from 'node:path';
import { root } from './helpers.js';

type Schema = { [keyword: string]: unknown };

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every subschema with its JSON-pointer-ish location. */
function* walk(schema: Schema, at: string): Generator<[string, Schema]> {
  yield [at, schema];
  for (const keyword of ['properties', 'definitions'] as const) {
    const children = schema[keyword];
    if (isSchema(children)) {
      for (const [name, child] of Object.entries(children)) if (isSchema(child)) yield* walk(child, `${at}/${keyword}/${name}`);
    }
  }
  for (const keyword of ['items', 'additionalProperties', 'propertyNames', 'if', 'then', 'else'] as const) {
    const child = schema[keyword];
    if (isSchema(child)) yield* walk(child, `${at}/${keyword}`);
  }
}

function target(schema: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  const definitions = configSchema().definitions as Record<string, Schema>;
  const found = definitions[ref.replace('#/definitions/', '')];
  if (!found) throw new Error(`dangling $ref ${ref}`);
  return found;
}

describe('toolhost.schema.json', () => {
  it('is the draft-07 schema at the package root, valid against the meta-schema, and compiles in ajv\'s strict mode', () => {
    expect(configSchemaPath()).toBe(join(root, 'toolhost.schema.json'));
    expect(configSchema().$schema).toBe('http://json-schema.org/draft-07/schema#');
    // Checked here, not at every start (configValidator does not check it against the meta-schema).
    const meta = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    expect(meta.validateSchema(configSchema()), meta.errorsText(meta.errors)).toBe(true);
    expect(() => configValidator()).not.toThrow();
  });

  it('closes every mapping with a fixed set of keys (additionalProperties: false)', () => {
    const open: string[] = [];
    for (const [at, schema] of walk(configSchema(), '#')) {
      if (isSchema(schema.properties) && schema.additionalProperties !== false) open.push(at);
    }
    expect(open).toEqual([]);
  });

  it('describes every property and every definition', () => {
    const undocumented: string[] = [];
    for (const [at, schema] of walk(configSchema(), '#')) {
      if (!/\/(properties|definitions)\/[^/]+$/.test(at)) continue;
      if (typeof schema.description !== 'string' && typeof target(schema).description !== 'string') undocumented.push(at);
    }
    expect(undocumented).toEqual([]);
  });

  it('accepts every key the resolver reads (a file using them all validates)', () => {
    const validate = configValidator();
    const everything = {
      host: {
        log_level: 'info',
        defaults: { wall_ms: 1, cpu_ms: 1, memory_mb: 1, network_policy: 'DENY_ALL', privilege_level: 'MINIMAL' },
        ceilings: { wall_ms: 1, cpu_ms: 1, memory_mb: 1, max_retries: 0 },
        cancel_grace_ms: 0,
        retry: { base_ms: 0, cap_ms: 0 },
        pool: { threads: 1, max_queue: 0, max_heap_mb: 16, cache_dir: 'c', idle_timeout_ms: 0, wait_behind: { average_ms: 0, within_ms: 0 }, spin_us: 0, containment: 'thread' },
        output_limits: { stdio_bytes: 0, max_events: 1, max_event_bytes: 1, max_result_bytes: 1 },
        approval: 'always',
        audit_log: 'audit.log',
      },
      tools: [{
        path: 'x.wasm',
        isolation: 'worker',
        grant: { network: 'x', egress_allow: ['a'], privilege: 'y', env_allow: ['A'], env: { A: 'b' }, memory_mb: 1, worktree: '.' },
        default_policy: {
          timeout: { seconds: 1, nanos: 5 }, max_retries: 0, backoff: 'exponential', worktree_required: false,
          network_policy: 'x', privilege_level: 'y', budget_cpu_ms: 0, budget_wall_ms: 0, memory_mb: 0,
        },
      }],
      http_tools: [{ name: 'n', description: 'd', url: 'https://a', method: 'GET', headers: { A: 'b' }, timeout_ms: 1, input_schema: {}, grant: {}, default_policy: {} }],
      mcp_servers: [
        { name: 's', command: 'c', args: ['a'], env: { A: 'b' }, cwd: '.', timeout_ms: 1, grant: {}, default_policy: {} },
        { name: 'h', url: 'http://a', headers: { A: 'b' }, bearer_token_env: 'T', timeout_ms: 1, grant: {}, default_policy: {} },
      ],
      servers: {
        mcp: { http: { enabled: true, host: 'h', port: 1, allowed_hosts: ['h'], bearer_token_env: 'T' } },
        grpc: { enabled: false, host: 'h', port: 2 },
      },
      admin_tools: true,
    };
    expect(validate(everything), JSON.stringify(validate.errors)).toBe(true);
  });
});
