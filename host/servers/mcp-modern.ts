/**
 * MCP 2026-07-28, the stateless revision, on the SDK v2
 * (`@modelcontextprotocol/server`): a per-request `Server` over the registry,
 * served by the SDK's `createMcpHandler` in its strict modern mode. The
 * 2025-era protocol (sessions, `initialize`) stays on mcp-server.ts;
 * mcp-http.ts routes each request with the SDK's own `isLegacyRequest`, so one
 * endpoint answers both and the version is negotiated as the spec says
 * (`server/discover`; a 2025 client's `initialize` never reaches this file).
 *
 * The same call path as 2025: `tools/list` is `listTools`, `tools/call` the
 * registry's one call path with the request's principal, tenant and label
 * ceiling (from the credentials mcp-http.ts checked, never from `_meta`), the
 * same `_meta` keys, and the same result shape (`toCallToolResult`).
 *
 * What a 2026-07-28 client gets differently:
 * - no session: every request is on its own, any host of a fleet can serve it;
 *   `toolhost/sessionId` in `_meta` names the agent's session when it has one;
 * - progress, deltas and log lines travel on the request's own response
 *   stream (the response is upgraded to SSE at the first of them);
 * - cancel: the client aborts its request (the connection closes), which
 *   aborts the call's signal; `toolhost_cancel` by call id works as before;
 * - the log level is the request's (`io.modelcontextprotocol/logLevel`),
 *   `logging/setLevel` has no lasting effect;
 * - a tool that asks its caller (sampling, elicitation) is parked: the request
 *   answers `input_required`, and the client's retry with the answer resumes
 *   the guest where it asked (mcp-input-required.ts); a retry whose
 *   `requestState` names no call of its caller's is a JSON-RPC error (-32602);
 *   a call that ends because its tool asked for a capability the request did
 *   not declare is -32021 MissingRequiredClientCapability (HTTP 400) naming it;
 * - `notifications/tools/list_changed` comes on `subscriptions/listen` streams,
 *   and so do the components' prompt and resource changes (mcp-modern-surfaces.ts:
 *   prompts, resources, templates, completion, as 2025 sessions get them).
 *
 * The same server serves stdio (mcp-stdio.ts, the SDK's `serveStdio`): there
 * one instance is pinned to the connection and sends its change notifications
 * itself (`modernServerFactory` with a `connection`), which the SDK's stdio
 * listen router puts on the client's listen subscriptions.
 */
import {
  createMcpHandler,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolResult,
  type LoggingLevel,
  type McpHttpHandler,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import type { CallOptions, CallStream } from '../core/call/options.js';
import type { ClientRequestKind } from '../core/client-requests.js';
import type { LogLevel, TerminalEvent, ToolEvent } from '../core/events.js';
import { CALLER_AUTH_KEY } from './auth/http-guard.js';
import { metaCallOptions } from './mcp-meta.js';
import { CallParking, driveCall, throwIfRelayedUnknownState, unknownState } from './mcp-input-required.js';
import { listTools, MCP_META_KEYS, outputSchemaOf, toCallToolResult, type McpServerOptions, type McpToolSource } from './mcp-server.js';
import { requestSpan, traceMcpRequests } from './mcp-trace.js';
import { ListenedUris, MODERN_SURFACE_CAPABILITIES, serveModernSurfaces } from './mcp-modern-surfaces.js';

/** The revision this file serves. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

export interface ModernMcpOptions extends Pick<McpServerOptions, 'serverInfo' | 'instructions' | 'worktree'> {
  /** The server's name and version (resolved by the caller: mcp-server.ts's default). */
  serverInfo: { name: string; version: string };
  /** Largest request body, in bytes (mcp-http.ts has read and capped it already; the SDK checks again). */
  maxBodyBytes: number;
  /** `subscriptions/listen` streams open at once on this host (the SDK refuses more in-band). */
  maxSubscriptions: number;
  /** Reporting of the SDK's out-of-band errors. */
  onerror?: (error: Error) => void;
  /** Calls parked for their client's answers (sampling, elicitation; default: this handler's own, 16 per principal). */
  parking?: CallParking;
}

