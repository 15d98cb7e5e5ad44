/**
 * The schema a tool may ask its caller to fill in (MCP elicitation, form mode): MCP's restricted subset, a flat
 * object whose properties are primitive schemas (string, number, integer, boolean, a string enum, titled options
 * as `oneOf`/`anyOf` of `const`s, a multi-select array of those).
 *
 * Why it is enforced, and here: a guest writes this schema, and the MCP SDK checks the client's answer against it
 * with ajv on the main thread. Inside the subset (no `pattern`, no `$ref`, no combinators but lists of consts, at
 * most four levels) compiling and checking it is linear in its size, and `client_request_bytes` caps that size
 * before anything is parsed. The worker checks it before the request leaves (under the call's budgets); the
 * client gate checks it again on the main thread, which is linear in the same capped size.
 *
 * Guarantees: an accepted schema holds only the keywords below, with values of the types below.
 * Does not: check that a default fits its property (the client does), or bound the size (the byte cap does).
 */

type Json = unknown;

const TOP_KEYS = new Set(['$schema', 'type', 'properties', 'required', 'title', 'description']);
const PROPERTY_KEYS = new Set(['type', 'title', 'description', 'minLength', 'maxLength', 'format', 'minimum', 'maximum', 'default', 'enum', 'enumNames', 'oneOf', 'anyOf', 'items', 'minItems', 'maxItems']);
const ITEMS_KEYS = new Set(['type', 'enum', 'oneOf', 'anyOf']);
const OPTION_KEYS = new Set(['const', 'title']);
const PROPERTY_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array']);
const FORMATS = new Set(['email', 'uri', 'date', 'date-time']);
const NUMERIC_KEYS = ['minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems'] as const;

function isRecord(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isPrimitive = (value: Json): boolean => typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

function unknownKey(record: Record<string, Json>, allowed: ReadonlySet<string>): string | undefined {
  return Object.keys(record).find((key) => !allowed.has(key));
}

/** Titled options: `[{ const, title? }, …]`. */
function optionsProblem(options: Json, at: string): string | undefined {
  if (!Array.isArray(options) || options.length === 0) return `${at} must be a non-empty list of { const, title }`;
  for (const option of options) {
    if (!isRecord(option) || !isPrimitive(option.const)) return `${at} must list objects with a string, number or boolean const`;
    const extra = unknownKey(option, OPTION_KEYS);
    if (extra !== undefined) return `${at} may only hold const and title, not "${extra}"`;
    if (option.title !== undefined && typeof option.title !== 'string') return `${at}'s titles must be strings`;
  }
  return undefined;
}

function enumProblem(values: Json, at: string): string | undefined {
  return Array.isArray(values) && values.length > 0 && values.every(isPrimitive) ? undefined : `${at} must be a non-empty list of strings, numbers or booleans`;
}

function itemsProblem(items: Json, at: string): string | undefined {
  if (!isRecord(items)) return `${at} must be an object`;
  const extra = unknownKey(items, ITEMS_KEYS);
  if (extra !== undefined) return `${at} may not use "${extra}" (a multi-select lists string options: type, enum, oneOf or anyOf)`;
  if (items.type !== undefined && items.type !== 'string') return `${at}.type must be "string"`;
  if (items.enum !== undefined) return enumProblem(items.enum, `${at}.enum`);
  if (items.oneOf !== undefined) return optionsProblem(items.oneOf, `${at}.oneOf`);
  if (items.anyOf !== undefined) return optionsProblem(items.anyOf, `${at}.anyOf`);
  return `${at} must list its options (enum, oneOf or anyOf)`;
}

function propertyProblem(property: Json, at: string): string | undefined {
  if (!isRecord(property)) return `${at} must be an object`;
  const extra = unknownKey(property, PROPERTY_KEYS);
  if (extra !== undefined) return `${at} may not use "${extra}" (elicitation takes MCP's primitive schemas only)`;
  if (typeof property.type !== 'string' || !PROPERTY_TYPES.has(property.type)) return `${at}.type must be one of ${[...PROPERTY_TYPES].join(', ')}`;
  for (const key of ['title', 'description'] as const) {
    if (property[key] !== undefined && typeof property[key] !== 'string') return `${at}.${key} must be a string`;
  }
  for (const key of NUMERIC_KEYS) {
    if (property[key] !== undefined && typeof property[key] !== 'number') return `${at}.${key} must be a number`;
  }
  if (property.format !== undefined && (typeof property.format !== 'string' || !FORMATS.has(property.format))) return `${at}.format must be one of ${[...FORMATS].join(', ')}`;
  const fallback = property.default;
  if (fallback !== undefined && !isPrimitive(fallback) && !(Array.isArray(fallback) && fallback.every(isPrimitive))) return `${at}.default must be a primitive or a list of them`;
  if (property.enum !== undefined) {
    const problem = enumProblem(property.enum, `${at}.enum`);
    if (problem !== undefined) return problem;
  }
  if (property.enumNames !== undefined && !(Array.isArray(property.enumNames) && property.enumNames.every((name) => typeof name === 'string'))) return `${at}.enumNames must be a list of strings`;
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (property[key] !== undefined) {
      const problem = optionsProblem(property[key], `${at}.${key}`);
      if (problem !== undefined) return problem;
    }
  }
  if (property.type === 'array') return itemsProblem(property.items, `${at}.items`);
  return property.items === undefined ? undefined : `${at}.items is only for type "array"`;
}

/**
 * Why `schema` is not an elicitation schema MCP defines (undefined when it is). Linear in the schema's size: each
 * value is visited at most once, at a depth of at most four.
 */
export function elicitationSchemaProblem(schema: Json): string | undefined {
  if (!isRecord(schema)) return 'requested-schema must be a JSON object';
  const extra = unknownKey(schema, TOP_KEYS);
  if (extra !== undefined) return `requested-schema may not use "${extra}" at its top (a flat object: type, properties, required, title, description)`;
  if (schema.type !== 'object') return 'requested-schema must have type "object"';
  if (schema.$schema !== undefined && typeof schema.$schema !== 'string') return 'requested-schema.$schema must be a string';
  for (const key of ['title', 'description'] as const) {
    if (schema[key] !== undefined && typeof schema[key] !== 'string') return `requested-schema.${key} must be a string`;
  }
  if (!isRecord(schema.properties)) return 'requested-schema must have properties (an object)';
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((name) => typeof name === 'string'))) return 'requested-schema.required must be a list of property names';
  for (const [name, property] of Object.entries(schema.properties)) {
    const problem = propertyProblem(property, `requested-schema.properties[${JSON.stringify(name.slice(0, 64))}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}
