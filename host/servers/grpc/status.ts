/**
 * toolhost error codes → gRPC status codes, for calls refused before their
 * tool ran (a call that started and failed ends with a final frame instead).
 *
 * The status message is `CODE: message`; the trailing metadata carries the
 * code in `toolhost-error-code`, the call's id in `toolhost-call-id`, and the
 * details (when there are any) as JSON in `toolhost-error-details-bin`.
 *
 * Choices beyond the obvious ones:
 * - WORKTREE_NOT_BOUND → FAILED_PRECONDITION: the caller is not refused for
 *   who it is or what it asked; the host is not in the state the call needs
 *   (no worktree bound), and binding one fixes it (gRPC's own rule for
 *   FAILED_PRECONDITION).
 * - OVERLOADED → RESOURCE_EXHAUSTED (the queue is full; retry later).
 * - The codes that only end a running call map to their nearest status, in
 *   case one ever reaches a rejection: timeouts → DEADLINE_EXCEEDED, budgets
 *   and output limits → RESOURCE_EXHAUSTED, a crash → UNAVAILABLE (transient),
 *   a tool's own error → UNKNOWN.
 */
import { Metadata, status as GrpcStatus, type ServerErrorResponse } from '@grpc/grpc-js';
import type { ErrorCode, ToolErrorData } from '../../base/errors.js';

export const ERROR_CODE_METADATA_KEY = 'toolhost-error-code';
export const ERROR_DETAILS_METADATA_KEY = 'toolhost-error-details-bin';
export const CALL_ID_METADATA_KEY = 'toolhost-call-id';

export const GRPC_STATUS_BY_ERROR_CODE: Readonly<Record<ErrorCode, GrpcStatus>> = Object.freeze({
  TOOL_NOT_FOUND: GrpcStatus.NOT_FOUND,
  INVALID_INPUT: GrpcStatus.INVALID_ARGUMENT,
  PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  TOOL_PRIVILEGE_ESCALATION: GrpcStatus.PERMISSION_DENIED,
  NETWORK_DENIED: GrpcStatus.PERMISSION_DENIED,
  WORKTREE_NOT_BOUND: GrpcStatus.FAILED_PRECONDITION,
  OVERLOADED: GrpcStatus.RESOURCE_EXHAUSTED,
  INTERNAL: GrpcStatus.INTERNAL,
  COMPONENT_INVALID: GrpcStatus.FAILED_PRECONDITION,
  SOURCE_UNTRUSTED: GrpcStatus.FAILED_PRECONDITION,
  SOURCE_INTEGRITY: GrpcStatus.FAILED_PRECONDITION,
  SOURCE_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  CANCELLED: GrpcStatus.CANCELLED,
  TOOL_TIMEOUT: GrpcStatus.DEADLINE_EXCEEDED,
  WALL_TIMEOUT: GrpcStatus.DEADLINE_EXCEEDED,
  CPU_BUDGET_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  MEMORY_LIMIT_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  OUTPUT_LIMIT_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  TOOL_CRASHED: GrpcStatus.UNAVAILABLE,
  TOOL_ERROR: GrpcStatus.UNKNOWN,
  CLIENT_UNSUPPORTED: GrpcStatus.UNIMPLEMENTED,
  FLEET_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
});

/** The gRPC status of a refused call. */
export function grpcStatusOf(code: ErrorCode): GrpcStatus {
  return GRPC_STATUS_BY_ERROR_CODE[code] ?? GrpcStatus.UNKNOWN;
}

/** A refused call as the error a grpc-js handler answers with (unary callback or `stream.emit('error')`). */
export function toServiceError(error: ToolErrorData, callId?: string): ServerErrorResponse {
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_METADATA_KEY, error.code);
  const id = callId ?? error.callId;
  if (id) metadata.set(CALL_ID_METADATA_KEY, asciiHeader(id));
  if (error.details !== undefined) {
    const json = safeJson(error.details);
    if (json !== undefined) metadata.set(ERROR_DETAILS_METADATA_KEY, Buffer.from(json, 'utf8'));
  }
  const details = `${error.code}: ${error.message}`;
  return Object.assign(new Error(details), { code: grpcStatusOf(error.code), details, metadata });
}

/** Header values must be printable ASCII: anything else is percent-encoded. */
function asciiHeader(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
