/**
 * Input validation: a tool's schema is checked for cost (`schema-cost.ts`,
 * `schema-limits.ts`: COMPONENT_INVALID past a limit) and compiled once; a
 * schema that does not compile is INVALID_INPUT.
 *
 * Where it runs (docs/architecture.md, "Guest input"): a guest's schemas are
 * compiled and its args validated by this module in the sandbox worker that
 * runs the call (`sandbox/worker/args-check.ts`, under the call's budgets),
 * checked at load in the worker that runs `describe()`, and an imported MCP
 * server's in the schema lane (`schema-lane.ts`, a worker with a deadline).
 * Only host-authored schemas (native tools written in TypeScript, config HTTP
 * tools, the surface tool) are compiled and checked on the main thread, where
 * the cost rules below bound them. Guarantees of those rules:
 * - `pattern` (and `patternProperties`, `propertyNames` patterns) run on
 *   RE2JS, a linear-time engine without backtracking, instead of RegExp (a
 *   catastrophic pattern on 27 characters stalled the host 7 s). A pattern RE2
 *   cannot run in linear time (lookaround, backreferences) fails registration
 *   with INVALID_INPUT;
 * - `uniqueItems` is a linear hashed check (ajv's compares every pair of
 *   non-scalar items: 20,000 objects took 6.6 s);
 * - `$ref`s are compiled once each, not inlined where used;
 * - before validation, args are walked once, iteratively: deeper than
 *   `argsDepth` levels, or more work than `validationSteps` (each value plus
 *   the schema checks its depth may apply, see `analyseSchema`), is
 *   INVALID_INPUT; patterns count their program size times the characters
 *   they read against the same budget while ajv runs. Whatever ajv throws
 *   (a RangeError) becomes INVALID_INPUT: a check always answers.
 * Not guaranteed: a bound for keywords the cost walker does not model (draft
 * 2020-12 `prefixItems`, `$dynamicRef`, ...). That is why guest schemas never
 * reach the main thread: there, the call's CPU and wall budgets end them.
 *
 * Output schemas are published without anything that carries a regex
 * (`publishableSchema`, a walk over every object whatever the dialect):
 * clients match patterns with their own, backtracking, engines.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { ToolhostError } from '../base/errors.js';
import { analyseSchema, SchemaTooCostly, type SchemaCost } from './schema-cost.js';
import { resolveSchemaLimits, SCHEMA_LIMIT_KEYS, type SchemaLimits } from './schema-limits.js';
import { publishableSchema } from './publishable-schema.js';
import type { JsonSchema } from './tool.js';

export { publishableSchema };

export interface ValidationIssue {
  /** JSON Pointer into the arguments (`""` for the whole value). */
  path: string;
  message: string;
  keyword: string;
  params: Record<string, unknown>;
}

/** Checks a call's arguments: undefined when they are valid, else the INVALID_INPUT error to answer with. */
export interface ArgsValidator {
  check(args: unknown, callId?: string): ToolhostError | undefined;
}

/**
 * ECMAScript escapes RE2 spells differently: `\uXXXX` and `\u{X...}` become
 * `\x{...}` (an escaped backslash before them is left alone).
 */
export function toRe2Syntax(pattern: string): string {
  return pattern.replace(/(?<!\\)((?:\\\\)*)\\u(?:\{([0-9a-fA-F]{1,6})\}|([0-9a-fA-F]{4}))/g, (_match, backslashes: string, braced?: string, plain?: string) => `${backslashes}\\x{${braced ?? plain}}`);
}

