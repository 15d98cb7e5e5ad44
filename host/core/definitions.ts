/**
 * Tool definitions in the shapes agents and model APIs expect.
 *
 * The model formats (`openai`: Chat Completions, `openai-responses`: the
 * Responses API, `anthropic`: Messages) assign to the official SDKs' tool
 * types without a cast (a test type-checks it). Their names are model-facing
 * (see `modelNames`), and their schemas are object schemas (see
 * `objectInputSchema`); a tool whose input is not an object is left out.
 */
import { createHash } from 'node:crypto';
import { deriveAnnotations } from '../policy/annotations.js';
import { toStrictSchema } from './strict-schema.js';
import type { JsonSchema, ToolDescriptor } from './tool.js';

export type DefinitionFormat = 'toolhost' | 'mcp' | 'openai' | 'openai-responses' | 'anthropic';

export interface ToolhostDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  executionMode: ToolDescriptor['executionMode'];
  idempotent: boolean;
  streaming: boolean;
  source?: string;
  /** A 0.2.0 tool's own title, annotations (the author's hints; MCP clients get them merged with the grant's) and icons. */
  title?: string;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  icons?: Array<{ src: string; mimeType?: string; sizes?: string[] }>;
}

export interface McpDefinition {
  name: string;
  title?: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint: boolean; openWorldHint?: boolean };
  icons?: Array<{ src: string; mimeType?: string; sizes?: string[] }>;
}

/** A JSON Schema whose root describes an object: what model APIs take as a tool's parameters. */
export type ObjectJsonSchema = { type: 'object'; [keyword: string]: unknown };

/** OpenAI Chat Completions: assignable to `ChatCompletionFunctionTool` (`ChatCompletionTool`). */
export interface OpenAIDefinition {
  type: 'function';
  /** `strict` only with `definitions('openai', { strict: true })`: true where the schema has a strict form. */
  function: { name: string; description: string; parameters: ObjectJsonSchema; strict?: boolean };
}

/** OpenAI Responses API: assignable to `FunctionTool`. */
export interface OpenAIResponsesDefinition {
  type: 'function';
  name: string;
  description: string;
  parameters: ObjectJsonSchema;
  /**
   * false by default (toolhost validates the arguments itself); with `{ strict: true }`, true for a tool whose
   * schema has a strict form (strict-schema.ts), which `parameters` then is.
   */
  strict: boolean;
}

/** How `definitions` shapes the model formats. */
export interface DefinitionOptions {
  /**
   * OpenAI formats: strict mode (Structured Outputs) where a tool's input schema allows it: `parameters` in
   * its strict form and `strict: true`; a tool whose schema has none keeps its schema with `strict: false`, and
   * `onNotStrict` is told which tool and why. Other formats ignore it.
   */
  strict?: boolean;
  /** Called for each tool that cannot be strict (with `strict: true`), with its model-facing name and the reason. */
  onNotStrict?: (name: string, reason: string) => void;
}

/** Anthropic Messages: assignable to `Tool`. */
export interface AnthropicDefinition {
  name: string;
  description: string;
  input_schema: ObjectJsonSchema;
}

export interface DefinitionsByFormat {
  toolhost: ToolhostDefinition;
  mcp: McpDefinition;
  openai: OpenAIDefinition;
  'openai-responses': OpenAIResponsesDefinition;
  anthropic: AnthropicDefinition;
}

/** The formats whose tool names must match `MODEL_NAME` (model APIs). */
export const MODEL_FORMATS: ReadonlySet<DefinitionFormat> = new Set<DefinitionFormat>(['openai', 'openai-responses', 'anthropic']);

/** What OpenAI and Anthropic accept as a function/tool name. */
export const MODEL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A registered name as model APIs accept it (`MODEL_NAME`), before collisions
 * are resolved: a name that already fits is kept; otherwise each `.` becomes
 * `__` and any other character `_`; a result over 64 characters is cut to 55
 * and given `_` and 8 hex digits of the name's sha256.
 */
export function modelSafeName(name: string): string {
  if (MODEL_NAME.test(name)) return name;
  const replaced = name.replaceAll('.', '__').replace(/[^a-zA-Z0-9_-]/g, '_');
  return replaced.length > 0 && replaced.length <= 64 ? replaced : hashed(replaced, name);
}

