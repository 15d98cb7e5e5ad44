/**
 * Input validation: each tool's schema is compiled once, when the tool is
 * registered, and a schema that does not compile fails registration.
 *
 * Validation runs on the main thread, so a schema must not be able to stall
 * it: `pattern` (and `patternProperties`, `propertyNames` patterns) run on
 * RE2JS, a linear-time engine without backtracking, instead of RegExp (a
 * catastrophic pattern on 27 characters stalled the host 7 s). A pattern RE2
 * cannot run in linear time (lookaround, backreferences) fails registration
 * with INVALID_INPUT.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { ToolhostError } from './errors.js';
import type { JsonSchema } from './tool.js';

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

/** ajv's regex engine: RE2JS, linear in the input whatever the pattern. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): { test(text: string): boolean; toString(): string } => {
    let compiled: RE2JS;
    try {
      compiled = re2Engine().compile(toRe2Syntax(pattern));
    } catch (error) {
      throw new Error(`pattern ${JSON.stringify(pattern)} cannot be matched in linear time (${(error as Error).message}); lookaround and backreferences are not supported`);
    }
    // ajv keys compiled patterns by `toString()`: it must differ per pattern.
    const key = `/${pattern}/re2`;
    return { test: (text: string) => compiled.test(text), toString: () => key };
  },
  { code: 'require("re2js").RE2JS' },
);

const AJV_OPTIONS = { allErrors: true, strict: false, validateFormats: false, code: { regExp: linearRegExp } } as const;

/**
 * Checks schemas against their meta-schema for every compiler in the process: compiling the
 * draft-07 meta-schema costs ~25 ms, which each registry paid again with its own ajv.
 */
let metaSchemas: Ajv | undefined;

/** What ajv's own compile does first (same message), with the meta-schema compiled once per process. */
function checkAgainstMetaSchema(schema: JsonSchema): void {
  // What is not an object ajv's compile refuses with its own message; `true`/`false` need no check.
  if (typeof schema !== 'object' || schema === null) return;
  // Unoptimized code: the meta-schema's validator runs once per schema, and skipping ajv's optimizing pass
  // makes compiling it ~10 ms cheaper (what it accepts and the errors it reports are the same).
  metaSchemas ??= new Ajv({ ...AJV_OPTIONS, code: { ...AJV_OPTIONS.code, optimize: false } });
  if (!metaSchemas.validateSchema(schema)) throw new Error(`schema is invalid: ${metaSchemas.errorsText(metaSchemas.errors)}`);
}

/** Compiles tool schemas with one ajv instance per compiler (the meta-schema check is shared). */
export class SchemaCompiler {
  readonly #ajv = new Ajv({ ...AJV_OPTIONS, validateSchema: false });

  /** Compile `schema`; throws INVALID_INPUT naming the tool when it does not compile. */
  compile(toolName: string, schema: JsonSchema): ArgsValidator {
    let validate: ValidateFunction;
    try {
      checkAgainstMetaSchema(schema);
      validate = this.#ajv.compile(schema);
    } catch (error) {
      throw new ToolhostError('INVALID_INPUT', `tool "${toolName}": input schema does not compile: ${(error as Error).message}`);
    }
    return {
      check(args, callId) {
        if (validate(args)) return undefined;
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
}

function toIssue(error: ErrorObject): ValidationIssue {
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'additionalProperties') {
    message = `must not have property "${String((error.params as { additionalProperty?: string }).additionalProperty)}"`;
  }
  return { path: error.instancePath, message, keyword: error.keyword, params: error.params as Record<string, unknown> };
}