/** RE2JS, loaded when the first pattern is compiled: a process whose schemas have none never pays for it (~10 ms). */
let re2: typeof RE2JS | undefined;
function re2Engine(): typeof RE2JS {
  re2 ??= (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS;
  return re2;
}

function compileRe2(pattern: string): RE2JS {
  try {
    return re2Engine().compile(toRe2Syntax(pattern));
  } catch (error) {
    throw new Error(`pattern ${JSON.stringify(pattern.slice(0, 200))} cannot be matched in linear time (${(error as Error).message}); lookaround and backreferences are not supported`);
  }
}

/** Instructions of `pattern`'s RE2 program (what matching a character may cost); throws when RE2 cannot run it. */
export function re2ProgramSize(pattern: string): number {
  return compileRe2(pattern).programSize();
}

/** Thrown by a pattern's test when the validation running it has spent its budget. */
class ValidationBudgetSpent extends Error {}

/** What the validation running now may still spend on patterns and `uniqueItems` (one validation runs at a time: ajv is synchronous). */
let patternBudget = Number.POSITIVE_INFINITY;

/** Steps charged for each value `uniqueItems` hashes (writing its canonical JSON costs ~20 times a schema check). */
const UNIQUE_ITEMS_STEPS = 20;

/** Values `canonical` has written since the counter was last read. */
let canonicalValues = 0;

/** ajv's regex engine: RE2JS, linear in the input whatever the pattern, charged to the running validation's budget. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): { test(text: string): boolean; toString(): string } => {
    const compiled = compileRe2(pattern);
    const size = compiled.programSize();
    // RE2JS builds its matcher on the first match (~30 µs an instruction): at registration, not in a call.
    compiled.test('');
    // ajv keys compiled patterns by `toString()`: it must differ per pattern.
    const key = `/${pattern}/re2`;
    return {
      test: (text: string) => {
        patternBudget -= text.length * size;
        if (patternBudget < 0) throw new ValidationBudgetSpent();
        return compiled.test(text);
      },
      toString: () => key,
    };
  },
  { code: 'require("re2js").RE2JS' },
);

const AJV_OPTIONS = { allErrors: true, strict: false, validateFormats: false, inlineRefs: false, code: { regExp: linearRegExp } } as const;

/**
 * The key `uniqueItems` compares items by: JSON with sorted keys (equal values, whatever their key order,
 * match). Recursive, over args already checked to nest at most `argsDepth` levels.
 */
function canonical(value: unknown): string {
  canonicalValues += 1;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'undefined';
  let text: string;
  if (Array.isArray(value)) {
    text = '[';
    for (const item of value) text += `${canonical(item)},`;
    return `${text}]`;
  }
  text = '{';
  for (const key of Object.keys(value).sort()) text += `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])},`;
  return `${text}}`;
}

/** ajv's `uniqueItems`, linear: items are hashed by their canonical JSON (ajv compares non-scalar items pairwise). */
function linearUniqueItems(ajv: Ajv): void {
  const validate = Object.assign(
    (schema: boolean, data: unknown[]): boolean => {
      validate.errors = undefined;
      if (!schema || data.length < 2) return true;
      const seen = new Map<string, number>();
      for (let i = 0; i < data.length; i++) {
        canonicalValues = 0;
        const key = canonical(data[i]);
        patternBudget -= canonicalValues * UNIQUE_ITEMS_STEPS;
        if (patternBudget < 0) throw new ValidationBudgetSpent();
        const j = seen.get(key);
        if (j !== undefined) {
          validate.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
          return false;
        }
        seen.set(key, i);
      }
      return true;
    },
    { errors: undefined as Array<Partial<ErrorObject>> | undefined },
  );
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate });
}

/**
 * Checks schemas against their meta-schema for every compiler in the process: compiling the
 * draft-07 meta-schema costs ~25 ms, which each registry paid again with its own ajv.
 */
let metaSchemas: Ajv | undefined;
/** The same for schemas that say `$schema` is draft 2020-12 (MCP 2025-11-25's default dialect), made at the first one. */
let metaSchemas2020: Ajv | undefined;

/** Draft 2020-12's meta-schema URI, as a schema's `$schema` names it. */
const DRAFT_2020_12 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

/** Whether a schema declares draft 2020-12 (then ajv's 2020 dialect compiles it: `$defs`, `prefixItems`, ...). */
function isDraft2020(schema: JsonSchema): boolean {
  return typeof schema === 'object' && schema !== null && typeof schema.$schema === 'string' && DRAFT_2020_12.test(schema.$schema);
}

