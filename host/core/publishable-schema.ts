/**
 * What of a tool's output schema clients are shown (`publishableSchema`): the schema without anything that
 * carries a regex, found by a walk that knows no keyword and no dialect (issue 36, M5).
 */
import type { JsonSchema } from './tool.js';

/** Keywords that carry a regex, stripped from a published schema wherever they sit (see `publishableSchema`). */
function carriesRegex(key: string, value: unknown): boolean {
  // Only a string is a regex: `properties: { pattern: {...} }` is a member called "pattern", and is kept.
  if (key === 'pattern') return typeof value === 'string';
  if (key === 'patternProperties') return typeof value === 'object' && value !== null;
  // A client that checks formats would compile the structured content's own string as a regex.
  return key === 'format' && value === 'regex';
}

/**
 * `schema` as clients may see it: without anything that carries a regex (`pattern`, `patternProperties`
 * with the `additionalProperties` beside it, so that what it matched stays allowed, and `format: "regex"`),
 * wherever it sits: a client checks a structured result with its own regex engine, which may backtrack.
 *
 * Safe by construction: the walk knows no keyword's meaning and no dialect; it visits every object and array
 * of the JSON (iteratively, each object once: shared objects and cycles cost their size), so a pattern under
 * `prefixItems`, `$defs`, `$dynamicRef` targets or a keyword invented tomorrow is stripped alike. It cannot
 * tell a schema from data, so a `pattern` string inside a `const`, `enum` or `default` object is stripped too
 * (the published schema is only what clients are shown; the host's own checks use the original). Linear in
 * the schema's size; copies only a schema that has something to strip.
 */
export function publishableSchema(schema: JsonSchema): JsonSchema {
  if (!someObject(schema, (node) => Object.keys(node).some((key) => carriesRegex(key, node[key])))) return schema;
  // structuredClone keeps shared objects shared (and cycles), so each object of the copy is visited once below.
  const copy = structuredClone(schema);
  someObject(copy, (node) => {
    for (const key of Object.keys(node)) {
      if (!carriesRegex(key, node[key])) continue;
      delete node[key];
      if (key === 'patternProperties') delete node.additionalProperties;
    }
    return false;
  });
  return copy;
}

/** Whether `test` holds for some object (arrays' elements and objects' values visited alike, each object once). */
function someObject(root: unknown, test: (node: Record<string, unknown>) => boolean): boolean {
  const seen = new Set<object>();
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
      continue;
    }
    const node = value as Record<string, unknown>;
    if (test(node)) return true;
    for (const key of Object.keys(node)) pending.push(node[key]);
  }
  return false;
}
