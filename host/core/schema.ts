/**
 * Input validation: each tool's schema is compiled once, when the tool is
 * registered, and a schema that does not compile fails registration.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
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

/** Compiles tool schemas with one shared ajv instance. */
export class SchemaCompiler {
  readonly #ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });

  /** Compile `schema`; throws INVALID_INPUT naming the tool when it does not compile. */
  compile(toolName: string, schema: JsonSchema): ArgsValidator {
    let validate: ValidateFunction;
    try {
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