/** The modern leg: the SDK handler, and what a graceful stop needs. */
export interface ModernMcp {
  readonly handler: McpHttpHandler;
  /** Note a `subscriptions/listen` request's resource URIs while its stream is open; returns the function that forgets them. */
  listen(body: unknown): () => void;
  /** `tools/call` requests running. */
  readonly inFlight: number;
  /** Take no new calls (they get an OVERLOADED result); resolves when those running end or `ms` passes. */
  drain(ms: number): Promise<void>;
  close(): Promise<void>;
}

const TO_MCP_LEVEL: Record<LogLevel, LoggingLevel> = { trace: 'debug', debug: 'debug', info: 'info', warn: 'warning', error: 'error' };
const PROGRESS_STEP = 0.001;

/** Calls in flight on the modern leg, for a graceful stop (one per handler, or per stdio connection), and those parked for their client's answers. */
export interface ModernCallState {
  inFlight: number;
  draining: boolean;
  idle: Set<() => void>;
  parking: CallParking;
}

/** A connection-pinned instance (stdio): it sends its change notifications itself; `listened` names the URIs to announce. */
export interface ModernConnection {
  listened: ListenedUris;
  debounceMs: number;
}

/**
 * A 2026-07-28 `Server` over `registry`: tools, logging, and the components' prompts and resources when the
 * registry has surfaces. With `connection`, the instance sends list changes and resource updates on its own
 * connection until it closes.
 */
export function modernServerFactory(
  registry: McpToolSource,
  options: Pick<ModernMcpOptions, 'serverInfo' | 'instructions' | 'worktree'>,
  state: ModernCallState,
  connection?: ModernConnection,
): () => Server {
  return () => {
    const server = new Server(options.serverInfo, {
      capabilities: { tools: { listChanged: true }, logging: {}, ...(registry.surfaces === undefined ? {} : MODERN_SURFACE_CAPABILITIES) },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    });
    // Traced: every request a server span (mcp-trace.ts); a stdio connection's requests come with no HTTP request.
    const tracer = registry.tracer;
    if (tracer !== undefined) {
      traceMcpRequests(server, tracer, (context) => {
        const req = (context as ServerContext).http?.req;
        return {
          ...(req === undefined ? {} : { header: (name: string) => req.headers.get(name) ?? undefined }),
          protocolVersion: MODERN_PROTOCOL_VERSION,
          transport: req === undefined ? 'pipe' : 'tcp',
        };
      });
    }
    if (registry.surfaces !== undefined) serveModernSurfaces(server, registry.surfaces, surfaceCallOptions, state.parking);
    if (connection !== undefined) pushChanges(server, registry, connection);
    server.setRequestHandler('tools/list', () => ({ tools: listTools(registry) as Tool[] }));
    server.setRequestHandler('tools/call', (request, ctx) => callTool(registry, options, state, request, ctx));
    return server;
  };
}

/** The 2026-07-28 handler over `registry`. */
export function createModernMcp(registry: McpToolSource, options: ModernMcpOptions): ModernMcp {
  const state: ModernCallState = { inFlight: 0, draining: false, idle: new Set(), parking: options.parking ?? new CallParking() };
  const listened = new ListenedUris();
  const factory = modernServerFactory(registry, options, state);

  const handler = createMcpHandler(factory, {
    legacy: 'reject',
    responseMode: 'auto',
    maxRequestBodySize: options.maxBodyBytes,
    maxSubscriptions: options.maxSubscriptions,
    ...(options.onerror === undefined ? {} : { onerror: options.onerror }),
  });
  const unsubscribe = registry.onToolsChanged(() => handler.notify.toolsChanged());
  const unsubscribeSurfaces = registry.surfaces?.onChanged((kinds) => {
    if (kinds.prompts) handler.notify.promptsChanged();
    if (kinds.resources) {
      handler.notify.resourcesChanged();
      for (const uri of listened.uris()) handler.notify.resourceUpdated(uri);
    }
  });

  return {
    handler,
    listen: (body) => listened.listen(body),
    get inFlight() {
      return state.inFlight;
    },
    async drain(ms) {
      await drainModern(state, ms);
    },
    async close() {
      state.draining = true;
      unsubscribe();
      unsubscribeSurfaces?.();
      await handler.close();
    },
  };
}

