/**
 * The `sw4rm.tool` wire contract: where its `.proto` lives, how it is loaded,
 * and the shapes of its messages as @grpc/proto-loader hands them over.
 *
 * Loader options: field names as written (`keepCase`), 64-bit integers as
 * decimal strings (`longs: String`: no precision is lost; the policy parser
 * reads digit strings and refuses what is not a safe integer), bytes as
 * Buffers, and defaults filled in (`defaults`), so an absent scalar reads as
 * 0, "" or false and an absent message as null.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSync, type Options, type PackageDefinition, type ServiceDefinition } from '@grpc/proto-loader';

/** The proto package and the service's fully qualified name. */
export const TOOL_PROTO_PACKAGE = 'sw4rm.tool';
export const TOOL_SERVICE_NAME = `${TOOL_PROTO_PACKAGE}.ToolService`;

/** The `.proto` file, relative to the package root. */
export const TOOL_PROTO_RELATIVE_PATH = join('proto', 'sw4rm', 'tool.proto');

/** How toolhost loads the proto (also fine for a client). */
export const TOOL_PROTO_LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/** google.protobuf.Duration; `seconds` is an int64 (a string with `longs: String`, a number from some clients). */
export interface DurationMessage {
  seconds?: string | number | null;
  nanos?: number | null;
}

/** sw4rm.tool.ExecutionPolicy as received (fields may be missing when a client sends an odd object). */
export interface ExecutionPolicyMessage {
  timeout?: DurationMessage | null;
  max_retries?: number | null;
  backoff?: string | null;
  worktree_required?: boolean | null;
  network_policy?: string | null;
  privilege_level?: string | null;
  budget_cpu_ms?: string | number | null;
  budget_wall_ms?: string | number | null;
}

/** sw4rm.tool.ToolCall as received. */
export interface ToolCallMessage {
  call_id?: string | null;
  tool_name?: string | null;
  provider_id?: string | null;
  content_type?: string | null;
  args?: Buffer | Uint8Array | null;
  policy?: ExecutionPolicyMessage | null;
  stream?: boolean | null;
}

/** sw4rm.tool.ToolFrame as sent. */
export interface ToolFrameMessage {
  call_id: string;
  /** uint64: a number here (frame counts stay far below 2^53). */
  frame_no: number;
  final: boolean;
  content_type: string;
  data: Buffer;
  summary: Buffer;
}

/** sw4rm.tool.ToolError as sent (the answer of Cancel). */
export interface ToolErrorMessage {
  call_id: string;
  error_code: string;
  message: string;
}

/**
 * The absolute path of `proto/sw4rm/tool.proto`: found by walking up from this
 * module, so it works from the sources (host/servers/grpc/) and from the build
 * (dist/host/servers/grpc/) alike.
 */
export function toolProtoPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, TOOL_PROTO_RELATIVE_PATH);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`toolhost: ${TOOL_PROTO_RELATIVE_PATH} was not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

let cached: PackageDefinition | undefined;

/** The loaded package definition (loaded once). */
export function loadToolPackageDefinition(): PackageDefinition {
  cached ??= loadSync(toolProtoPath(), { ...TOOL_PROTO_LOADER_OPTIONS });
  return cached;
}

/** Where a request that did not decode carries why (see `toolServiceDefinition`). */
const kMalformed = Symbol.for('toolhost.grpc.malformed-request');

/** Why a request did not decode as its message type, or undefined for a decoded one. */
export function malformedRequestReason(request: unknown): string | undefined {
  return typeof request === 'object' && request !== null ? (request as { [kMalformed]?: string })[kMalformed] : undefined;
}

/**
 * The ToolService definition, ready for `server.addService`. A request whose
 * bytes do not decode reaches the handler as a value saying why (so it is
 * answered INVALID_ARGUMENT with INVALID_INPUT), where grpc-js alone would
 * answer INTERNAL before any handler ran.
 */
export function toolServiceDefinition(): ServiceDefinition {
  const definition = loadToolPackageDefinition()[TOOL_SERVICE_NAME];
  if (definition === undefined || 'format' in definition) {
    throw new Error(`toolhost: ${TOOL_SERVICE_NAME} is missing from ${TOOL_PROTO_RELATIVE_PATH}`);
  }
  const service: ServiceDefinition = {};
  for (const [name, method] of Object.entries(definition as ServiceDefinition)) {
    const decode = method.requestDeserialize;
    service[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (error) {
          return { [kMalformed]: error instanceof Error ? error.message : String(error) };
        }
      },
    };
  }
  return service;
}
