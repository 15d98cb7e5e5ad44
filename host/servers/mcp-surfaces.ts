/**
 * The MCP side of components' prompts and resources (core/surfaces.ts):
 * `prompts/list`, `prompts/get`, `resources/list`, `resources/templates/list`,
 * `resources/read` and `completion/complete`, and
 * `notifications/prompts/list_changed` and `notifications/resources/list_changed`
 * when components that offer them load or unload.
 *
 * Only translation: every operation is a call of the component's surface tool
 * through the registry's call path (grant, budgets, audit, limits). Failures:
 * an unknown prompt, template or bad arguments are Invalid params (-32602); an
 * unknown resource is -32002 (the spec's Resource not found); anything else
 * the call ended with is Internal error (-32603). Each carries toolhost's
 * `{ code, message, details }` in `data`. `resources/subscribe` and
 * `unsubscribe` take a URI some component offers (listed, or matched by a
 * template; core/uri-template-match.ts, never the SDK's backtracking
 * `UriTemplate`); a subscribed URI gets `notifications/resources/updated` when the
 * components offering resources change (a load or an unload: the only changes
 * the host can see; a component cannot say that one of its resources
 * changed). Not offered: the gRPC ToolService (sw4rm's proto has no room for
 * prompts or resources).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CompleteRequestSchema,
  ErrorCode as McpErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type GetPromptResult,
  type ReadResourceResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { ToolhostError } from '../base/errors.js';
import type { CallOptions } from '../core/call/options.js';
import type { ComponentSurfaces } from '../core/surfaces.js';
import type { Logger } from '../base/logger.js';
import { McpWireError } from './mcp-wire-error.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** MCP's "Resource not found". */
const RESOURCE_NOT_FOUND = -32002;

export interface SurfaceHandlerOptions {
  /** The options every surface call of this request gets (signal, principal, tenant). */
  callOptions: (extra: Extra) => CallOptions;
  /** A `prompts/get`'s options, when they differ: with the session's client, so a prompt may ask its caller. */
  promptCallOptions?: (extra: Extra) => CallOptions;
  /** How long to gather changes before sending a list_changed notification (ms). */
  debounceMs: number;
  logger: Logger;
}

/**
 * Serve the registry's component prompts and resources on `server` (declares
 * the prompts, resources and completions capabilities). Returns the function
 * that stops listening for changes.
 */
export function serveSurfaces(server: Server, surfaces: ComponentSurfaces, options: SurfaceHandlerOptions): () => void {
  server.registerCapabilities({ prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {} });
  const run = async <T>(extra: Extra, work: (call: CallOptions) => Promise<T>): Promise<T> => {
    try {
      return await work(options.callOptions(extra));
    } catch (error) {
      throw toMcpError(error);
    }
  };

  server.setRequestHandler(ListPromptsRequestSchema, (_request, extra) => run(extra, async (call) => ({
    prompts: (await surfaces.listPrompts(call)).map(({ component: _component, guestName: _guest, ...prompt }) => prompt),
  })));
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    try {
      return (await surfaces.getPrompt(request.params.name, request.params.arguments ?? {}, (options.promptCallOptions ?? options.callOptions)(extra))) as GetPromptResult;
    } catch (error) {
      throw toMcpError(error);
    }
  });
  server.setRequestHandler(ListResourcesRequestSchema, (_request, extra) => run(extra, async (call) => ({
    resources: (await surfaces.listResources(call)).map(({ component: _component, ...resource }) => resource),
  })));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (_request, extra) => run(extra, async (call) => ({
    resourceTemplates: (await surfaces.listTemplates(call)).map(({ component: _component, ...template }) => template),
  })));
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => run(extra, async (call) => ({
    contents: (await surfaces.readResource(request.params.uri, call)) as ReadResourceResult['contents'],
  })));
  server.setRequestHandler(CompleteRequestSchema, (request, extra) => run(extra, async (call) => {
    const { ref, argument } = request.params;
    const target = ref.type === 'ref/prompt' ? { type: 'prompt' as const, name: ref.name } : { type: 'resource' as const, uri: ref.uri };
    return { completion: await surfaces.complete(target, argument.name, argument.value, call) };
  }));

  // This session's subscriptions (URIs some component offered when subscribed).
  const subscribed = new Set<string>();
  const offered = async (uri: string, call: CallOptions): Promise<void> => {
    if (await surfaces.ownerOf(uri, call) === undefined) {
      const shown = uri.length > 200 ? `${uri.slice(0, 200)}...` : uri;
      throw new ToolhostError('INVALID_INPUT', `no component offers the resource "${shown}"`, { details: { reason: 'unknown-resource', uri: shown } });
    }
  };
  server.setRequestHandler(SubscribeRequestSchema, (request, extra) => run(extra, async (call) => {
    await offered(request.params.uri, call);
    subscribed.add(request.params.uri);
    return {};
  }));
  server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) => run(extra, () => {
    subscribed.delete(request.params.uri);
    return Promise.resolve({});
  }));

  const pending = { prompts: false, resources: false };
  let timer: NodeJS.Timeout | undefined;
  const unsubscribe = surfaces.onChanged((kinds) => {
    pending.prompts ||= kinds.prompts;
    pending.resources ||= kinds.resources;
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      const { prompts, resources } = pending;
      pending.prompts = false;
      pending.resources = false;
      if (!server.transport) return;
      const failed = (error: unknown): void => options.logger.debug({ err: (error as Error).message }, 'mcp: could not send a list_changed notification');
      if (prompts) server.sendPromptListChanged().catch(failed);
      if (resources) server.sendResourceListChanged().catch(failed);
      if (resources) for (const uri of subscribed) server.sendResourceUpdated({ uri }).catch(failed);
    }, options.debounceMs);
    timer.unref?.();
  });
  return () => {
    unsubscribe();
    clearTimeout(timer);
    timer = undefined;
  };
}

/** A surface failure as a JSON-RPC error, with toolhost's code in `data`. */
function toMcpError(error: unknown): McpError {
  if (error instanceof McpError) return error;
  const failure = error instanceof ToolhostError ? error : new ToolhostError('INTERNAL', String((error as Error)?.message ?? error));
  const data = { code: failure.code, message: failure.message, ...(failure.details === undefined ? {} : { details: failure.details }) };
  const { reason, uri } = (failure.details ?? {}) as { reason?: unknown; uri?: unknown };
  // Resource not found names its URI in data (SEP-2164).
  if (reason === 'unknown-resource' && typeof uri === 'string') Object.assign(data, { uri });
  const rpcCode = reason === 'unknown-resource' ? RESOURCE_NOT_FOUND : failure.code === 'INVALID_INPUT' ? McpErrorCode.InvalidParams : McpErrorCode.InternalError;
  return new McpWireError(rpcCode, `${failure.code}: ${failure.message}`, data);
}
