/**
 * `toolhost/servers`: serve a registry's tools over MCP (stdio or Streamable
 * HTTP) and the gRPC ToolService, and import another MCP server's tools. These
 * load the MCP SDK and grpc-js, which is why they are a subpath of their own;
 * `toolhost serve` is built from the same pieces.
 */
export { createMcpServer } from './mcp-server.js';
export type { McpServerOptions, McpToolSource } from './mcp-server.js';
export { startMcpHttpServer } from './mcp-http.js';
export type { McpHttpServer, McpHttpServerOptions } from './mcp-http.js';
export { serveMcpStdio } from './mcp-stdio.js';
export type { McpStdioOptions, McpStdioServer } from './mcp-stdio.js';
export { importMcpServer } from '../tools/mcp-import.js';
export type { McpImport, McpImportOptions } from '../tools/mcp-import.js';
export { createMetrics } from './metrics.js';
export type { HostMetrics, MetricsOptions } from './metrics.js';
export { DEFAULT_GRPC_HOST, DEFAULT_GRPC_PORT, startGrpcServer } from './grpc/index.js';
export type { GrpcServerHandle, GrpcServerOptions } from './grpc/index.js';
