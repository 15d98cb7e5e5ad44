/**
 * The MCP server adapter: a low-level SDK `Server` whose `tools/list` and
 * `tools/call` are the registry's definitions and the registry's one call path.
 * (Over 400 lines: the request handlers share the session's progress and cancellation state.)
 *
 * Nothing is decided here: policy, validation, budgets and events all happen in
 * the call path. The adapter translates an MCP request into `CallOptions`, the
 * call's events into MCP notifications, and its terminal event into a
 * `CallToolResult`.
 *
 * - Every outcome of `tools/call` is a tool result, including a rejected call
 *   (TOOL_NOT_FOUND, INVALID_INPUT, PERMISSION_DENIED...): `isError: true`, the
 *   text `CODE: message`, and `{ error: { code, message, details } }` in
 *   `structuredContent` (omitted for tools that declare an output schema, whose
 *   structured content must match it) and in `_meta['toolhost/error']`. An agent
 *   sees the code and can correct itself. Malformed JSON-RPC is still rejected by
 *   the SDK with a protocol error.
 * - `progress` events become `notifications/progress` (progress = pct, total =
 *   100) when the request carried a `progressToken`; `delta` events too, with the
 *   delta's JSON text as `message` and `_meta['toolhost/delta'] = true`.
 *   Progress values strictly increase, as the spec requires: a notification
 *   whose pct would not pass the previous value (every delta, a repeated or
 *   lower pct) gets the previous value plus 0.001 (`total` is 100, or the
 *   progress when it passed 100: a delta after 100% reads 100.001 of 100.001,
 *   never more than its total).
 * - After the last progress notification and before the response, the server
 *   pings the client and waits for its answer (at most `progressFlushMs`, and
 *   not at all once the session's client let one time out without ever
 *   answering one): the
 *   SDK's 1.x client drops a progress notification read in the same chunk as
 *   the response (typescript-sdk #2580), and once the pong is back every
 *   notification has been handled.
 * - An unknown tool answers JSON-RPC -32602 (Invalid params), as the spec
 *   suggests, with `data: { code: 'TOOL_NOT_FOUND', message, details }`; every
 *   other refusal is an isError result.
 * - `log` events become `notifications/message` at the event's level (`trace`
 *   maps to `debug`, `warn` to `warning`), from `info` up unless the client
 *   chose another level with `logging/setLevel`.
 * - `notifications/cancelled` aborts the request's signal, which is the call's
 *   `signal`: the call is cancelled and ends CANCELLED (its reply is dropped, as
 *   the protocol requires).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  EmptyResultSchema,
  ErrorCode as McpErrorCode,
  McpError,
  ListToolsRequestSchema,
  SetLevelRequestSchema,
  type CallToolResult,
  type LoggingLevel,
  type ServerNotification,
  type ServerRequest,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallOptions, CallStream } from '../core/call/options.js';
import { CALLER_AUTH_KEY } from './auth/http-guard.js';
import type { McpDefinition } from '../core/definitions.js';
import type { ErrorCode } from '../base/errors.js';
import type { LogLevel, TerminalEvent, ToolEvent } from '../core/events.js';
import type { ToolRegistry } from '../core/registry.js';
import { clientHooks, toMcpContent } from './mcp-client-requests.js';
import { serveSurfaces } from './mcp-surfaces.js';
import { MCP_META_KEYS, metaCallOptions } from './mcp-meta.js';
import { negotiatedVersion, recordHeader, requestSpan, traceMcpRequests } from './mcp-trace.js';
import { McpWireError } from './mcp-wire-error.js';
import { packageVersion } from './package-version.js';

export { MCP_META_KEYS } from './mcp-meta.js';

/** What the MCP adapters need from a registry (the package's `ToolRegistry` has it all; without `surfaces`, no prompts or resources). */
export type McpToolSource = Pick<ToolRegistry, 'definitions' | 'get' | 'stream' | 'onToolsChanged' | 'names' | 'inFlight' | 'logger'> & Partial<Pick<ToolRegistry, 'surfaces' | 'tracer' | 'ceilingRefusal'>>;

/** MCP's log levels, least severe first. */
const MCP_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const TO_MCP_LEVEL: Record<LogLevel, LoggingLevel> = { trace: 'debug', debug: 'debug', info: 'info', warn: 'warning', error: 'error' };

