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
 *   the guest where it asked (mcp-input-required.ts);
 * - `notifications/tools/list_changed` comes on `subscriptions/listen` streams.
 */
import {
  createMcpHandler,
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
import type { LogLevel, TerminalEvent, ToolEvent } from '../core/events.js';
import { CALLER_AUTH_KEY } from './auth/http-guard.js';
import { metaCallOptions } from './mcp-meta.js';
import { CallParking, driveCall } from './mcp-input-required.js';
import { listTools, MCP_META_KEYS, toCallToolResult, type McpServerOptions, type McpToolSource } from './mcp-server.js';
import { endMcpServerSpan, openMcpServerSpan } from './mcp-trace.js';
import type { TraceSpan } from '../core/tracing.js';

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
  /** `tools/call` requests running. */
  readonly inFlight: number;
  /** Take no new calls (they get an OVERLOADED result); resolves when those running end or `ms` passes. */
  drain(ms: number): Promise<void>;
  close(): Promise<void>;
}

const TO_MCP_LEVEL: Record<LogLevel, LoggingLevel> = { trace: 'debug', debug: 'debug', info: 'info', warn: 'warning', error: 'error' };
const PROGRESS_STEP = 0.001;

/** The 2026-07-28 handler over `registry`. */
export function createModernMcp(registry: McpToolSource, options: ModernMcpOptions): ModernMcp {
  let inFlight = 0;
  let draining = false;
  const idle = new Set<() => void>();
  const parking = options.parking ?? new CallParking();

  const factory = (): Server => {
    const server = new Server(options.serverInfo, {
      capabilities: { tools: { listChanged: true }, logging: {} },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    });
    server.setRequestHandler('tools/list', () => ({ tools: listTools(registry) as Tool[] }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const tracer = registry.tracer;
      if (tracer === undefined) return callTool(request, ctx, undefined);
      const req = ctx.http?.req;
      const span = openMcpServerSpan(tracer, {
        method: 'tools/call',
        target: request.params.name,
        ...(ctx.mcpReq._meta === undefined ? {} : { meta: ctx.mcpReq._meta as Record<string, unknown> }),
        ...(req === undefined ? {} : { header: (name: string) => req.headers.get(name) ?? undefined }),
        requestId: ctx.mcpReq.id,
        protocolVersion: MODERN_PROTOCOL_VERSION,
        transport: 'tcp',
      });
      try {
        const result = await callTool(request, ctx, span);
        endMcpServerSpan(span, result as { isError?: boolean; _meta?: Record<string, unknown> });
        return result;
      } catch (error) {
        endMcpServerSpan(span, undefined, error as { code?: unknown; data?: unknown });
        throw error;
      }
    });
    return server;
  };

  const callTool = async (request: { params: { name: string; arguments?: Record<string, unknown> } }, ctx: ServerContext, span: TraceSpan | undefined): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    const hasOutputSchema = outputSchemaOf(registry, name) !== undefined;
    if (draining) return overloaded(hasOutputSchema);
    let call: CallOptions;
    try {
      call = callOptionsOf(name, ctx, options);
    } catch (error) {
      return toCallToolResult(rejection('INVALID_INPUT', (error as Error).message), hasOutputSchema) as CallToolResult;
    }
    if (span !== undefined) call.span = span;
    inFlight += 1;
    try {
      // A tool that asks its caller parks until the client's retry answers (mcp-input-required.ts).
      const leg = driveCall(parking, name, call, ctx, (client, signal) => registry.stream(name, args, { ...call, signal, client }));
      if (!leg.ok) return toCallToolResult(rejection(leg.code, leg.message, { reason: leg.reason }), hasOutputSchema) as CallToolResult;
      const terminal = await forward(leg.leg.events, name, ctx);
      const asked = leg.leg.inputRequired();
      if (asked !== undefined) return asked as unknown as CallToolResult;
      if (terminal.type === 'error' && terminal.code === 'TOOL_NOT_FOUND' && terminal.stage === 'rejected') {
        const data = { code: terminal.code, message: terminal.message, ...(terminal.details === undefined ? {} : { details: terminal.details }), callId: terminal.callId };
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `TOOL_NOT_FOUND: ${terminal.message}`, data);
      }
      return toCallToolResult(terminal, hasOutputSchema) as CallToolResult;
    } finally {
      inFlight -= 1;
      if (inFlight === 0) for (const done of [...idle]) done();
    }
  };

  const handler = createMcpHandler(factory, {
    legacy: 'reject',
    responseMode: 'auto',
    maxRequestBodySize: options.maxBodyBytes,
    maxSubscriptions: options.maxSubscriptions,
    ...(options.onerror === undefined ? {} : { onerror: options.onerror }),
  });
  const unsubscribe = registry.onToolsChanged(() => handler.notify.toolsChanged());

  return {
    handler,
    get inFlight() {
      return inFlight;
    },
    async drain(ms) {
      draining = true;
      if (inFlight === 0 || ms <= 0) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          idle.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        timer.unref?.();
        idle.add(done);
      });
    },
    async close() {
      draining = true;
      unsubscribe();
      await handler.close();
    },
  };

  function overloaded(hasOutputSchema: boolean): CallToolResult {
    return toCallToolResult(rejection('OVERLOADED', 'the server is shutting down and takes no new calls'), hasOutputSchema) as CallToolResult;
  }
}

/** A call refused before it started, as a terminal event (for `toCallToolResult`). */
function rejection(code: 'INVALID_INPUT' | 'OVERLOADED', message: string, details?: Record<string, unknown>): TerminalEvent {
  return { type: 'error', callId: '', code, message, ...(details === undefined ? {} : { details }), stage: 'rejected', accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 } };
}

function outputSchemaOf(registry: McpToolSource, name: string): unknown {
  const schema = registry.get(name)?.outputSchema;
  return typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'object' ? schema : undefined;
}

/** The call's options from the request: its credentials (principal, tenant, ceiling) and its `_meta`. */
function callOptionsOf(name: string, ctx: ServerContext, options: ModernMcpOptions): CallOptions {
  const call: CallOptions = { signal: ctx.mcpReq.signal };
  const caller = ctx.http?.authInfo?.extra?.[CALLER_AUTH_KEY] as Pick<CallOptions, 'principal' | 'tenant' | 'labelCeiling'> | undefined;
  if (caller?.principal !== undefined) call.principal = caller.principal;
  if (caller?.tenant !== undefined) call.tenant = caller.tenant;
  if (caller?.labelCeiling !== undefined) call.labelCeiling = caller.labelCeiling;
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
    return { progress, total: 100 };
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
