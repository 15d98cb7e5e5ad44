/**
 * The schema lane's worker (see schema-lane.ts): compiles schemas and validates args with `core/schema.ts`,
 * one task at a time, off the main thread. Its parent terminates it past a task's deadline.
 */
import { parentPort } from 'node:worker_threads';
import { ToolhostError, toErrorData, type ToolErrorData } from '../base/errors.js';
import { SchemaCompiler, type ArgsValidator } from './schema.js';
import type { SchemaLimits } from './schema-limits.js';
import type { JsonSchema } from './tool.js';

/** Parent → worker. `text` comes with a hash the worker does not hold yet (the parent keeps track). */
export type LaneTask =
  | { id: number; op: 'check'; tool: string; hash: string; text?: string; output?: boolean; limits: SchemaLimits }
  | { id: number; op: 'validate'; tool: string; hash: string; text?: string; limits: SchemaLimits; args: unknown; callId?: string };

/** Worker → parent: undefined `error` when the schema passed (check) or the args are valid (validate). */
export interface LaneReply {
  id: number;
  error?: ToolErrorData;
  /** The hash the worker holds now (or not, after a refused schema). */
  holds: boolean;
}

const compilers = new Map<string, SchemaCompiler>();
const schemas = new Map<string, { schema: JsonSchema; validator?: ArgsValidator }>();
const MAX_SCHEMAS = 1024;

function compilerFor(limits: SchemaLimits): SchemaCompiler {
  const key = JSON.stringify(limits);
  let compiler = compilers.get(key);
  if (compiler === undefined) {
    if (compilers.size >= 16) compilers.clear();
    compiler = new SchemaCompiler(limits);
    compilers.set(key, compiler);
  }
  return compiler;
}

function run(task: LaneTask): LaneReply {
  let entry = schemas.get(task.hash);
  if (entry === undefined) {
    if (task.text === undefined) return { id: task.id, error: { code: 'INTERNAL', message: 'the schema lane lost a schema' }, holds: false };
    if (schemas.size >= MAX_SCHEMAS) schemas.clear();
    entry = { schema: JSON.parse(task.text) as JsonSchema };
    schemas.set(task.hash, entry);
  }
  const compiler = compilerFor(task.limits);
  try {
    if (task.op === 'check') {
      if (task.output === true) compiler.checkOutput(task.tool, entry.schema);
      else entry.validator = compiler.compile(task.tool, entry.schema);
      return { id: task.id, holds: true };
    }
    entry.validator ??= compiler.compile(task.tool, entry.schema);
    const invalid = entry.validator.check(task.args, task.callId);
    return invalid === undefined ? { id: task.id, holds: true } : { id: task.id, error: invalid.toData(), holds: true };
  } catch (error) {
    schemas.delete(task.hash);
    return { id: task.id, error: error instanceof ToolhostError ? error.toData() : toErrorData(error), holds: false };
  }
}

parentPort?.on('message', (task: LaneTask) => parentPort!.postMessage(run(task)));
// Loaded (ajv included) and warm (both dialects' meta-schemas compiled, once per process): tasks' deadlines may run from now.
new SchemaCompiler().compile('warm-up', { type: 'object' });
new SchemaCompiler().compile('warm-up', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' });
parentPort?.postMessage({ ready: true });
