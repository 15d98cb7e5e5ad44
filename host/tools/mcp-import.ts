/**
 * Import another MCP server's tools into a registry.
 * (Over 400 lines: the connection, the schema lane, progress routing and the traced remote call share one import's state.)
 *
 * Each remote tool becomes a native toolhost tool named `<name>.<tool>` that
 * calls the remote with the SDK v2 `Client` (`@modelcontextprotocol/client`).
 * The protocol version is negotiated as the spec says (`protocol: 'auto'`, the
 * default): `server/discover` first, the 2025 `initialize` handshake if the
 * server is older, so a server that speaks only 2026-07-28 and one that speaks
 * only 2025-11-25 are both imported (on stdio the SDK probes on a short-lived
 * second process of the same command; `protocol` pins one era and skips it). It goes through the same call path as
 * every other tool. Its schemas (the remote's: untrusted) never reach the main
 * thread's compiler: they are checked when imported, and each call's args
 * before the remote is called, in the schema lane (core/schema-lane.ts: a
 * worker with a deadline, replaced past it); a remote tool whose schema does
 * not pass is skipped (see `skipped`). The call's signal (cancellation and
 * the wall budget) is passed to `callTool`, which sends `notifications/cancelled`
 * to the remote; remote progress becomes `progress` events.
 *
 * Results: a remote `isError` result throws `toolError('REMOTE_ERROR', text)`
 * (TOOL_ERROR with `details.code = 'REMOTE_ERROR'`); a protocol error from the
 * remote is TOOL_ERROR with `details.code = 'REMOTE_PROTOCOL_ERROR'`; a lost
 * connection is TOOL_CRASHED. Structured content is the output; content that is
 * more than its JSON (images, prose) is kept as content blocks with `richResult`.
 */
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type McpSubscription,
  type Progress,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { ToolContext } from '../core/context.js';
import { ToolhostError, toolError } from '../base/errors.js';
import type { ToolEventSink } from '../core/events.js';
import type { ToolRegistry } from '../core/registry.js';
import { richResult, type ContentBlock } from '../core/result.js';
import type { JsonSchema, Tool, ToolRun } from '../core/tool.js';
import { CallRejection } from '../core/call/call.js';
import { sharedSchemaLane } from '../core/schema-lane.js';
import type { SchemaLimits } from '../core/schema-limits.js';
import type { ToolGrant } from '../policy/grant.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';

export interface McpImportOptions {
  /** The namespace: remote tool `t` is registered as `<name>.t` ([A-Za-z0-9_-]). */
  name: string;
  /** Stdio: the server's command (spawned without a shell). */
  command?: string;
  args?: string[];
  /** Stdio: environment for the server, on top of a minimal default (PATH, HOME, USER, SHELL, TERM, LOGNAME). */
  env?: Record<string, string>;
  cwd?: string;
  /** Stdio: what to do with the server's stderr: `log` (each line to the registry's logger, the default), `inherit` or `ignore`. */
  stderr?: 'log' | 'inherit' | 'ignore';
  /** Streamable HTTP: the server's MCP endpoint. */
  url?: string | URL;
  /** Streamable HTTP: headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** Time allowed for connecting and listing tools (ms, default 10 000). Calls are bounded by their own budgets. */
  timeoutMs?: number;
  /** The policy the imported tools' calls get where they say nothing (e.g. a `timeout`). */
  defaultPolicy?: ExecutionPolicyInput;
  /** What the imported tools are granted (their calls' labels are checked against it, as for any tool). */
  grant?: ToolGrant;
  /**
   * The protocol version: `auto` (the default) negotiates (2026-07-28 if the server offers it, else the
   * 2025 handshake); `2025-11-25` skips the probe; `2026-07-28` requires it (no fallback).
   */
  protocol?: McpImportProtocol;
}

/** Which MCP protocol an import speaks: negotiated, or one era pinned. */
export type McpImportProtocol = 'auto' | '2025-11-25' | '2026-07-28';

export interface McpImport {
  readonly name: string;
  /** The protocol version negotiated with the server (e.g. `2026-07-28` or `2025-11-25`). */
  readonly protocolVersion: string;
  /** The registered names of the imported tools, now. */
  readonly tools: string[];
  /** Remote tools that could not be registered, and why. */
  readonly skipped: Array<{ tool: string; reason: string }>;
  /** List the remote tools again and bring the registry in line (also done on `tools/list_changed`). */
  sync(): Promise<void>;
  /** Unregister the imported tools and close the connection (stops a stdio server). */
  close(): Promise<void>;
}

