/**
 * ajv's errors, turned into problems a person can act on: each at the line
 * and column of the YAML node it is about, saying what was expected.
 *
 * - a missing required key points at the mapping that lacks it;
 * - an unknown key points at the key and names it, with the keys allowed there;
 * - an enum lists the allowed values; a pattern says what form was expected
 *   (the `title` of the schema that holds it);
 * - summaries of combinators (`if`, and `propertyNames` around its inner
 *   error) are dropped in favour of the errors they summarise.
 *
 * Problems are sorted by position, so the first is the first in the file.
 */
import type { ErrorObject } from 'ajv';
import type { ConfigProblem } from './errors.js';
import { configSchema } from './schema.js';
import type { ConfigSource } from './source.js';

/** Errors that only summarise others. */
const SUMMARIES = new Set(['if', 'then', 'else', 'anyOf', 'oneOf', 'propertyNames']);

/** At one position, which error says most. */
const KEYWORD_RANK: Record<string, number> = { additionalProperties: 0, required: 1, type: 2, enum: 3 };

/** Extra words for a few problems whose bare form is puzzling, by `<definition>:<keyword>:<property>`. */
const HINTS: Record<string, string> = {
  'mcp_stdio_server:required:command': '; an MCP server needs "command" (started over stdio) or "url" (Streamable HTTP)',
  'mcp_http_server:additionalProperties:command': '; an MCP server has either "url" (Streamable HTTP) or "command" (stdio), not both',
  'mcp_http_server:additionalProperties:args': '; "args" belongs to a stdio server (with "command"), not to one with "url"',
  'mcp_http_server:additionalProperties:env': '; "env" belongs to a stdio server (with "command"), not to one with "url"',
  'mcp_http_server:additionalProperties:cwd': '; "cwd" belongs to a stdio server (with "command"), not to one with "url"',
  'mcp_stdio_server:additionalProperties:headers': '; "headers" belongs to a server with "url", not to one with "command"',
  'mcp_stdio_server:additionalProperties:bearer_token_env': '; "bearer_token_env" belongs to a server with "url", not to one with "command"',
};

type SchemaObject = { [keyword: string]: unknown };

/**
 * Turn ajv's errors (from a validator compiled with `allErrors` and `verbose`)
 * into problems, sorted by position, the most telling first at each position.
 */
export function schemaProblems(errors: readonly ErrorObject[], source: ConfigSource): ConfigProblem[] {
  const specific = errors.filter((error) => !SUMMARIES.has(error.keyword));
  const chosen = specific.length > 0 ? specific : errors;
  const ranked = chosen.map((error) => ({ problem: toProblem(error, source), rank: KEYWORD_RANK[error.keyword] ?? 9 }));
  ranked.sort((a, b) => a.problem.line - b.problem.line || a.problem.column - b.problem.column || a.rank - b.rank);
  const seen = new Set<string>();
  const problems: ConfigProblem[] = [];
  for (const { problem } of ranked) {
    const key = `${problem.line}:${problem.column}:${problem.path}:${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}

function toProblem(error: ErrorObject, source: ConfigSource): ConfigProblem {
  const path = pointerSegments(error.instancePath, source.data);
  const parent = isObject(error.parentSchema) ? error.parentSchema : {};
  const params = error.params as Record<string, unknown>;
  const title = typeof parent.title === 'string' ? parent.title : undefined;
  const got = ` (got ${describeValue(error.data)})`;
  switch (error.keyword) {
    case 'required': {
      const missing = String(params.missingProperty);
      return source.problem(path, `is missing the required key "${missing}"${hint(parent, 'required', missing)}`);
    }
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const allowed = isObject(parent.properties) ? Object.keys(parent.properties) : [];
      const expected = allowed.length > 0 ? ` (expected one of: ${allowed.join(', ')})` : '';
      return source.problem([...path, key], `is an unknown key${expected}${hint(parent, 'additionalProperties', key)}`, 'key');
    }
    case 'enum': {
      const allowed = Array.isArray(params.allowedValues) ? params.allowedValues.map(String) : [];
      return source.problem(path, `must be one of ${allowed.join(', ')}${got}`);
    }
    case 'type':
      if (path.length === 0) return source.problem(path, `the file must hold a mapping of sections (host, tools, ...)${got}`);
      return source.problem(path, `must be ${title ?? typeWords(params.type)}${got}`);
    case 'pattern': {
      // Inside `propertyNames`, the error is about a key (ajv names it in `propertyName`).
      const propertyName = (error as ErrorObject & { propertyName?: string }).propertyName;
      if (propertyName !== undefined) {
        return source.problem([...path, propertyName], `is not a valid key: a key here must be ${title ?? `a string matching ${String(params.pattern)}`}`, 'key');
      }
      return source.problem(path, `must be ${title ?? `a string matching ${String(params.pattern)}`}${got}`);
    }
    case 'minimum':
    case 'exclusiveMinimum':
      return source.problem(path, `must be ${error.keyword === 'minimum' ? 'at least' : 'more than'} ${String(params.limit)}${got}`);
    case 'maximum':
    case 'exclusiveMaximum':
      return source.problem(path, `must be ${error.keyword === 'maximum' ? 'at most' : 'less than'} ${String(params.limit)}${got}`);
    case 'minLength':
      return source.problem(path, params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters long`);
    case 'propertyNames':
      return source.problem([...path, String(params.propertyName)], 'is not a valid key', 'key');
    default:
      return source.problem(path, error.message ?? 'is invalid');
  }
}

/** Decode a JSON pointer into path segments (list indexes as numbers, checked against the data). */
function pointerSegments(pointer: string, data: unknown): Array<string | number> {
  if (pointer === '') return [];
  const segments: Array<string | number> = [];
  let node = data;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node) && /^\d+$/.test(key)) {
      segments.push(Number(key));
      node = node[Number(key)];
    } else {
      segments.push(key);
      node = isObject(node) ? node[key] : undefined;
    }
  }
  return segments;
}

function hint(parent: SchemaObject, keyword: string, property: string): string {
  const definitions = configSchema().definitions;
  if (!isObject(definitions)) return '';
  const name = Object.keys(definitions).find((key) => definitions[key] === parent);
  return name === undefined ? '' : HINTS[`${name}:${keyword}:${property}`] ?? '';
}

const TYPE_WORDS: Record<string, string> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  null: 'empty',
};

function typeWords(type: unknown): string {
  const types = (Array.isArray(type) ? type : String(type).split(',')).map(String);
  return types.map((name) => TYPE_WORDS[name] ?? name).join(' or ');
}

/** A short description of a value, for `(got …)`. */
function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  return String(value);
}

function isObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