export interface McpServerOptions {
  /** The name and version the server reports in `initialize` (default: toolhost and its package version). */
  serverInfo?: { name: string; version: string };
  /** Instructions for the client, sent in `initialize`. */
  instructions?: string;
  /** The worktree bound to a tool's calls (the call path confines the tool to it). */
  worktree?: (toolName: string) => string | undefined;
  /**
   * The lowest level of tool `log` events sent as `notifications/message`
   * until the client sets one with `logging/setLevel` (default `info`; `off` sends none).
   */
  logLevel?: LoggingLevel | 'off';
  /** How long to gather tool registrations before sending `notifications/tools/list_changed` (ms, default 50). */
  listChangedDebounceMs?: number;
  /**
   * How long a call's response waits for the client's answer to the ping sent
   * after its last progress notification (ms, default 1000; 0: no ping).
   */
  progressFlushMs?: number;
  /**
   * The authenticated caller every call of this server is attributed to (the HTTP server sets the
   * principal of the session's token): it scopes the calls' conversations and what they may cancel.
   */
  principal?: string;
}

interface ResolvedServerOptions {
  serverInfo: { name: string; version: string };
  instructions: string | undefined;
  worktree: ((toolName: string) => string | undefined) | undefined;
  logLevel: LoggingLevel | 'off';
  listChangedDebounceMs: number;
  progressFlushMs: number;
  principal: string | undefined;
}

/** Check server options up front (throws a TypeError naming the bad option). */
export function checkMcpServerOptions(options: McpServerOptions): void {
  resolveOptions(options);
}

function resolveOptions(options: McpServerOptions): ResolvedServerOptions {
  const debounce = options.listChangedDebounceMs ?? 50;
  if (!Number.isFinite(debounce) || debounce < 0) throw new TypeError('options.listChangedDebounceMs must be a non-negative number');
  const progressFlushMs = options.progressFlushMs ?? 1000;
  if (!Number.isFinite(progressFlushMs) || progressFlushMs < 0) throw new TypeError('options.progressFlushMs must be a non-negative number');
  const logLevel = options.logLevel ?? 'info';
  if (logLevel !== 'off' && !MCP_LEVELS.includes(logLevel)) {
    throw new TypeError(`options.logLevel must be one of ${MCP_LEVELS.join(', ')} or off`);
  }
  if (options.worktree !== undefined && typeof options.worktree !== 'function') {
    throw new TypeError('options.worktree must be a function (toolName) => string | undefined');
  }
  return {
    serverInfo: options.serverInfo ?? { name: 'toolhost', version: packageVersion() },
    instructions: options.instructions,
    worktree: options.worktree,
    logLevel,
    listChangedDebounceMs: debounce,
    progressFlushMs,
    principal: options.principal,
  };
}

/** How much a progress value passes the previous one when its pct does not (a delta, a repeated pct). */
const PROGRESS_STEP = 0.001;

let sharedValidator: AjvJsonSchemaValidator | undefined;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Per-server state the fronts need for a graceful stop. */
interface ServerState {
  inFlight: number;
  draining: boolean;
  idle: Set<() => void>;
}

const states = new WeakMap<Server, ServerState>();

/** `tools/call` requests a server made by `createMcpServer` is running. */
export function mcpCallsInFlight(server: Server): number {
  return states.get(server)?.inFlight ?? 0;
}

/**
 * Stop a server taking new calls (they get an isError result with OVERLOADED)
 * and wait until its calls in flight finish, or `drainMs` passes. The caller
 * then closes it, which cancels whatever still runs.
 */
export async function drainMcpServer(server: Server, drainMs: number): Promise<void> {
  const state = states.get(server);
  if (!state) return;
  state.draining = true;
  if (state.inFlight === 0 || drainMs <= 0) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      state.idle.delete(done);
      resolve();
    };
    const timer = setTimeout(done, drainMs);
    timer.unref?.();
    state.idle.add(done);
  });
}

/**
 * A low-level MCP `Server` over the registry, with the `tools` (listChanged)
 * and `logging` capabilities. Connect it to any transport; one server per
 * connection, any number of servers per registry.
 *
 * It stops listening to the registry when its transport closes (it sets
 * `server.onclose`; wrap that function rather than replacing it).
 */
