/**
 * OpenAI strict mode (Structured Outputs for function calling) for a tool's input schema: the schema rewritten
 * into the subset strict mode accepts, or why it cannot be.
 *
 * Strict mode wants every object closed (`additionalProperties: false`) with every property `required`, and
 * accepts only part of JSON Schema. The rewrite keeps what the model must produce the same or narrower than the
 * tool's own schema, because the host still validates every call against the tool's real schema:
 *  - an object with declared properties is closed (a strict model never sends extra keys);
 *  - a property may stay optional only if its schema already accepts `null` (strict mode makes the model send
 *    every property, null for "absent"; the tool's schema would refuse a null it does not allow);
 *  - assertion-only keywords strict mode rejects (`minLength`, `maxLength`, `uniqueItems`, …) and annotations
 *    (`default`, `examples`, `$schema`) are dropped (the host still checks the assertions); `oneOf` becomes `anyOf`.
 * Cannot be strict (the reason names the path): a free-form object (no properties, or `additionalProperties`
 * true or a schema: a map), an array without `items`, a boolean schema, or a structural keyword strict mode
 * lacks (`allOf`, `not`, `if`, `patternProperties`, `prefixItems`, `dependentSchemas`, …).
 * Not guaranteed: that OpenAI accepts every remaining keyword in every model (its list changes); the result
 * follows the documented subset.
 */
import type { JsonSchema } from './tool.js';

export type StrictSchemaResult = { strict: true; schema: { type: 'object'; [keyword: string]: unknown } } | { strict: false; reason: string };

const DROPPED = new Set(['minLength', 'maxLength', 'uniqueItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains', 'default', 'examples', '$schema', '$comment', 'readOnly', 'writeOnly', 'deprecated', 'contentEncoding', 'contentMediaType']);
const REFUSED = new Set(['allOf', 'not', 'if', 'then', 'else', 'patternProperties', 'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'prefixItems', 'contains', 'additionalItems', '$dynamicRef', '$recursiveRef']);

class NotStrict extends Error {}

function allowsNull(schema: unknown): boolean {
  if (schema === true) return true;
  if (typeof schema !== 'object' || schema === null) return false;
  const record = schema as Record<string, unknown>;
  if (record.type === 'null' || (Array.isArray(record.type) && record.type.includes('null'))) return true;
  if (Array.isArray(record.enum) && record.enum.includes(null)) return true;
  if (record.const === null) return true;
  return Array.isArray(record.anyOf) && record.anyOf.some(allowsNull);
}

function rewrite(schema: unknown, path: string, depth: number): Record<string, unknown> {
  if (depth > 64) throw new NotStrict(`${path}: nested too deeply`);
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new NotStrict(`${path}: a boolean schema (any value) has no strict form`);
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(source)) {
    if (REFUSED.has(keyword)) throw new NotStrict(`${path}: strict mode has no \`${keyword}\``);
    if (DROPPED.has(keyword)) continue;
    out[keyword] = value;
  }
  if (Array.isArray(out.oneOf)) {
    out.anyOf = out.oneOf;
    delete out.oneOf;
  }
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as unknown[]).map((branch, i) => rewrite(branch, `${path}/anyOf/${i}`, depth + 1));
  for (const defs of ['$defs', 'definitions']) {
    const group = out[defs];
    if (typeof group === 'object' && group !== null) {
      out[defs] = Object.fromEntries(Object.entries(group).map(([name, inner]) => [name, rewrite(inner, `${path}/${defs}/${name}`, depth + 1)]));
    }
  }
  const types = Array.isArray(source.type) ? source.type : [source.type];
  const isObject = types.includes('object') || (source.type === undefined && (source.properties !== undefined || source.additionalProperties !== undefined));
  if (isObject) {
    const properties = (typeof source.properties === 'object' && source.properties !== null ? source.properties : {}) as Record<string, unknown>;
    const names = Object.keys(properties);
    if (source.additionalProperties !== undefined && source.additionalProperties !== false) {
      throw new NotStrict(`${path}: takes keys it does not declare (additionalProperties), which strict mode cannot express`);
    }
    if (names.length === 0 && source.$ref === undefined) throw new NotStrict(`${path}: a free-form object (no declared properties)`);
    const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
    const optional = names.filter((name) => !required.has(name) && !allowsNull(properties[name]));
    if (optional.length > 0) {
      throw new NotStrict(`${path}: optional ${optional.map((name) => JSON.stringify(name)).join(', ')} (strict mode sends every property, null when absent, and the schema refuses null there)`);
    }
    out.properties = Object.fromEntries(names.map((name) => [name, rewrite(properties[name], `${path}/properties/${name}`, depth + 1)]));
    out.required = names;
    out.additionalProperties = false;
  }
  if (types.includes('array')) {
    if (source.items === undefined || typeof source.items === 'boolean') throw new NotStrict(`${path}: an array of any values (no items schema)`);
    out.items = rewrite(source.items, `${path}/items`, depth + 1);
  }
  return out;
}

/** The strict-mode form of an object input schema, or why it has none. */
export function toStrictSchema(schema: JsonSchema): StrictSchemaResult {
  try {
    const rewritten = rewrite(schema, '#', 0);
    if (rewritten.type !== 'object') return { strict: false, reason: '#: the input is not an object' };
    return { strict: true, schema: rewritten as { type: 'object'; [keyword: string]: unknown } };
  } catch (error) {
    if (error instanceof NotStrict) return { strict: false, reason: error.message };
    throw error;
  }
}
