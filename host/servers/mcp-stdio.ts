/**
 * MCP over stdio: the SDK v2's `serveStdio` on this process's stdin and
 * stdout, which picks the connection's era from its opening exchange as the
 * HTTP endpoint does per request: a 2025 client's `initialize` pins the
 * connection to a 2025-era server (mcp-server.ts, SDK 1.x: sessions' sampling,
 * elicitation, `logging/setLevel`), a 2026-07-28 client's `server/discover` or
 * enveloped request pins it to the 2026-07-28 server (mcp-modern.ts: tools,
 * prompts, resources, completion, logging, list changes on
 * `subscriptions/listen`). Stdout carries nothing but protocol: toolhost logs
 * to stderr, guest stdout/stderr are captured by the sandbox, and while
 * serving, `console.log` and its stdout siblings are sent to stderr (unless
 * `redirectConsole: false`).
 */
import { CallParking } from './mcp-input-required.js';
import { Console } from 'node:console';
import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage, Server as ModernServer, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { ListenedUris } from './mcp-modern-surfaces.js';
import { drainModern, modernServerFactory, type ModernCallState } from './mcp-modern.js';
import { checkMcpServerOptions, createMcpServer, drainMcpServer, type McpServerOptions, type McpToolSource } from './mcp-server.js';
import { packageVersion } from './package-version.js';

export interface McpStdioOptions extends McpServerOptions {
  /** Where requests come from (default `process.stdin`). */
  stdin?: Readable;
  /** Where responses go (default `process.stdout`). */
  stdout?: Writable;
  /**
   * Send `console.log`, `info`, `debug`, `dir`, `dirxml` and `table` to stderr
   * while serving (default: true when serving on `process.stdout`). Restored on close.
   */
  redirectConsole?: boolean;
}

export interface McpStdioServer {
  /** The 2025-era server, once a 2025 client opened the connection (a 2026-07-28 client gets another). */
  readonly server: Server | undefined;
  /** The protocol era the connection was pinned to by its opening (undefined before it opened). */
  readonly era: 'legacy' | 'modern' | undefined;
  /** Resolves when the session ends: stdin ended, or `close()` was called. */
  readonly closed: Promise<void>;
  /**
   * End the session: new calls get an OVERLOADED result at once, calls in
   * flight get up to `drainMs` (default 0) to finish, then the rest are cancelled.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

const STDOUT_METHODS = ['log', 'info', 'debug', 'dir', 'dirxml', 'table'] as const;
/** `subscriptions/listen` streams one connection holds (the SDK's stdio router refuses more). */
const MAX_STDIO_SUBSCRIPTIONS = 1024;

/** Serve the registry's tools (and prompts and resources) over stdio until stdin ends or `close()` is called. */
export async function serveMcpStdio(registry: McpToolSource, options: McpStdioOptions = {}): Promise<McpStdioServer> {
  const { stdin = process.stdin, stdout = process.stdout, redirectConsole, ...serverOptions } = options;
  // Fail on bad options now, not at the opening.
  checkMcpServerOptions(serverOptions);
  const restoreConsole = (redirectConsole ?? stdout === process.stdout) ? consoleToStderr() : () => undefined;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const listened = new ListenedUris();
  const wire = new ListenWatchingTransport(new StdioServerTransport(stdin, stdout), listened);
  wire.onEnded = () => {
    restoreConsole();
    resolveClosed();
  };
  let legacy: Server | undefined;
  let era: 'legacy' | 'modern' | undefined;
  // A 2026-07-28 connection's tools that ask their caller are parked until the client's retry answers (mcp-input-required.ts; 16 per principal).
  const modernState: ModernCallState = { inFlight: 0, draining: false, idle: new Set(), parking: new CallParking() };
  const modernFactory = modernServerFactory(registry, {
    serverInfo: serverOptions.serverInfo ?? { name: 'toolhost', version: packageVersion() },
    ...(serverOptions.instructions === undefined ? {} : { instructions: serverOptions.instructions }),
    ...(serverOptions.worktree === undefined ? {} : { worktree: serverOptions.worktree }),
  }, modernState, { listened, debounceMs: serverOptions.listChangedDebounceMs ?? 50 });
  const handle = serveStdio((ctx) => {
    era = ctx.era;
    if (ctx.era === 'modern') return modernFactory();
    const server = createMcpServer(registry, serverOptions);
    server.onerror = (error) => registry.logger.debug({ err: error.message }, 'mcp stdio: protocol error');
    legacy = server;
    // The SDK's entry only connects and closes a 2025-era instance (any MCP server with those two methods).
    return server as unknown as ModernServer;
  }, {
    transport: wire,
    maxSubscriptions: MAX_STDIO_SUBSCRIPTIONS,
    onerror: (error) => registry.logger.debug({ err: error.message }, 'mcp stdio: protocol error'),
  });

  let closing: Promise<void> | undefined;
  const close = ({ drainMs = 0 }: { drainMs?: number } = {}): Promise<void> => {
    // Closing aborts the requests in flight: their calls are cancelled.
    closing ??= (async () => {
      if (legacy !== undefined) await drainMcpServer(legacy, drainMs);
      else await drainModern(modernState, drainMs);
      modernState.parking.close();
      await handle.close();
      await wire.close();
      await closed;
    })();
    return closing;
  };
  await wire.started;
  return {
    get server() {
      return legacy;
    },
    get era() {
      return era;
    },
    closed,
    close,
  };
}

/**
 * The wire under the SDK's stdio entry, unchanged but watched: a `subscriptions/listen` request's resource URIs
 * are noted until its `notifications/cancelled` (or the end of the connection), so a change of the components'
 * resources is announced for them; and the end of the connection is told once.
 */
class ListenWatchingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  onEnded?: () => void;
  readonly started: Promise<void>;
  readonly #inner: StdioServerTransport;
  readonly #listened: ListenedUris;
  readonly #listens = new Map<string, () => void>();
  #resolveStarted!: () => void;
  #ended = false;

  constructor(inner: StdioServerTransport, listened: ListenedUris) {
    this.#inner = inner;
    this.#listened = listened;
    this.started = new Promise((resolve) => {
      this.#resolveStarted = resolve;
    });
    inner.onmessage = (message: JSONRPCMessage) => {
      this.#watch(message);
      this.onmessage?.(message);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      for (const forget of this.#listens.values()) forget();
      this.#listens.clear();
      this.onclose?.();
      if (!this.#ended) {
        this.#ended = true;
        this.onEnded?.();
      }
    };
  }

  async start(): Promise<void> {
    try {
      await this.#inner.start();
    } finally {
      this.#resolveStarted();
    }
  }

  send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    return this.#inner.send(message);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #watch(message: JSONRPCMessage): void {
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: { requestId?: unknown } };
    if (method === 'subscriptions/listen' && (typeof id === 'string' || typeof id === 'number')) {
      if (this.#listens.size >= MAX_STDIO_SUBSCRIPTIONS || this.#listens.has(String(id))) return;
      this.#listens.set(String(id), this.#listened.listen(message));
    } else if (method === 'notifications/cancelled') {
      const key = String(params?.requestId);
      this.#listens.get(key)?.();
      this.#listens.delete(key);
    }
  }
}

/** Point console's stdout methods at stderr; returns the function that undoes it. */
function consoleToStderr(): () => void {
  const target = console as unknown as Record<string, unknown>;
  const saved = new Map<string, unknown>(STDOUT_METHODS.map((name) => [name, target[name]]));
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  for (const name of STDOUT_METHODS) target[name] = toStderr[name].bind(toStderr);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    for (const [name, method] of saved) target[name] = method;
  };
}