export function createMcpServer(registry: McpToolSource, options: McpServerOptions = {}): Server {
  const resolved = resolveOptions(options);
  const server = new Server(resolved.serverInfo, {
    capabilities: { tools: { listChanged: true } },
    // One validator for every server: the SDK's default builds an Ajv per server (~3 ms a session).
    jsonSchemaValidator: (sharedValidator ??= new AjvJsonSchemaValidator()),
    ...(resolved.instructions === undefined ? {} : { instructions: resolved.instructions }),
  });
  // Registered after construction so that the SDK's own setLevel handler (which
  // filters only out-of-request messages) is not installed: ours filters the
  // per-request log notifications below.
  server.registerCapabilities({ logging: {} });
  let logLevel = resolved.logLevel;
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    logLevel = request.params.level;
    return {};
  });

  const state: ServerState = { inFlight: 0, draining: false, idle: new Set() };
  states.set(server, state);
  // Whether this session's client answers pings: one that let a flush ping time out without ever answering one
  // is not pinged again (one that answered before and was only slow once still is).
  const flush = { answered: false, silent: false };
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(registry) }));
  // Traced: every request a server span (mcp-trace.ts), with the version the session negotiated.
  const tracer = registry.tracer;
  if (tracer !== undefined) {
    const negotiated = negotiatedVersion(server);
    traceMcpRequests(server, tracer, (context) => {
      const extra = context as Extra;
      const headers = extra.requestInfo?.headers;
      const header = recordHeader(headers);
      const protocolVersion = header?.('mcp-protocol-version') ?? negotiated();
      return {
        ...(header === undefined ? {} : { header }),
        ...(extra.sessionId === undefined ? {} : { sessionId: extra.sessionId }),
        ...(protocolVersion === undefined ? {} : { protocolVersion }),
        transport: headers === undefined ? 'pipe' : 'tcp',
      };
    });
  }
  const callTool = async (request: { params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> } }, extra: Extra): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    const meta: Record<string, unknown> = request.params._meta ?? {};
    const hasOutputSchema = outputSchemaOf(registry, name) !== undefined;
    if (state.draining) {
      return errorResult({ code: 'OVERLOADED', message: 'the server is shutting down and takes no new calls', details: undefined }, hasOutputSchema);
    }
    let callOptions: CallOptions;
    try {
      callOptions = callOptionsFrom(server, name, meta, extra, resolved);
    } catch (error) {
      const message = (error as Error).message;
      return errorResult({ code: 'INVALID_INPUT', message, details: undefined }, hasOutputSchema);
    }
    // Traced: the request's server span is the call's span (its children hang under it, its end is the request's).
    const span = requestSpan(extra);
    if (span !== undefined) callOptions.span = span;
    state.inFlight += 1;
    try {
      const stream = registry.stream(name, args, callOptions);
      const terminal = await forwardEvents(stream, name, meta.progressToken, extra, () => logLevel, resolved.progressFlushMs, flush);
      if (terminal.type === 'error' && terminal.code === 'TOOL_NOT_FOUND' && terminal.stage === 'rejected') {
        // Not a call: the spec's answer to an unknown tool is a protocol error (-32602), with toolhost's code in data.
        const data = { code: terminal.code, message: terminal.message, ...(terminal.details === undefined ? {} : { details: terminal.details }), callId: terminal.callId };
        throw new McpWireError(McpErrorCode.InvalidParams, `TOOL_NOT_FOUND: ${terminal.message}`, data);
      }
      return toCallToolResult(terminal, hasOutputSchema);
    } finally {
      state.inFlight -= 1;
      // Told a turn later, once the SDK has handed this call's response to the transport.
      if (state.inFlight === 0 && state.idle.size > 0) {
        setImmediate(() => {
          if (state.inFlight === 0) for (const idle of [...state.idle]) idle();
        });
      }
    }
  };
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool(request, extra));

  let timer: NodeJS.Timeout | undefined;
  const unsubscribe = registry.onToolsChanged(() => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (!server.transport) return;
      server.sendToolListChanged().catch((error: unknown) => {
        registry.logger.debug({ err: (error as Error).message }, 'mcp: could not send tools/list_changed');
      });
    }, resolved.listChangedDebounceMs);
    timer.unref?.();
  });
  // Components' prompts and resources (mcp-surfaces.ts), each operation a call under the same caller.
  const stopSurfaces = registry.surfaces === undefined
    ? undefined
    : serveSurfaces(server, registry.surfaces, {
      callOptions: (extra) => callerOptions(extra, resolved),
      // A prompt may ask its caller (sampling, elicitation) as a tool does: server-to-client requests of this session.
      promptCallOptions: (extra) => ({ ...callerOptions(extra, resolved), client: clientHooks(server, extra) }),
      debounceMs: resolved.listChangedDebounceMs, logger: registry.logger });
  server.onclose = () => {
    stopSurfaces?.();
    unsubscribe();
    clearTimeout(timer);
    timer = undefined;
  };
  return server;
}