/** One `tools/call`: the registry's call path, parked while its tool waits for the client's answers (mcp-input-required.ts). */
async function callTool(
registry: McpToolSource,
options: Pick<ModernMcpOptions, 'worktree'>,
state: ModernCallState,
request: { params: { name: string; arguments?: Record<string, unknown> } },
ctx: ServerContext,
): Promise<CallToolResult> {
  const { name, arguments: args = {} } = request.params;
  const hasOutputSchema = outputSchemaOf(registry, name) !== undefined;
  if (state.draining) return overloaded(hasOutputSchema);
  let call: CallOptions;
  try {
    call = callOptionsOf(name, ctx, options);
  } catch (error) {
    return toCallToolResult(rejection('INVALID_INPUT', (error as Error).message), hasOutputSchema) as CallToolResult;
  }
  // Traced: the request's server span is the call's span.
  const span = requestSpan(ctx);
  if (span !== undefined) call.span = span;
  state.inFlight += 1;
  try {
    // A tool that asks its caller parks until the client's retry answers (mcp-input-required.ts).
    const leg = driveCall(state.parking, 'tools/call', call, ctx, (client, signal) => registry.stream(name, args, { ...call, signal, client }));
    // A requestState that names no call of this caller's is a protocol error, not a tool's result (SEP-2322:
    // state that fails verification MUST be rejected with a JSON-RPC error).
    if (!leg.ok) throw unknownState(leg.message);
    const terminal = await forward(leg.leg.events, name, ctx);
    const asked = leg.leg.inputRequired();
    if (asked !== undefined) return asked as unknown as CallToolResult;
    throwIfRelayedUnknownState(terminal, ctx);
    if (terminal.type === 'error' && terminal.code === 'TOOL_NOT_FOUND' && terminal.stage === 'rejected') {
      const data = { code: terminal.code, message: terminal.message, ...(terminal.details === undefined ? {} : { details: terminal.details }), callId: terminal.callId };
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `TOOL_NOT_FOUND: ${terminal.message}`, data);
    }
    const missing = missingCapabilityOf(terminal);
    if (missing !== undefined) {
      // SEP-2575: a request that needs a capability its client did not declare ends -32021 (HTTP 400), naming it.
      throw new MissingRequiredClientCapabilityError({ requiredCapabilities: REQUIRED_CAPABILITY[missing] }, `CLIENT_UNSUPPORTED: ${terminal.type === 'error' ? terminal.message : ''} (call ${terminal.callId})`);
    }
    return toCallToolResult(terminal, hasOutputSchema) as CallToolResult;
  } finally {
    state.inFlight -= 1;
    if (state.inFlight === 0) for (const done of [...state.idle]) done();
  }
}

/**
 * The client capability a call ended for want of: its terminal is the host's CLIENT_UNSUPPORTED refusal of the
 * tool's sampling or elicitation request (core/call/refusals.ts: only a refusal the host really gave this call),
 * which on this leg means the request's `clientCapabilities` did not declare it.
 */
/** The capability each kind of request needs the client to have declared (SEP-2575's `requiredCapabilities`). */
const REQUIRED_CAPABILITY: Record<ClientRequestKind, Record<string, unknown>> = {
  sampling: { sampling: {} },
  elicitation: { elicitation: { form: {} } },
  roots: { roots: {} },
};

function missingCapabilityOf(terminal: TerminalEvent): ClientRequestKind | undefined {
  if (terminal.type !== 'error' || terminal.code !== 'CLIENT_UNSUPPORTED') return undefined;
  const reason = (terminal.details as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' && Object.hasOwn(REQUIRED_CAPABILITY, reason) ? (reason as ClientRequestKind) : undefined;
}

/** Take no new calls; resolve when those running end or `ms` passes. */
export async function drainModern(state: ModernCallState, ms: number): Promise<void> {
  state.draining = true;
  if (state.inFlight === 0 || ms <= 0) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      state.idle.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref?.();
    state.idle.add(done);
  });
}

/** Send the registry's list changes on a pinned instance's own connection (stdio), until it closes. */
function pushChanges(server: Server, registry: McpToolSource, connection: ModernConnection): void {
  const pending = { tools: false, prompts: false, resources: false };
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      const { tools, prompts, resources } = pending;
      pending.tools = pending.prompts = pending.resources = false;
      if (!server.transport) return;
      const failed = (): void => undefined;
      if (tools) server.sendToolListChanged().catch(failed);
      if (prompts) server.sendPromptListChanged().catch(failed);
      if (resources) {
        server.sendResourceListChanged().catch(failed);
        for (const uri of connection.listened.uris()) server.sendResourceUpdated({ uri }).catch(failed);
      }
    }, connection.debounceMs);
    timer.unref?.();
  };
  const stopTools = registry.onToolsChanged(() => {
    pending.tools = true;
    schedule();
  });
  const stopSurfaces = registry.surfaces?.onChanged((kinds) => {
    pending.prompts ||= kinds.prompts;
    pending.resources ||= kinds.resources;
    schedule();
  });
  const previous = server.onclose;
  server.onclose = () => {
    stopTools();
    stopSurfaces?.();
    clearTimeout(timer);
    previous?.();
  };
}