function hashed(base: string, name: string): string {
  return `${base.slice(0, 55)}_${createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 8)}`;
}

/**
 * Model-facing names for a set of registered names: valid (`MODEL_NAME`),
 * unique, and deterministic (they depend only on the set). Names that already
 * fit keep themselves; the others get `modelSafeName`, in sorted order; one
 * that would take a name already taken gets the hashed form instead (`_` and 8
 * hex digits of its sha256), then a counter if even that is taken.
 * `ToolRegistry.resolveName` maps them back; `execute`, `stream` and the
 * servers accept either form.
 */
export function modelNames(names: Iterable<string>): Map<string, string> {
  const sorted = [...new Set(names)].sort();
  const result = new Map<string, string>();
  const taken = new Set<string>();
  for (const name of sorted) {
    if (MODEL_NAME.test(name)) {
      result.set(name, name);
      taken.add(name);
    }
  }
  for (const name of sorted) {
    if (result.has(name)) continue;
    let candidate = modelSafeName(name);
    if (taken.has(candidate)) candidate = hashed(candidate, name);
    for (let i = 2; taken.has(candidate); i += 1) candidate = `${candidate.slice(0, 60)}_${i}`;
    result.set(name, candidate);
    taken.add(candidate);
  }
  return result;
}

/**
 * A tool's input schema as an object schema: `true`, `{}` and type-less
 * schemas become `{ type: "object", ... }`; a schema whose root is not an object
 * (`false`, `{type: "string"}`) gives undefined: model APIs cannot call such a
 * tool, and the model formats leave it out.
 */
export function objectInputSchema(schema: JsonSchema): ObjectJsonSchema | undefined {
  if (schema === true) return { type: 'object', properties: {} };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  if (schema.type === 'object') return { ...schema, type: 'object' };
  if (schema.type === undefined) return { ...schema, type: 'object' };
  return undefined;
}

/**
 * One tool's definition. For the model formats, `modelName` is its
 * model-facing name (default: `modelSafeName`; the registry passes the
 * collision-free one), and the result is undefined when its input is not an object.
 */
export function toDefinition<F extends DefinitionFormat>(tool: ToolDescriptor, format: F, modelName?: string, options: DefinitionOptions = {}): DefinitionsByFormat[F] | undefined {
  const name = modelName ?? modelSafeName(tool.name);
  let parameters = MODEL_FORMATS.has(format) ? objectInputSchema(tool.inputSchema) : undefined;
  let strict: boolean | undefined;
  if (options.strict === true && parameters !== undefined && (format === 'openai' || format === 'openai-responses')) {
    const strictForm = toStrictSchema(parameters);
    strict = strictForm.strict;
    if (strictForm.strict) parameters = strictForm.schema;
    else options.onNotStrict?.(name, strictForm.reason);
  }
  const byFormat: { [K in DefinitionFormat]: () => DefinitionsByFormat[K] | undefined } = {
    toolhost: () => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
      executionMode: tool.executionMode,
      idempotent: tool.idempotent,
      streaming: tool.streaming,
      ...(tool.source === undefined ? {} : { source: tool.source }),
      ...(tool.title === undefined ? {} : { title: tool.title }),
      ...(tool.annotations === undefined ? {} : { annotations: { ...tool.annotations } }),
      ...(tool.icons === undefined ? {} : { icons: tool.icons.map((icon) => ({ ...icon, ...(icon.sizes === undefined ? {} : { sizes: [...icon.sizes] }) })) }),
    }),
    mcp: () => ({
      name: tool.name,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
      // Derived from the grant, never safer than it guarantees nor less cautious than the author (policy/annotations.ts).
      annotations: deriveAnnotations(tool),
      ...(tool.icons === undefined ? {} : { icons: tool.icons.map((icon) => ({ ...icon, ...(icon.sizes === undefined ? {} : { sizes: [...icon.sizes] }) })) }),
    }),
    openai: () => (parameters === undefined ? undefined : { type: 'function', function: { name, description: tool.description, parameters, ...(strict === undefined ? {} : { strict }) } }),
    'openai-responses': () => (parameters === undefined ? undefined : { type: 'function', name, description: tool.description, parameters, strict: strict ?? false }),
    anthropic: () => (parameters === undefined ? undefined : { name, description: tool.description, input_schema: parameters }),
  };
  return byFormat[format]();
}