/** The registry's tools as MCP tools; a tool whose input is not an object is left out (MCP arguments are objects). */
export function listTools(registry: Pick<McpToolSource, 'definitions' | 'logger'>): McpTool[] {
  const tools: McpTool[] = [];
  for (const definition of registry.definitions('mcp')) {
    const tool = toMcpTool(definition);
    if (tool) tools.push(tool);
    else registry.logger.debug({ tool: definition.name }, 'mcp: tool left out of tools/list: its input schema does not describe an object');
  }
  return tools;
}

function toMcpTool(definition: McpDefinition): McpTool | undefined {
  const inputSchema = objectSchema(definition.inputSchema);
  if (!inputSchema) return undefined;
  const tool: McpTool = { name: definition.name, description: definition.description, inputSchema, annotations: definition.annotations };
  if (definition.title !== undefined) tool.title = definition.title;
  if (definition.icons !== undefined) tool.icons = definition.icons;
  const outputSchema = definition.outputSchema === undefined ? undefined : objectSchema(definition.outputSchema, false);
  // MCP's structured content is an object: an output schema of another type is not advertised.
  if (outputSchema) tool.outputSchema = outputSchema;
  return tool;
}

/** A JSON Schema with `type: "object"` at its root (`true` and type-less schemas are read as objects), or undefined. */
function objectSchema(schema: unknown, lenient = true): McpTool['inputSchema'] | undefined {
  if (schema === true) return lenient ? { type: 'object' } : undefined;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  const record = schema as Record<string, unknown>;
  if (record.type === 'object') return record as McpTool['inputSchema'];
  if (record.type === undefined && lenient) return { ...record, type: 'object' } as McpTool['inputSchema'];
  return undefined;
}

/** The output schema `tools/list` advertises for a tool, if any (both eras: it decides whether a result carries `structuredContent`). */
export function outputSchemaOf(registry: McpToolSource, name: string): unknown {
  const schema = registry.get(name)?.outputSchema;
  return schema === undefined ? undefined : objectSchema(schema, false);
}

/** Who is calling (principal, the token's tenant and ceiling, the session), for calls that are not `tools/call`. */
function callerOptions(extra: Extra, options: ResolvedServerOptions): CallOptions {
  const call: CallOptions = { signal: extra.signal, ...(options.principal === undefined ? {} : { principal: options.principal }) };
  const caller = extra.authInfo?.extra?.[CALLER_AUTH_KEY] as Pick<CallOptions, 'tenant' | 'labelCeiling'> | undefined;
  if (caller?.tenant !== undefined) call.tenant = caller.tenant;
  if (caller?.labelCeiling !== undefined) call.labelCeiling = caller.labelCeiling;
  if (extra.sessionId !== undefined) call.sessionId = extra.sessionId;
  // Traced: each of the request's calls an `execute_tool` span under its server span.
  const span = requestSpan(extra);
  if (span !== undefined) call.trace = span.carrier();
  return call;
}

function callOptionsFrom(server: Server, name: string, meta: Record<string, unknown>, extra: Extra, options: ResolvedServerOptions): CallOptions {
  const call: CallOptions = { signal: extra.signal, client: clientHooks(server, extra), ...(options.principal === undefined ? {} : { principal: options.principal }) };
  // The request's own credentials (HTTP with OAuth): their tenant and label ceiling, never the client's _meta.
  const caller = extra.authInfo?.extra?.[CALLER_AUTH_KEY] as Pick<CallOptions, 'tenant' | 'labelCeiling'> | undefined;
  if (caller?.tenant !== undefined) call.tenant = caller.tenant;
  if (caller?.labelCeiling !== undefined) call.labelCeiling = caller.labelCeiling;
  Object.assign(call, metaCallOptions(meta, extra.sessionId));
  const worktree = options.worktree?.(name);
  if (worktree !== undefined) call.workingDir = worktree;
  return call;
}

