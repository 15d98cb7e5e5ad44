/** What a tool is, whichever way it runs. */
import type { ToolContext } from './context.js';
import type { RunnerSink, ToolEventSink } from './events.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';
import type { ToolGrant } from '../policy/grant.js';
import type { RichResult } from './result.js';

export type { ToolGrant };

export type ExecutionMode = 'native' | 'sandboxed';

/** A JSON Schema document (draft 2020-12 or draft-07 keywords). */
export type JsonSchema = { [keyword: string]: unknown } | boolean;

/** What an author says a tool does (MCP tool annotations); hints, never guarantees. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** An icon a client may show for a tool (MCP `icons`). */
export interface ToolIcon {
  src: string;
  mimeType?: string;
  sizes?: string[];
}

/** The part of a tool an agent sees. */
export interface ToolDescriptor {
  /** The registered name ([a-zA-Z0-9_.-], at most 64 characters). */
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly executionMode: ExecutionMode;
  /** Safe to call twice with the same input (enables retries of transient failures). */
  readonly idempotent: boolean;
  /** Emits `delta` events while it runs. */
  readonly streaming: boolean;
  /** Reads only; changes nothing outside itself (an MCP annotation). */
  readonly readOnly?: boolean;
  /** Where the tool came from: a component's name for sandboxed tools, `native` otherwise. */
  readonly source?: string;
  /** A human-readable name (MCP `title`). */
  readonly title?: string;
  /** The author's annotations (MCP), as declared. */
  readonly annotations?: ToolAnnotations;
  /** Icons a client may show. */
  readonly icons?: readonly ToolIcon[];
  /** What the host grants the tool: calls may narrow it, never exceed it. */
  readonly grant?: ToolGrant;
  /** The policy a call gets where it says nothing (within the grant). */
  readonly defaultPolicy?: ExecutionPolicyInput;
  /**
   * The runner checks the args against `inputSchema` itself, off the main thread and under the call's
   * budgets (a sandboxed tool: in the worker that runs the call, before the guest; an imported MCP tool: in
   * the schema lane), and its schemas were checked where they were loaded. The registry then compiles
   * nothing of them on the main thread, admission skips its validation step, and the runner refuses bad args
   * by throwing a `CallRejection` with INVALID_INPUT (the call still ends `stage: 'rejected'`).
   */
  readonly checksOwnArgs?: boolean;
}

/** How a tool run ends successfully: a JSON value, or content blocks built with `richResult`. */
export type ToolOutput = unknown | RichResult;

/** What a tool run returns. */
export interface ToolRun {
  output: ToolOutput;
  /** The output as the tool produced it, when it was JSON text (saves a re-serialization). */
  text?: string;
}

/**
 * A registered tool. The registry calls `invoke` after the policy was resolved
 * and the input passed the schema; `invoke` reports progress through `events`
 * and returns the output, or throws a ToolhostError. Write native tools with
 * `defineNativeTool`; implement `invoke` only for a runner of your own.
 */
export interface Tool extends ToolDescriptor {
  invoke(args: unknown, ctx: ToolContext, events: RunnerSink): Promise<ToolRun>;
}

/** What a native tool's author writes. */
export interface NativeToolSpec {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  idempotent?: boolean;
  streaming?: boolean;
  readOnly?: boolean;
  grant?: ToolGrant;
  defaultPolicy?: ExecutionPolicyInput;
  /** Run the tool; return a JSON value or `richResult(...)`; throw `toolError(...)` to report a failure. */
  run(args: unknown, ctx: ToolContext, events: ToolEventSink): Promise<ToolOutput> | ToolOutput;
}

/** Make a native (in-process, trusted) tool from its spec. */
export function defineNativeTool(spec: NativeToolSpec): Tool {
  const { run, ...rest } = spec;
  return {
    ...rest,
    executionMode: 'native',
    idempotent: spec.idempotent ?? false,
    streaming: spec.streaming ?? false,
    source: 'native',
    async invoke(args, ctx, events) {
      // The author sees the events only, not the runner's controls.
      const sink: ToolEventSink = {
        progress: (pct, message) => events.progress(pct, message),
        delta: (data) => events.delta(data),
        log: (level, message, source) => events.log(level, message, source),
      };
      return { output: await run(args, ctx, sink) };
    },
  };
}