/** What importing needs from a registry (its schema limits, when it has them, bound the remote's schemas). */
export type McpImportTarget = Pick<ToolRegistry, 'register' | 'unregister' | 'logger'> & { readonly schemaLimits?: Readonly<SchemaLimits> };

const NAMESPACE = /^[A-Za-z0-9_-]{1,32}$/;
const PROTOCOLS: ReadonlySet<string> = new Set<McpImportProtocol>(['auto', '2025-11-25', '2026-07-28']);

/** Connect to an MCP server (stdio or Streamable HTTP), and register its tools as `<name>.<tool>`. */
export async function importMcpServer(registry: McpImportTarget, options: McpImportOptions): Promise<McpImport> {
  const { name, timeoutMs = 10_000 } = options;
  if (typeof name !== 'string' || !NAMESPACE.test(name)) throw new TypeError(`options.name must match ${NAMESPACE.source}`);
  if ((options.command === undefined) === (options.url === undefined)) throw new TypeError('options: give exactly one of command (stdio) or url (Streamable HTTP)');
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new TypeError('options.timeoutMs must be a positive number');
  const protocol = options.protocol ?? 'auto';
  if (!PROTOCOLS.has(protocol)) throw new TypeError(`options.protocol must be one of ${[...PROTOCOLS].join(', ')}`);
  const log = registry.logger.child({ mcpServer: name });

  let transport: StdioClientTransport | StreamableHTTPClientTransport;
  if (options.command !== undefined) {
    const stderr = options.stderr ?? 'log';
    transport = new StdioClientTransport({
      command: options.command,
      ...(options.args === undefined ? {} : { args: options.args }),
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stderr: stderr === 'log' ? 'pipe' : stderr,
    });
    if (stderr === 'log') forwardLines(transport.stderr, (line) => log.info({ stderr: line }, 'mcp server stderr'));
  } else {
    transport = new StreamableHTTPClientTransport(new URL(options.url!), options.headers ? { requestInit: { headers: options.headers } } : undefined);
  }

  const client = new Client({ name: 'toolhost', version: '0' }, {
    capabilities: {},
    versionNegotiation: { mode: protocol === 'auto' ? 'auto' : protocol === '2025-11-25' ? 'legacy' : { pin: protocol } },
  });
  // Progress is routed by our own tokens, not through `onprogress`: the SDK client (1.x and v2) dispatches
  // notifications a microtask late but retires a request's progress handler as soon as its response
  // arrives, so a last progress notification read in the same chunk as the response would be lost
  // (typescript-sdk issue #2580). Our listener lives until the awaiting call has seen the response.
  const progress = new ProgressRouter();
  client.setNotificationHandler('notifications/progress', (notification) => progress.dispatch(notification.params));
  let subscription: McpSubscription | undefined;
  const owned = new Map<string, { remote: string; signature: string }>();
  let skipped: Array<{ tool: string; reason: string }> = [];
  let closing = false;
  client.onerror = (error) => log.debug({ err: error.message }, 'mcp import: transport error');
  client.onclose = () => {
    if (closing) return;
    // The server went away: its tools would only fail now.
    log.warn({ tools: [...owned.keys()] }, 'mcp import: the server closed the connection; its tools were unregistered');
    unregisterAll();
  };

  const unregisterAll = (): void => {
    for (const registered of owned.keys()) registry.unregister(registered);
    owned.clear();
  };

  const lane = sharedSchemaLane();
  const limits: Partial<SchemaLimits> = { ...registry.schemaLimits };
  /** The remote's schemas checked in the lane (cost, meta-schema, compile): throws what registration would. */
  const checkSchemas = async (remote: McpTool, registeredName: string): Promise<void> => {
    await lane.check(registeredName, remote.inputSchema as JsonSchema, { limits });
    if (remote.outputSchema !== undefined) await lane.check(registeredName, remote.outputSchema as JsonSchema, { limits, output: true });
  };

  const makeTool = (remote: McpTool, registeredName: string): Tool => ({
    name: registeredName,
    description: remote.description ?? remote.title ?? `${remote.name} (from MCP server ${name})`,
    inputSchema: remote.inputSchema as JsonSchema,
    ...(remote.outputSchema === undefined ? {} : { outputSchema: remote.outputSchema as JsonSchema }),
    executionMode: 'native',
    idempotent: remote.annotations?.idempotentHint === true,
    streaming: false,
    ...(remote.annotations?.readOnlyHint === undefined ? {} : { readOnly: remote.annotations.readOnlyHint }),
    // Listed as the server gives them (policy/annotations.ts): the host cannot see what the tool does.
    ...(remote.annotations === undefined ? {} : { annotations: { ...remote.annotations } }),
    source: `mcp:${name}`,
    ...(options.defaultPolicy === undefined ? {} : { defaultPolicy: options.defaultPolicy }),
    ...(options.grant === undefined ? {} : { grant: options.grant }),
    // The args are checked in the schema lane, not by admission on the main thread.
    checksOwnArgs: true,
    invoke: async (args, ctx, events) => {
      const invalid = await lane.validate(registeredName, remote.inputSchema as JsonSchema, args, { limits, callId: ctx.callId, signal: ctx.signal, onLimit: (_tool, limit) => events.limit?.(limit) });
      if (invalid !== undefined) throw invalid.code === 'INVALID_INPUT' ? new CallRejection(invalid) : invalid;
      return callRemote(client, progress, name, remote.name, args, ctx, events);
    },
  });

  const listAll = async (): Promise<McpTool[]> => {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  };

  const syncOnce = async (): Promise<void> => {
    const remoteTools = await listAll();
    if (closing) return;
    const nextSkipped: Array<{ tool: string; reason: string }> = [];
    const wanted = new Map<string, McpTool>();
    for (const tool of remoteTools) wanted.set(`${name}.${tool.name}`, tool);
    for (const [registered, entry] of owned) {
      const tool = wanted.get(registered);
      if (!tool || signature(tool) !== entry.signature) {
        registry.unregister(registered);
        owned.delete(registered);
      }
    }
    for (const [registered, tool] of wanted) {
      if (owned.has(registered)) continue;
      try {
        await checkSchemas(tool, registered);
        if (closing || owned.has(registered)) continue;
        registry.register(makeTool(tool, registered));
        owned.set(registered, { remote: tool.name, signature: signature(tool) });
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        nextSkipped.push({ tool: tool.name, reason });
        log.warn({ tool: tool.name, reason }, 'mcp import: a remote tool was not registered');
      }
    }
    skipped = nextSkipped;
  };

  let queue: Promise<void> = Promise.resolve();
  const sync = (): Promise<void> => {
    const run = queue.then(syncOnce, syncOnce);
    queue = run.catch(() => undefined);
    return run;
  };

  try {
    await client.connect(transport, { timeout: timeoutMs });
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      sync().catch((error: unknown) => log.warn({ err: (error as Error).message }, 'mcp import: re-sync after tools/list_changed failed'));
    });
    // 2026-07-28 has no unsolicited notifications: list changes come on a `subscriptions/listen` stream
    // (dispatched to the handler above). 2025 servers send them on the session as before.
    if (client.getProtocolEra() === 'modern' && client.getServerCapabilities()?.tools?.listChanged === true) {
      subscription = await client.listen({ toolsListChanged: true }, { timeout: timeoutMs });
    }
    await sync();
  } catch (error) {
    closing = true;
    unregisterAll();
    await subscription?.close().catch(() => undefined);
    await client.close().catch(() => undefined);
    throw new ToolhostError('INTERNAL', `could not import MCP server "${name}": ${(error as Error).message}`, { cause: error });
  }

  let closed: Promise<void> | undefined;
  return {
    name,
    protocolVersion: client.getNegotiatedProtocolVersion() ?? 'unknown',
    get tools() {
      return [...owned.keys()].sort();
    },
    get skipped() {
      return skipped;
    },
    sync,
    close() {
      closed ??= (async () => {
        closing = true;
        unregisterAll();
        await queue;
        await subscription?.close().catch(() => undefined);
        if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
        await client.close();
      })();
      return closed;
    },
  };
}