/** Send the call's non-terminal events as notifications, in order, and return its terminal event. */
async function forwardEvents(
  stream: CallStream,
  tool: string,
  progressToken: unknown,
  extra: Extra,
  level: () => LoggingLevel | 'off',
  flushMs: number,
  flush: { answered: boolean; silent: boolean },
): Promise<TerminalEvent> {
  const token = typeof progressToken === 'string' || typeof progressToken === 'number' ? progressToken : undefined;
  let progress = -1;
  let progressSent = false;
  /** The next progress value: `pct` when it passes the previous one, else the previous one plus a step. */
  const nextProgress = (pct: number | undefined): { progress: number; total: number } => {
    progress = pct !== undefined && pct > progress ? pct : Math.round((Math.max(progress, 0) + PROGRESS_STEP) * 1e6) / 1e6;
    // Never past its total: a delta after 100% reads 100.001 of 100.001.
    return { progress, total: Math.max(100, progress) };
  };
  const send = async (notification: ServerNotification): Promise<void> => {
    if (notification.method === 'notifications/progress') progressSent = true;
    try {
      await extra.sendNotification(notification);
    } catch {
      // The client went away; the call still runs to its terminal event (the signal cancels it).
    }
  };
  for await (const event of stream as AsyncIterable<ToolEvent>) {
    switch (event.type) {
      case 'progress':
        if (token === undefined) break;
        await send({
          method: 'notifications/progress',
          params: { progressToken: token, ...nextProgress(event.pct), ...(event.message === undefined ? {} : { message: event.message }) },
        });
        break;
      case 'delta':
        if (token === undefined) break;
        await send({
          method: 'notifications/progress',
          params: { progressToken: token, ...nextProgress(undefined), message: JSON.stringify(event.data) ?? 'null', _meta: { [MCP_META_KEYS.delta]: true } },
        });
        break;
      case 'log': {
        const threshold = level();
        const mcpLevel = TO_MCP_LEVEL[event.level];
        if (threshold === 'off' || MCP_LEVELS.indexOf(mcpLevel) < MCP_LEVELS.indexOf(threshold)) break;
        await send({
          method: 'notifications/message',
          params: { level: mcpLevel, logger: tool, data: { callId: event.callId, source: event.source, message: event.message } },
        });
        break;
      }
      case 'result':
      case 'error':
        // SDK clients (1.x) drop a progress notification read in the same chunk as the response
        // (typescript-sdk issue #2580). A client answers a ping only after the messages before it:
        // once the pong is back, the response can no longer share a read with a notification.
        // A client that let one such ping time out and never answered one (it does not answer pings) is not
        // pinged again: each of its calls would wait `flushMs` for nothing.
        if (progressSent && flushMs > 0 && !flush.silent && !extra.signal.aborted) {
          await extra.sendRequest({ method: 'ping' }, EmptyResultSchema, { timeout: flushMs, signal: extra.signal }).then(() => {
            flush.answered = true;
          }, (error: unknown) => {
            if (!flush.answered && (error as { code?: unknown }).code === McpErrorCode.RequestTimeout) flush.silent = true;
          });
        }
        return event;
      default:
        break;
    }
  }
  return {
    type: 'error',
    callId: stream.callId,
    code: 'INTERNAL',
    message: 'the call ended without a terminal event',
    stage: 'run',
    accounting: { wallMs: 0, queuedMs: 0, attempts: 0, events: 0 },
  };
}

/** A call's terminal event as an MCP tool result. */
export function toCallToolResult(terminal: TerminalEvent, hasOutputSchema: boolean): CallToolResult {
  const meta = { [MCP_META_KEYS.callId]: terminal.callId, [MCP_META_KEYS.accounting]: terminal.accounting };
  if (terminal.type === 'error') {
    const result = errorResult({ code: terminal.code, message: terminal.message, details: terminal.details }, hasOutputSchema);
    result._meta = { ...meta, ...result._meta };
    return result;
  }
  const { result } = terminal;
  const content: CallToolResult['content'] = result.content.map(toMcpContent);
  const out: CallToolResult = { content, _meta: meta };
  if (isPlainObject(result.structuredContent)) out.structuredContent = result.structuredContent;
  return out;
}

function errorResult(error: { code: ErrorCode; message: string; details: unknown }, hasOutputSchema: boolean): CallToolResult {
  const data: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.details !== undefined) data.details = error.details;
  const result: CallToolResult = {
    content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
    isError: true,
    _meta: { [MCP_META_KEYS.error]: data },
  };
  // A tool with an output schema: clients check structured content against it, even on errors.
  if (!hasOutputSchema) result.structuredContent = { error: data };
  return result;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
