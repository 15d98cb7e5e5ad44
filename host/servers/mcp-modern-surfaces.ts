/**
 * Components' prompts and resources on the 2026-07-28 leg (SDK v2 `Server`),
 * the same operations mcp-surfaces.ts serves to 2025 sessions: `prompts/list`,
 * `prompts/get`, `resources/list`, `resources/templates/list`,
 * `resources/read` and `completion/complete`, each a call of the component's
 * surface tool through the registry's call path under the request's caller.
 *
 * What differs from 2025 is the revision's, not toolhost's: there is no
 * `resources/subscribe`; a client names the URIs it wants
 * `notifications/resources/updated` for in its `subscriptions/listen` filter
 * (`resourceSubscriptions`), and list changes travel on those listen streams
 * (the SDK's listen router stamps and filters them). {@link ListenedUris}
 * keeps which URIs open listen streams named, so a change of the resources
 * is announced for exactly those (bounded: {@link MAX_LISTENED_URIS} per
 * stream, longer URIs ignored). Resource not found is -32602 on this revision
 * (the SDK's codec maps -32002), with toolhost's code in `data` as on 2025.
 */
import { ProtocolError, ProtocolErrorCode, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { ToolhostError } from '../base/errors.js';
import type { CallOptions } from '../core/call/options.js';
import { promptResultOf, type ComponentSurfaces } from '../core/surfaces.js';
import { isTerminal, type TerminalEvent } from '../core/events.js';
import type { CallStream } from '../core/call/options.js';
import { driveCall, throwIfRelayedUnknownState, unknownState, type CallParking } from './mcp-input-required.js';

/** MCP's "Resource not found" (the 2026 codec sends it as -32602). */
const RESOURCE_NOT_FOUND = -32002;
/** URIs taken from one listen stream's `resourceSubscriptions` (the rest are not announced). */
export const MAX_LISTENED_URIS = 256;
/** Longest URI kept from a listen filter (the surfaces refuse longer ones anyway). */
const MAX_LISTENED_URI_LENGTH = 4096;

/** The capabilities the surfaces add to a modern server. */
export const MODERN_SURFACE_CAPABILITIES = { prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {} } as const;

/**
 * Register the surface handlers on `server`; `callOptions` gives each request's caller. With `parking`, a prompt
 * whose guest asks its caller (sampling, elicitation) parks as a tool call does, and `prompts/get` answers
 * input_required; the client's retry (`prompts/get` with `inputResponses` and the `requestState`) resumes it.
 */
export function serveModernSurfaces(server: Server, surfaces: ComponentSurfaces, callOptions: (ctx: ServerContext) => CallOptions, parking?: CallParking): void {
  const run = async <T>(ctx: ServerContext, work: (call: CallOptions) => Promise<T>): Promise<T> => {
    try {
      return await work(callOptions(ctx));
    } catch (error) {
      throw toProtocolError(error);
    }
  };
  server.setRequestHandler('prompts/list', (_request, ctx) => run(ctx, async (call) => ({
    prompts: (await surfaces.listPrompts(call)).map(({ component: _component, guestName: _guest, ...prompt }) => prompt),
  })));
  server.setRequestHandler('prompts/get', (request, ctx) => run(ctx, async (call) => {
    const prompt = await surfaces.prompt(request.params.name, request.params.arguments ?? {}, call);
    if (parking === undefined) return promptResultOf(await prompt.start(call).terminal()) as never;
    const leg = driveCall(parking, 'prompts/get', call, ctx, (client, signal) => prompt.start({ ...call, signal, client }));
    if (!leg.ok) throw unknownState(leg.message);
    const terminal = await terminalOf(leg.leg.events);
    const asked = leg.leg.inputRequired();
    if (asked !== undefined) return asked as never;
    throwIfRelayedUnknownState(terminal, ctx);
    return promptResultOf(terminal) as never;
  }));
  server.setRequestHandler('resources/list', (_request, ctx) => run(ctx, async (call) => ({
    resources: (await surfaces.listResources(call)).map(({ component: _component, ...resource }) => resource),
  })));
  server.setRequestHandler('resources/templates/list', (_request, ctx) => run(ctx, async (call) => ({
    resourceTemplates: (await surfaces.listTemplates(call)).map(({ component: _component, ...template }) => template),
  })));
  server.setRequestHandler('resources/read', (request, ctx) => run(ctx, async (call) => ({
    contents: (await surfaces.readResource(request.params.uri, call)) as never,
  })));
  server.setRequestHandler('completion/complete', (request, ctx) => run(ctx, async (call) => {
    const { ref, argument } = request.params;
    const target = ref.type === 'ref/prompt' ? { type: 'prompt' as const, name: ref.name } : { type: 'resource' as const, uri: ref.uri };
    return { completion: { ...(await surfaces.complete(target, argument.name, argument.value, call)) } };
  }));
}

/** The URIs open `subscriptions/listen` streams asked to hear about, counted per stream. */
export class ListenedUris {
  readonly #counts = new Map<string, number>();

  /** Note a listen request's `resourceSubscriptions`; returns the function that forgets them (when its stream ends). */
  listen(body: unknown): () => void {
    const uris = listenedUrisOf(body);
    for (const uri of uris) this.#counts.set(uri, (this.#counts.get(uri) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      for (const uri of uris) {
        const left = (this.#counts.get(uri) ?? 1) - 1;
        if (left <= 0) this.#counts.delete(uri);
        else this.#counts.set(uri, left);
      }
    };
  }

  /** The URIs some open stream listens to. */
  uris(): string[] {
    return [...this.#counts.keys()];
  }
}

/** The distinct URIs of a `subscriptions/listen` request's `params.notifications.resourceSubscriptions` (capped). */
export function listenedUrisOf(body: unknown): string[] {
  const params = (body as { params?: unknown } | null)?.params;
  const notifications = (params as { notifications?: unknown } | null | undefined)?.notifications;
  const list = (notifications as { resourceSubscriptions?: unknown } | null | undefined)?.resourceSubscriptions;
  if (!Array.isArray(list)) return [];
  const uris = new Set<string>();
  for (const uri of list.slice(0, MAX_LISTENED_URIS)) if (typeof uri === 'string' && uri.length <= MAX_LISTENED_URI_LENGTH) uris.add(uri);
  return [...uris];
}

/** A surface failure as a JSON-RPC error with toolhost's `{ code, message, details }` in `data`. */
function toProtocolError(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const failure = error instanceof ToolhostError ? error : new ToolhostError('INTERNAL', String((error as Error)?.message ?? error));
  const data = { code: failure.code, message: failure.message, ...(failure.details === undefined ? {} : { details: failure.details }) };
  const { reason, uri } = (failure.details ?? {}) as { reason?: unknown; uri?: unknown };
  // Resource not found names its URI in data (SEP-2164).
  if (reason === 'unknown-resource' && typeof uri === 'string') Object.assign(data, { uri });
  const rpcCode = reason === 'unknown-resource' ? RESOURCE_NOT_FOUND : failure.code === 'INVALID_INPUT' ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError;
  return new ProtocolError(rpcCode, `${failure.code}: ${failure.message}`, data);
}

/** A leg's last event: its terminal, or none when the leg ended asking (its events end before the call does). */
async function terminalOf(events: CallStream): Promise<TerminalEvent> {
  let terminal: TerminalEvent | undefined;
  for await (const event of events) if (isTerminal(event)) terminal = event;
  return terminal ?? { type: 'error', callId: events.callId, code: 'INTERNAL', message: 'the call ended without a terminal event', stage: 'run', accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 } };
}
