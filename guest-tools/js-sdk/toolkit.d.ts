/**
 * `toolhost/guest`: a small kit for writing toolhost tools in JavaScript or
 * TypeScript. Import the host calls from 'toolhost:tool/host@0.1.0' (typed by
 * this package, see world.d.ts) and build the component with `toolhost build`.
 *
 * ```ts
 * import { progress } from 'toolhost:tool/host@0.1.0';
 * import { defineComponent, parseArgs } from 'toolhost/guest';
 *
 * export const tool = defineComponent('hello', [{
 *   name: 'hello', description: 'Greets someone.', streaming: false, idempotent: true,
 *   inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
 *   run(args) {
 *     const { name } = parseArgs<{ name: string }>(args);
 *     progress(100, 'done');
 *     return { greeting: `Hello, ${name}!` };
 *   },
 * }]);
 * ```
 */
/// <reference path="./world.d.ts" />
import type { ToolError, ToolExport } from 'toolhost:tool/types@0.1.0';

export type { CallContext, LogLevel, ToolError, ToolExport, ToolInfo } from 'toolhost:tool/types@0.1.0';

/** A JSON Schema (an object, or a boolean schema). */
export type JsonSchema = { [key: string]: unknown } | boolean;

/** One tool for `defineComponent`. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  streaming: boolean;
  idempotent: boolean;
  /**
   * Run one call. `args` is the arguments' JSON text (already checked against
   * `inputSchema` by the host); return the result as JSON text or as a value to
   * serialize, or a promise of either. Throw `toolError(...)` for a failure of
   * the tool's own; anything else becomes the tool-error UNCAUGHT_EXCEPTION with its message
   * (`TypeError: boom`) and, in its details, the error's name and JS stack.
   */
  run(args: string): unknown;
}

/** The `tool` export of a component carrying `tools`. */
export declare function defineComponent(componentName: string, tools: readonly ToolDefinition[]): ToolExport;

/** A tool-error to throw; `details` is any JSON value. */
export declare function toolError(code: string, message: string, details?: unknown): ToolError;

/** A plain `{ code, message }` object (not an Error instance): what `call` may throw as a tool-error. */
export declare function isToolError(value: unknown): value is ToolError;

/**
 * The host's tool-error a host call's refusal stands for (what componentize-js throws for an import's error:
 * an Error whose `payload` is a `tool-error`, or `set-state`'s "CODE: message" string), or undefined.
 */
export declare function hostRefusal(error: unknown): ToolError | undefined;

/** Run one host call (`() => sample(request)`), throwing its refusal as the host's tool-error. */
export declare function hostCall<T>(run: () => T): T;

/** The tool-error UNCAUGHT_EXCEPTION for `error`, thrown by `tool`: its message, name and stack. */
export declare function uncaughtError(tool: string, error: unknown): ToolError;

export declare const isObject: (value: unknown) => value is Record<string, unknown>;

/**
 * Parse `args` as a JSON object, or throw the tool-error INVALID_ARGS; with
 * `allowed`, an unknown key is INVALID_ARGS too. The host validates the
 * arguments against the input schema first: this is a backstop and a cast.
 */
export declare function parseArgs<T = Record<string, unknown>>(args: string, allowed?: readonly string[]): T;

/** `args[key]` when it is a string, else the tool-error INVALID_ARGS. */
export declare function requireString(args: Record<string, unknown>, key: string): string;

export { WORKTREE, list, readBytes, readText, stat, worktreeRoot, writeBytes, writeText } from './worktree.js';
export type { WorktreeEntry, WorktreeStat } from './worktree.js';
