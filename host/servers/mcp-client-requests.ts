/**
 * The MCP side of a tool's requests to its caller: `sampling/createMessage`,
 * `elicitation/create` (form mode) and `roots/list` sent to the client that made the
 * `tools/call`, as requests related to it (over Streamable HTTP they travel
 * on that call's stream), and a call result's content blocks as MCP content.
 *
 * Only translation: which tool may ask, how often and how much is decided by
 * the call path (core/call/client-gate.ts). A client that did not declare a
 * capability gets no hook for it, so the tool is told CLIENT_UNSUPPORTED
 * without a request being sent.
 *
 * The wait for the client's answer is bounded by the call (its signal aborts
 * the request when the call is cancelled or runs out of its wall budget),
 * not by the SDK's default 60 s request timeout.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  type CallToolResult,
  type ElicitRequest as McpElicitRequest,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallClient, ElicitResult, ListRootsResult, SamplingResult } from '../core/client-requests.js';
import type { ContentBlock } from '../core/result.js';

/** How long a request to the client may wait at most, whatever the call's budget (the call's signal ends it sooner). */
const CLIENT_REQUEST_TIMEOUT_MS = 24 * 60 * 60 * 1000;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The hooks for the client that sent this request: one per capability it declared. */
export function clientHooks(server: Server, extra: Extra): CallClient {
  const capabilities = server.getClientCapabilities() ?? {};
  const hooks: CallClient = {};
  if (capabilities.sampling !== undefined) {
    hooks.sample = async (request, { signal }) => {
      const result = await extra.sendRequest({ method: 'sampling/createMessage', params: { ...request } }, CreateMessageResultSchema, { signal, timeout: CLIENT_REQUEST_TIMEOUT_MS });
      return result as SamplingResult;
    };
  }
  // Form mode: a client that declares `elicitation` without modes supports the form mode (MCP 2025-11-25).
  const elicitation = capabilities.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined)) {
    hooks.elicit = async (request, { signal }) => {
      const result = await extra.sendRequest({ method: 'elicitation/create', params: { ...request } as McpElicitRequest['params'] }, ElicitResultSchema, { signal, timeout: CLIENT_REQUEST_TIMEOUT_MS });
      const answer: ElicitResult = { action: result.action };
      if (result.content !== undefined) answer.content = result.content as Record<string, unknown>;
      return answer;
    };
  }
  if (capabilities.roots !== undefined) {
    hooks.listRoots = async ({ signal }) => {
      const result = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { signal, timeout: CLIENT_REQUEST_TIMEOUT_MS });
      return { roots: result.roots.map((root) => ({ uri: root.uri, ...(root.name === undefined ? {} : { name: root.name }) })) } satisfies ListRootsResult;
    };
  }
  return hooks;
}

/** A result's content block as MCP content. */
export function toMcpContent(block: ContentBlock): CallToolResult['content'][number] {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
    case 'audio':
      return { type: block.type, data: block.data, mimeType: block.mimeType };
    case 'resource_link':
      return { ...block };
    case 'resource':
      return { type: 'resource', resource: { ...block.resource } };
  }
}