function signature(tool: McpTool): string {
  return JSON.stringify([tool.description, tool.title, tool.inputSchema, tool.outputSchema, tool.annotations]);
}

/** Progress listeners by progress token. */
class ProgressRouter {
  readonly #listeners = new Map<string, (progress: Progress) => void>();
  #next = 0;

  /** Listen for a request's progress; returns its token and the function that stops listening. */
  listen(listener: (progress: Progress) => void): { token: string; stop: () => void } {
    const token = `toolhost-${++this.#next}`;
    this.#listeners.set(token, listener);
    return { token, stop: () => this.#listeners.delete(token) };
  }

  dispatch(params: Progress & { progressToken: string | number }): void {
    const { progressToken, ...progress } = params;
    this.#listeners.get(String(progressToken))?.(progress);
  }
}

async function callRemote(client: Client, router: ProgressRouter, server: string, tool: string, args: unknown, ctx: ToolContext, events: ToolEventSink): Promise<ToolRun> {
  let result: CallToolResult;
  // A signal of our own, unlinked once the call settles: the SDK never removes its abort listener,
  // and ctx.signal aborts when every call ends (which would send a stray notifications/cancelled).
  const request = new AbortController();
  const onAbort = (): void => request.abort(ctx.signal.reason);
  if (ctx.signal.aborted) onAbort();
  else ctx.signal.addEventListener('abort', onAbort, { once: true });
  const listening = router.listen(({ progress, total, message }) => {
    const pct = total !== undefined && total > 0 ? (progress / total) * 100 : undefined;
    events.progress(pct, message);
  });
  // Traced: a CLIENT span for the remote call, whose context goes in `_meta` (SEP-414: traceparent, tracestate,
  // baggage), so the imported server continues the caller's trace.
  const span = ctx.span?.child(`tools/call ${tool}`, {
    kind: 'client',
    attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool', 'toolhost.mcp.server': server },
  });
  try {
    result = await client.callTool(
      { name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: { progressToken: listening.token, ...span?.carrier() } },
      // The call path's wall budget ends the call first; the timeout only keeps the SDK's 60 s default out of the way.
      { signal: request.signal, timeout: ctx.budgets.wallMs + 5_000 },
    );
  } catch (error) {
    span?.fail(ctx.signal.aborted ? 'CANCELLED' : 'REMOTE_ERROR');
    if (ctx.signal.aborted) throw ctx.signal.reason;
    throw remoteFailure(server, tool, error);
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    listening.stop();
    span?.end();
  }
  if (result.isError === true) span?.fail('REMOTE_ERROR');
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n') || `the remote tool "${tool}" failed`;
    throw toolError('REMOTE_ERROR', text, { server, tool, ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }) });
  }
  const blocks = content.map(toContentBlock);
  const structured = result.structuredContent;
  if (structured !== undefined) {
    return { output: blocks.length === 0 || isJsonTextOf(blocks, structured) ? structured : richResult(blocks, structured) };
  }
  return { output: richResult(blocks) };
}