/** What ajv's own compile does first (same message), with the meta-schema compiled once per process. */
function checkAgainstMetaSchema(schema: JsonSchema): void {
  // What is not an object ajv's compile refuses with its own message; `true`/`false` need no check.
  if (typeof schema !== 'object' || schema === null) return;
  // Unoptimized code: the meta-schema's validator runs once per schema, and skipping ajv's optimizing pass
  // makes compiling it ~10 ms cheaper (what it accepts and the errors it reports are the same).
  const options = { ...AJV_OPTIONS, code: { ...AJV_OPTIONS.code, optimize: false } };
  const made = (ajv: Ajv): Ajv => {
    linearUniqueItems(ajv);
    return ajv;
  };
  const meta = isDraft2020(schema) ? (metaSchemas2020 ??= made(new Ajv2020(options))) : (metaSchemas ??= made(new Ajv(options)));
  if (!meta.validateSchema(schema)) throw new Error(`schema is invalid: ${meta.errorsText(meta.errors)}`);
}

/** Where a compiler reports a limit hit: the tool and the limit's config key. */
export type SchemaLimitListener = (tool: string, limit: string) => void;

/** Input schemas a compiler remembers by their text before it starts over. */
const KNOWN_SCHEMAS = 4096;

/** Compiles tool schemas with one ajv instance per compiler (the meta-schema check is shared). */
export class SchemaCompiler {
  readonly #ajv = new Ajv({ ...AJV_OPTIONS, validateSchema: false });
  /** For schemas that declare draft 2020-12 (made at the first). */
  #ajv2020: Ajv | undefined;
  readonly #limits: SchemaLimits;
  readonly #onLimit: SchemaLimitListener;
  /** Input schemas compiled, by their JSON text (see `compile`). */
  readonly #known = new Map<string, ValidateFunction>();

