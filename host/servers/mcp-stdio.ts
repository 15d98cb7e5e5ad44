/**
 * MCP over stdio: the SDK's StdioServerTransport on this process's stdin and
 * stdout. Stdout carries nothing but protocol: toolhost logs to stderr, guest
 * stdout/stderr are captured by the sandbox, and while serving, `console.log`
 * and its stdout siblings are sent to stderr (unless `redirectConsole: false`).
 */
import { Console } from 'node:console';
import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer, drainMcpServer, type McpServerOptions, type McpToolSource } from './mcp-server.js';

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
  readonly server: Server;
  /** Resolves when the session ends: stdin ended, or `close()` was called. */
  readonly closed: Promise<void>;
  /**
   * End the session: new calls get an OVERLOADED result at once, calls in
   * flight get up to `drainMs` (default 0) to finish, then the rest are cancelled.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

const STDOUT_METHODS = ['log', 'info', 'debug', 'dir', 'dirxml', 'table'] as const;

/** Serve the registry's tools over stdio until stdin ends or `close()` is called. */
export async function serveMcpStdio(registry: McpToolSource, options: McpStdioOptions = {}): Promise<McpStdioServer> {
  const { stdin = process.stdin, stdout = process.stdout, redirectConsole, ...serverOptions } = options;
  const server = createMcpServer(registry, serverOptions);
  const transport = new StdioServerTransport(stdin, stdout);
  const restoreConsole = (redirectConsole ?? stdout === process.stdout) ? consoleToStderr() : () => undefined;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const onEnd = (): void => {
    void close();
  };
  transport.onclose = () => {
    stdin.off('end', onEnd);
    stdin.off('close', onEnd);
    restoreConsole();
    resolveClosed();
  };
  server.onerror = (error) => registry.logger.debug({ err: error.message }, 'mcp stdio: protocol error');
  let closing: Promise<void> | undefined;
  const close = ({ drainMs = 0 }: { drainMs?: number } = {}): Promise<void> => {
    // Closing aborts the requests in flight: their calls are cancelled.
    closing ??= drainMcpServer(server, drainMs)
      .then(() => server.close())
      .then(() => closed);
    return closing;
  };
  await server.connect(transport);
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);
  return { server, closed, close };
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