function remoteFailure(server: string, tool: string, error: unknown): ToolhostError {
  if (error instanceof SdkError) {
    if (error.code === SdkErrorCode.ConnectionClosed) {
      return new ToolhostError('TOOL_CRASHED', `MCP server "${server}" closed the connection during the call`, { cause: error });
    }
    if (error.code === SdkErrorCode.RequestTimeout) {
      return new ToolhostError('TOOL_TIMEOUT', `MCP server "${server}" did not answer in time`, { cause: error });
    }
    return toolError('REMOTE_PROTOCOL_ERROR', error.message, { server, tool, sdkCode: error.code });
  }
  if (error instanceof ProtocolError) {
    return toolError('REMOTE_PROTOCOL_ERROR', error.message, { server, tool, mcpCode: error.code });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ToolhostError('TOOL_CRASHED', `MCP server "${server}": ${message}`, { cause: error });
}

type RemoteBlock = CallToolResult['content'][number];

/** MCP content as toolhost content: text and images as they are, anything else described in text. */
function toContentBlock(block: RemoteBlock): ContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return { type: 'image', data: block.data, mimeType: block.mimeType };
    case 'audio':
      return { type: 'text', text: `[audio ${block.mimeType}, ${block.data.length} base64 characters]` };
    case 'resource':
      return { type: 'text', text: 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri}]` };
    case 'resource_link':
      return { type: 'text', text: `[resource ${block.uri}]` };
    default:
      return { type: 'text', text: JSON.stringify(block) };
  }
}

/** Whether the content is nothing but the structured content's JSON text (then the JSON alone says it all). */
function isJsonTextOf(blocks: ContentBlock[], structured: unknown): boolean {
  if (blocks.length !== 1 || blocks[0]!.type !== 'text') return false;
  try {
    return JSON.stringify(JSON.parse(blocks[0]!.text)) === JSON.stringify(structured);
  } catch {
    return false;
  }
}

function forwardLines(stream: NodeJS.ReadableStream | import('node:stream').Stream | null, line: (text: string) => void): void {
  if (!stream) return;
  let buffered = '';
  stream.on('data', (chunk: Buffer | string) => {
    buffered += chunk.toString();
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const text = buffered.slice(0, newline).trimEnd();
      if (text !== '') line(text);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    if (buffered.length > 64 * 1024) {
      line(buffered);
      buffered = '';
    }
  });
}