  constructor(limits: Partial<SchemaLimits> = {}, onLimit: SchemaLimitListener = () => {}) {
    this.#limits = resolveSchemaLimits(limits);
    this.#onLimit = onLimit;
    linearUniqueItems(this.#ajv);
  }

  /** The ajv that compiles `schema`: draft 2020-12's when it says so, else the default (draft-07 keywords). */
  #ajvFor(schema: JsonSchema): Ajv {
    if (!isDraft2020(schema)) return this.#ajv;
    if (this.#ajv2020 === undefined) {
      this.#ajv2020 = new Ajv2020({ ...AJV_OPTIONS, validateSchema: false });
      linearUniqueItems(this.#ajv2020);
    }
    return this.#ajv2020;
  }

  /** The limits this compiler checks. */
  get limits(): Readonly<SchemaLimits> {
    return this.#limits;
  }

  /**
   * Compile `schema`; throws COMPONENT_INVALID naming the tool when it is past a cost limit, and
   * INVALID_INPUT when it does not compile.
   */
  compile(toolName: string, schema: JsonSchema, options: { metaSchema?: boolean } = {}): ArgsValidator {
    // Its cost first (an iterative walk: it refuses a schema too deep to serialize), then, as the same schema
    // text compiles to the same validator, compiled once (hundreds of copies of a component registered 500
    // tools at ~10 ms each, issue 28). A schema refused for its cost is never remembered.
    const { perDepth } = this.#analyse(toolName, 'input', schema);
    const text = JSON.stringify(schema);
    let known = this.#known.get(text);
    if (known === undefined) {
      let compiled: ValidateFunction;
      try {
        // A worker compiling a guest's schema for a call skips it: the schema was checked when it was described.
        if (options.metaSchema !== false) checkAgainstMetaSchema(schema);
        compiled = this.#ajvFor(schema).compile(schema);
      } catch (error) {
        throw new ToolhostError('INVALID_INPUT', `tool "${toolName}": input schema does not compile: ${(error as Error).message}`);
      }
      known = compiled;
      if (this.#known.size >= KNOWN_SCHEMAS) this.#known.clear();
      this.#known.set(text, known);
    }
    const validate = known;
    const limits = this.#limits;
    const onLimit = this.#onLimit;
    return {
      check(args, callId) {
        const refuse = (limit: keyof SchemaLimits, message: string, details: Record<string, unknown>): ToolhostError => {
          onLimit(toolName, SCHEMA_LIMIT_KEYS[limit]);
          return new ToolhostError('INVALID_INPUT', `invalid input for "${toolName}": ${message}`, {
            details: { reason: limit === 'argsDepth' ? 'depth' : 'validation-cost', limit: SCHEMA_LIMIT_KEYS[limit], ...details },
            ...(callId === undefined ? {} : { callId }),
          });
        };
        const walked = walkArgs(args, perDepth, limits);
        if (walked === 'depth') return refuse('argsDepth', `args nest more than ${limits.argsDepth} levels (host.guest_limits.args_depth)`, { maxDepth: limits.argsDepth });
        if (walked === 'steps') {
          return refuse('validationSteps', `args too large to validate against this tool's schema (more than ${limits.validationSteps} steps, host.guest_limits.validation_steps)`, { maxSteps: limits.validationSteps });
        }
        let valid: boolean;
        patternBudget = limits.validationSteps - walked;
        try {
          valid = validate(args) as boolean;
        } catch (error) {
          if (error instanceof ValidationBudgetSpent) {
            return refuse('validationSteps', `args too large to validate against this tool's patterns or uniqueItems (more than ${limits.validationSteps} steps, host.guest_limits.validation_steps)`, { maxSteps: limits.validationSteps });
          }
          return new ToolhostError('INVALID_INPUT', `invalid input for "${toolName}": args could not be validated (${(error as Error).message})`, {
            details: { reason: 'validation-failed' },
            ...(callId === undefined ? {} : { callId }),
          });
        } finally {
          patternBudget = Number.POSITIVE_INFINITY;
        }
        if (valid) return undefined;
        const issues = (validate.errors ?? []).map(toIssue);
        const first = issues[0];
        const where = first && first.path !== '' ? `args${first.path}` : 'args';
        const message = first ? `${where} ${first.message}` : 'args are invalid';
        return new ToolhostError('INVALID_INPUT', `invalid input for "${toolName}": ${message}`, {
          details: { errors: issues },
          ...(callId === undefined ? {} : { callId }),
        });
      },
    };
  }

  /**
   * Check an output schema by the same cost rules (COMPONENT_INVALID past one, INVALID_INPUT when it is not
   * a valid schema) and answer what may be published to clients: the schema without its patterns.
   */
  checkOutput(toolName: string, schema: JsonSchema): JsonSchema {
    this.#analyse(toolName, 'output', schema);
    try {
      checkAgainstMetaSchema(schema);
    } catch (error) {
      throw new ToolhostError('INVALID_INPUT', `tool "${toolName}": output schema is not a valid JSON Schema: ${(error as Error).message}`);
    }
    return publishableSchema(schema);
  }

  #analyse(toolName: string, which: 'input' | 'output', schema: JsonSchema): SchemaCost {
    try {
      return analyseSchema(schema, this.#limits);
    } catch (error) {
      if (!(error instanceof SchemaTooCostly)) {
        throw new ToolhostError('INVALID_INPUT', `tool "${toolName}": ${which} schema does not compile: ${(error as Error).message}`);
      }
      const limit = error.limit === undefined ? undefined : SCHEMA_LIMIT_KEYS[error.limit];
      if (limit !== undefined) this.#onLimit(toolName, limit);
      const where = limit === undefined ? '' : ` (host.guest_limits.${limit})`;
      throw new ToolhostError('COMPONENT_INVALID', `tool "${toolName}": ${which} schema ${error.message}${where}`, {
        details: { reason: 'schema-cost', schema: which, ...(limit === undefined ? {} : { limit }) },
      });
    }
  }
}

/**
 * Walk args once, iteratively: 'depth' when they nest deeper than `argsDepth` (a cycle always does),
 * 'steps' when their values plus the checks `perDepth` says apply to them exceed `validationSteps`,
 * else the steps spent.
 */
function walkArgs(args: unknown, perDepth: Float64Array, limits: SchemaLimits): number | 'depth' | 'steps' {
  const pending: Array<[unknown, number]> = [[args, 0]];
  let steps = 0;
  while (pending.length > 0) {
    const [value, depth] = pending.pop()!;
    steps += 1 + perDepth[depth]!;
    if (steps > limits.validationSteps) return 'steps';
    if (typeof value !== 'object' || value === null) continue;
    if (depth + 1 > limits.argsDepth) return 'depth';
    const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
    for (const child of children) pending.push([child, depth + 1]);
  }
  return steps;
}

function toIssue(error: ErrorObject): ValidationIssue {
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'additionalProperties') {
    message = `must not have property "${String((error.params as { additionalProperty?: string }).additionalProperty)}"`;
  }
  return { path: error.instancePath, message, keyword: error.keyword, params: error.params as Record<string, unknown> };
}
