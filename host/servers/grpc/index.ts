/** The gRPC ToolService (sw4rm.tool, proto3): `startGrpcServer`, and its parts for custom servers. */
export { DEFAULT_GRPC_HOST, DEFAULT_GRPC_PORT, startGrpcServer } from './server.js';
export type { GrpcServerHandle, GrpcServerOptions } from './server.js';
export { createToolServiceHandlers } from './service.js';
export type { GrpcToolSource, ToolServiceHandlers, ToolServiceOptions } from './service.js';
export {
  TOOL_PROTO_LOADER_OPTIONS,
  TOOL_PROTO_PACKAGE,
  TOOL_PROTO_RELATIVE_PATH,
  TOOL_SERVICE_NAME,
  loadToolPackageDefinition,
  toolProtoPath,
  toolServiceDefinition,
} from './proto.js';
export type { DurationMessage, ExecutionPolicyMessage, ToolCallMessage, ToolErrorMessage, ToolFrameMessage } from './proto.js';
export { toPolicyInput } from './policy.js';
export { FrameBuilder, JSON_CONTENT_TYPE, TEXT_CONTENT_TYPE, frameSummary, resultData, toFrame } from './frames.js';
export { AGENT_NAME_METADATA_KEY, CONVERSATION_ID_METADATA_KEY, SESSION_ID_METADATA_KEY, parseArgs, parseToolCall, requestCallId } from './call-request.js';
export type { ParsedToolCall } from './call-request.js';
export { CALL_ID_METADATA_KEY, ERROR_CODE_METADATA_KEY, ERROR_DETAILS_METADATA_KEY, GRPC_STATUS_BY_ERROR_CODE, grpcStatusOf, toServiceError } from './status.js';
