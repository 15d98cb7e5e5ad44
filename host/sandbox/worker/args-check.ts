/**
 * A guest's schemas, compiled and run in the sandbox worker, never on the main thread: the args of a call
 * are checked here before the guest runs, and a component's schemas are checked here when it describes
 * itself at load.
 *
 * Guarantees:
 * - A call's args are validated in the worker that runs the call, after the CPU watchdog started watching
 *   (`HostBridge.guestStarting`): however a schema makes ajv spend (keywords the cost walker does not know,
 *   `prefixItems` over an `allOf`/`$ref` DAG, `$dynamicRef`), the call's CPU budget (CPU_BUDGET_EXCEEDED)
 *   and wall budget (WALL_TIMEOUT / TOOL_TIMEOUT) end it and the worker is replaced; the main thread only
 *   copied the args. A refusal is INVALID_INPUT with ajv's path and message (`core/schema.ts`, same shape as
 *   admission's), answered as `refused` so the call ends `stage: 'rejected'`.
 * - A tool's schema is compiled once per worker (by the hash of its text and limits), before the watchdog
 *   starts: compiling is under the call's wall budget only, so that the first call on a new worker is not
 *   charged ajv's start (~100 ms of CPU to load it, once per worker, while the new worker is idle).
 * - At load (`describeCheck`), every tool's input and output schema is checked for cost, against its
 *   meta-schema, and compiled, under the describe budget (`describe_timeout_ms`, the worker replaced past it).
 *
 * Does not: bound the cost of a schema in a worker other than by the call's budgets (that is the design: the
 * cost walker of `core/schema-cost.ts` runs first as an early filter, and safety does not depend on it);
 * re-check at load a component whose description came from the transpile cache (it was checked when it was
 * first described; a stricter limit since is met at its first call, where compiling checks the costs again).
 */
import { isErrorCode, type ToolErrorData } from '../../base/errors.js';
import type { ArgsValidator, SchemaCompiler } from '../../core/schema.js';
import type { SchemaLimits } from '../../core/schema-limits.js';
import type { JsonSchema } from '../../core/tool.js';
import type { ArgsSchema, GuestToolInfo } from '../protocol.js';

type SchemaModule = typeof import('../../core/schema.js');

/**
 * core/schema.js, imported once per worker (ajv costs ~100 ms of CPU to load: the worker starts it while idle,
 * entry.ts). Loaded by URL so that the worker bundle leaves it (and ajv) out of the worker's own start.
 */
let schemaModule: SchemaModule | undefined;
let loading: Promise<SchemaModule> | undefined;

/** Whether `argsValidator` can answer without loading anything. */
export function argsCheckReady(): boolean {
  return schemaModule !== undefined;
}

/**
 * The schema compiler's file: the bundled worker (entry.bundle.js) takes the bundle made beside it by the same
 * script run (scripts/bundle-worker.mjs: ajv inside, half the load time), an unbundled one schema.js.
 */
const SCHEMA_FILE = import.meta.url.endsWith('/entry.bundle.js') ? '../../core/schema.bundle.js' : '../../core/schema.js';

/** Load what checking needs (once per worker). */
export function loadArgsCheck(): Promise<unknown> {
  loading ??= (import(new URL(SCHEMA_FILE, import.meta.url).href) as Promise<SchemaModule>).then((loaded) => {
    schemaModule = loaded;
    return loaded;
  });
  return loading;
}

/** Validators kept per worker before the table starts over. */
const MAX_VALIDATORS = 1024;
const validators = new Map<string, ArgsValidator | ToolErrorData>();
/** One compiler per set of limits (its ajv instances hold the compiled schemas). */
const compilers = new Map<string, SchemaCompiler>();

function compilerFor(limits: SchemaLimits): SchemaCompiler {
  const key = JSON.stringify(limits);
  let compiler = compilers.get(key);
  if (compiler === undefined) {
    if (compilers.size >= 16) compilers.clear();
    compiler = new schemaModule!.SchemaCompiler(limits);
    compilers.set(key, compiler);
  }
  return compiler;
}

function errorData(error: unknown): ToolErrorData {
  const data = error as { code?: unknown; message?: unknown; details?: unknown };
  const result: ToolErrorData = { code: isErrorCode(data.code) ? data.code : 'INVALID_INPUT', message: typeof data.message === 'string' ? data.message : String(error) };
  if (data.details !== undefined) result.details = data.details;
  return result;
}

/**
 * The validator of a tool's input schema, compiled the first time this worker sees its hash (call only
 * after `loadArgsCheck` settled); a schema that does not compile answers its error (every call refused).
 */
export function argsValidator(tool: string, schema: ArgsSchema): ArgsValidator | ToolErrorData {
  let known = validators.get(schema.hash);
  if (known !== undefined) return known;
  try {
    known = compilerFor(schema.limits).compile(tool, JSON.parse(schema.text) as JsonSchema, { metaSchema: false });
  } catch (error) {
    known = errorData(error);
  }
  if (validators.size >= MAX_VALIDATORS) validators.clear();
  validators.set(schema.hash, known);
  return known;
}

/** Check `args` (JSON text) with a validator from `argsValidator`: undefined when they are valid. */
export function checkArgs(validator: ArgsValidator | ToolErrorData, args: string, callId: string): ToolErrorData | undefined {
  if (!('check' in validator)) return validator;
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return { code: 'INVALID_INPUT', message: 'args are not JSON', details: { reason: 'args-json' } };
  }
  return validator.check(parsed, callId)?.toData();
}

/**
 * At load: every tool's input and output schema checked for cost and against its meta-schema, and its input
 * schema compiled, as registration did on the main thread before (same codes: COMPONENT_INVALID past a cost
 * limit, INVALID_INPUT for a schema that does not compile). Undefined when all pass.
 */
export async function describeCheck(tools: GuestToolInfo[], limits: SchemaLimits): Promise<ToolErrorData | undefined> {
  await loadArgsCheck();
  const compiler = new schemaModule!.SchemaCompiler(limits);
  for (const tool of tools) {
    try {
      // What is not JSON is the loader's to report (with the tool and field named).
      const input = parseOrUndefined(tool.inputSchema);
      if (input !== undefined) compiler.compile(tool.name, input);
      const output = tool.outputSchema === undefined ? undefined : parseOrUndefined(tool.outputSchema);
      if (output !== undefined) compiler.checkOutput(tool.name, output);
    } catch (error) {
      return errorData(error);
    }
  }
  return undefined;
}

function parseOrUndefined(text: string): JsonSchema | undefined {
  try {
    return JSON.parse(text) as JsonSchema;
  } catch {
    return undefined;
  }
}