function overloaded(hasOutputSchema: boolean): CallToolResult {
  return toCallToolResult(rejection('OVERLOADED', 'the server is shutting down and takes no new calls'), hasOutputSchema) as CallToolResult;
}

/** A call refused before it started, as a terminal event (for `toCallToolResult`). */
function rejection(code: 'INVALID_INPUT' | 'OVERLOADED', message: string, details?: Record<string, unknown>): TerminalEvent {
  return { type: 'error', callId: '', code, message, ...(details === undefined ? {} : { details }), stage: 'rejected', accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 } };
}

/** Who is calling (its credentials: principal, tenant, ceiling; never `_meta`), and the request's signal. */
function callerOptionsOf(ctx: ServerContext): CallOptions {
  const call: CallOptions = { signal: ctx.mcpReq.signal };
  const caller = ctx.http?.authInfo?.extra?.[CALLER_AUTH_KEY] as Pick<CallOptions, 'principal' | 'tenant' | 'labelCeiling'> | undefined;
  if (caller?.principal !== undefined) call.principal = caller.principal;
  if (caller?.tenant !== undefined) call.tenant = caller.tenant;
  if (caller?.labelCeiling !== undefined) call.labelCeiling = caller.labelCeiling;
  return call;
}

/** A surface request's calls: its caller's, each traced as an `execute_tool` span under the request's server span. */
function surfaceCallOptions(ctx: ServerContext): CallOptions {
  const call = callerOptionsOf(ctx);
  const span = requestSpan(ctx);
  if (span !== undefined) call.trace = span.carrier();
  return call;
}

/** The call's options from the request: its credentials (principal, tenant, ceiling) and its `_meta`. */
function callOptionsOf(name: string, ctx: ServerContext, options: Pick<ModernMcpOptions, 'worktree'>): CallOptions {
  const call = callerOptionsOf(ctx);
  Object.assign(call, metaCallOptions(ctx.mcpReq._meta ?? {}));
  const worktree = options.worktree?.(name);
  if (worktree !== undefined) call.workingDir = worktree;
  return call;
}

/** The call's events as notifications on the request's stream; returns its terminal event. */
async function forward(stream: CallStream, tool: string, ctx: ServerContext): Promise<TerminalEvent> {
  const token = ctx.mcpReq._meta?.progressToken;
  const progressToken = typeof token === 'string' || typeof token === 'number' ? token : undefined;
  let progress = -1;
  const next = (pct: number | undefined): { progress: number; total: number } => {
    progress = pct !== undefined && pct > progress ? pct : Math.round((Math.max(progress, 0) + PROGRESS_STEP) * 1e6) / 1e6;
    // Never past its total (a delta after 100% reads 100.001 of 100.001).
    return { progress, total: Math.max(100, progress) };
  };
  const quietly = async (send: () => Promise<void>): Promise<void> => {
    try {
      await send();
    } catch {
      // The client went away; its signal cancels the call, which still ends with a terminal event.
    }
  };
  for await (const event of stream as AsyncIterable<ToolEvent>) {
    switch (event.type) {
      case 'progress':
        if (progressToken === undefined) break;
        await quietly(() => ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, ...next(event.pct), ...(event.message === undefined ? {} : { message: event.message }) },
        }));
        break;
      case 'delta':
        if (progressToken === undefined) break;
        await quietly(() => ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, ...next(undefined), message: JSON.stringify(event.data) ?? 'null', _meta: { [MCP_META_KEYS.delta]: true } },
        }));
        break;
      case 'log':
        await quietly(() => ctx.mcpReq.log(TO_MCP_LEVEL[event.level], { callId: event.callId, source: event.source, message: event.message }, tool));
        break;
      case 'result':
      case 'error':
        return event;
      default:
        break;
    }
  }
  return { type: 'error', callId: stream.callId, code: 'INTERNAL', message: 'the call ended without a terminal event', stage: 'run', accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 } };
}
