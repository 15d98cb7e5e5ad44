/**
 * `toolhost_cancel`: cancel a call by id wherever it runs in the fleet, for
 * MCP clients (gRPC has its own Cancel). Registered when the host is in a
 * fleet: an MCP client that chose its call's id (`_meta["toolhost/callId"]`)
 * can cancel it through any host, not only the one holding its session.
 */
import type { ToolRegistry } from '../core/registry.js';
import { defineNativeTool } from '../core/tool.js';

export const CANCEL_TOOL = 'toolhost_cancel';

export function registerFleetTools(registry: ToolRegistry): void {
  registry.register(defineNativeTool({
    name: CANCEL_TOOL,
    description: 'Cancel a call by its id on whichever host of the fleet runs it. Answers {"outcome": "CANCELLED" | "NOT_FOUND" | "ALREADY_COMPLETED"}.',
    inputSchema: {
      type: 'object',
      properties: { call_id: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[\\x21-\\x7e]+$', description: 'The id of the call to cancel (visible ASCII, as every call id).' } },
      required: ['call_id'],
      additionalProperties: false,
    },
    idempotent: true,
    async run(args, ctx) {
      const { call_id: callId } = args as { call_id: string };
      // Call ids are per principal: the caller reaches only its own calls (as over gRPC), here and fleet-wide.
      return { call_id: callId, outcome: await registry.cancelAnywhere(callId, ctx.principal, ctx.span) };
    },
  }));
}
