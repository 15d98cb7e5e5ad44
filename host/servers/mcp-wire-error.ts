/**
 * A JSON-RPC error for the 2025-era SDK (1.x) whose message goes on the wire as
 * written. The SDK's `McpError` puts `MCP error <code>: ` in front of its message,
 * and its server sends that message, so a 1.x client (which prefixes again) showed
 * `MCP error -32602: MCP error -32602: TOOL_NOT_FOUND: ...`. Still an `McpError`
 * (same `code` and `data`) for every check made on it.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';

export class McpWireError extends McpError {
  constructor(code: number, message: string, data?: unknown) {
    super(code, message, data);
    this.message = message;
  }
}
