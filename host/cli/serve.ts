/**
 * `toolhost serve`: load the configuration (or the embedded defaults), build
 * the registry, load its tools, and serve them over MCP (Streamable HTTP or
 * stdio) and gRPC until SIGINT/SIGTERM (or, over stdio, until stdin ends);
 * then stop accepting calls, let the ones in flight finish (bounded), exit 0.
 */
import { resolve } from 'node:path';
import { findConfig, loadConfig, registryOptions, type ResolvedConfig } from '../config/index.js';
import { defineNativeTool } from '../core/tool.js';
import { ToolhostError, toolError } from '../core/errors.js';
import { ToolRegistry } from '../index.js';
import { createHttpStreamingTool } from '../native/http-streaming-tool.js';
import { startGrpcServer, type GrpcServerHandle } from '../servers/grpc/index.js';
import { createMetrics } from '../servers/metrics.js';
import { startMcpHttpServer, type McpHttpServer } from '../servers/mcp-http.js';
import { importMcpServer, type McpImport } from '../servers/mcp-import.js';
import { serveMcpStdio, type McpStdioServer } from '../servers/mcp-stdio.js';
import { registerConfiguredComponents } from './configured-tools.js';

export interface ServeOptions {
  config?: string;
  /** MCP transport (default: http when the config enables it). */
  mcp?: 'stdio' | 'http' | 'none';
  port?: number;
  host?: string;
  load: string[];
  worktree?: string;
  /** Serve gRPC (default: the config's setting, off over stdio). */
  grpc?: boolean;
  grpcPort?: number;
  /** How long in-flight calls may finish after a shutdown signal (ms). */
  drainMs?: number;
}

const DEFAULT_DRAIN_MS = 10_000;

/** Run the server until it is told to stop; resolves with the exit code. */
export async function serve(options: ServeOptions): Promise<number> {
  const loaded = await loadConfig(findConfig(process.cwd(), options.config));
  const { resolved } = loaded;
  const mode = options.mcp ?? (resolved.servers.mcp.http.enabled ? 'http' : 'none');
  // Over stdio, stdout carries the protocol and nothing else.
  const say = (line: string): void => {
    (mode === 'stdio' ? process.stderr : process.stdout).write(`${line}\n`);
  };
  for (const warning of loaded.warnings) process.stderr.write(`toolhost: ${warning}\n`);

  const registry = new ToolRegistry(registryOptions(resolved));
  const imports: McpImport[] = [];
  let mcpHttp: McpHttpServer | undefined;
  let mcpStdio: McpStdioServer | undefined;
  let grpc: GrpcServerHandle | undefined;
  const metrics = createMetrics(registry);
  try {
    await loadTools(registry, resolved, options, imports);
    const worktree = options.worktree === undefined ? undefined : resolve(options.worktree);
    const worktreeFor = worktree === undefined ? undefined : () => worktree;

    if (mode === 'http') {
      const http = resolved.servers.mcp.http;
      const bearerToken = http.bearerTokenEnv === undefined ? undefined : process.env[http.bearerTokenEnv];
      if (http.bearerTokenEnv !== undefined && !bearerToken) {
        throw new ToolhostError('INVALID_INPUT', `servers.mcp.http.bearer_token_env names ${http.bearerTokenEnv}, which is not set in the environment`);
      }
      mcpHttp = await startMcpHttpServer(registry, {
        host: options.host ?? http.host,
        port: options.port ?? http.port,
        ...(http.allowedHosts === undefined ? {} : { allowedHosts: http.allowedHosts }),
        ...(bearerToken === undefined ? {} : { bearerToken }),
        ...(worktreeFor === undefined ? {} : { worktree: worktreeFor }),
        metrics,
        health: () => ({ pool: registry.sandboxStats() ?? null }),
      });
    } else if (mode === 'stdio') {
      mcpStdio = await serveMcpStdio(registry, worktreeFor === undefined ? {} : { worktree: worktreeFor });
    }
    if (options.grpc ?? (resolved.servers.grpc.enabled && mode !== 'stdio')) {
      grpc = await startGrpcServer(registry, {
        host: options.host ?? resolved.servers.grpc.host,
        port: options.grpcPort ?? resolved.servers.grpc.port,
        ...(worktreeFor === undefined ? {} : { worktree: worktreeFor }),
      });
    }
  } catch (error) {
    metrics.close();
    await Promise.allSettled(imports.map((mcpImport) => mcpImport.close()));
    await Promise.allSettled([mcpHttp?.close(), grpc?.close()]);
    await registry.close();
    throw error;
  }

  say(`toolhost: serving ${registry.names().length} tools${loaded.file ? ` from ${loaded.file}` : ' (embedded defaults)'}`);
  if (mcpHttp) {
    say(`  MCP (Streamable HTTP): ${mcpHttp.url}`);
    const base = mcpHttp.url.replace(/\/mcp$/, '');
    say(`  metrics: ${base}/metrics   health: ${base}/healthz`);
  }
  if (mcpStdio) say('  MCP: stdio');
  if (grpc) say(`  gRPC (sw4rm.tool.ToolService): ${grpc.address}`);

  const stopped = new Promise<string>((resolveStop) => {
    process.once('SIGINT', () => resolveStop('SIGINT'));
    process.once('SIGTERM', () => resolveStop('SIGTERM'));
    void mcpStdio?.closed.then(() => resolveStop('stdin closed'));
  });
  const reason = await stopped;
  process.stderr.write(`toolhost: ${reason}: stopping (${registry.inFlight} calls in flight)\n`);

  // Stop accepting, let calls in flight finish for a while, then cancel what remains.
  const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
  await Promise.allSettled([mcpHttp?.close({ drainMs }), mcpStdio?.close({ drainMs }), grpc?.close()]);
  const deadline = Date.now() + drainMs;
  while (registry.inFlight > 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
  metrics.close();
  await Promise.allSettled(imports.map((mcpImport) => mcpImport.close()));
  await registry.close();
  return 0;
}

/** Components, HTTP tools and imported MCP servers from the config, then `--load` paths. */
async function loadTools(registry: ToolRegistry, resolved: ResolvedConfig, options: ServeOptions, imports: McpImport[]): Promise<void> {
  await registerConfiguredComponents(registry, resolved.tools);
  if (options.load.length > 0) await registry.registerWasmTools(options.load);
  for (const spec of resolved.httpTools) {
    registry.register(createHttpStreamingTool({
      name: spec.name,
      description: spec.description,
      url: spec.url,
      headers: spec.headers,
      inputSchema: spec.inputSchema,
      grant: spec.grant,
      ...(spec.method === undefined ? {} : { method: spec.method }),
      ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
      ...(spec.defaultPolicy === undefined ? {} : { defaultPolicy: spec.defaultPolicy }),
    }));
  }
  for (const spec of resolved.mcpServers) {
    const common = {
      name: spec.name,
      grant: spec.grant,
      ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
      ...(spec.defaultPolicy === undefined ? {} : { defaultPolicy: spec.defaultPolicy }),
    };
    if (spec.transport === 'stdio') {
      imports.push(await importMcpServer(registry, { ...common, command: spec.command, args: spec.args, env: spec.env, cwd: spec.cwd }));
    } else {
      const token = spec.bearerTokenEnv === undefined ? undefined : process.env[spec.bearerTokenEnv];
      const headers = token === undefined ? spec.headers : { ...spec.headers, authorization: `Bearer ${token}` };
      imports.push(await importMcpServer(registry, { ...common, url: spec.url, headers }));
    }
  }
  if (resolved.adminTools) registerAdminTools(registry);
}

/** `toolhost_load` and `toolhost_unload`: load or unload a component at runtime (only when the config enables them). */
export function registerAdminTools(registry: ToolRegistry): void {
  registry.register(defineNativeTool({
    name: 'toolhost_load',
    description: 'Load a WebAssembly component (a file path on the host) and register its tools. Admin tool.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'The component file (or a directory of them) on the host.' },
        isolation: { enum: ['call', 'conversation', 'worker'] },
      },
      required: ['path'],
      additionalProperties: false,
    },
    async run(args) {
      const { path, isolation } = args as { path: string; isolation?: 'call' | 'conversation' | 'worker' };
      const report = await registry.registerWasmTools(resolve(path), isolation === undefined ? {} : { isolation });
      return { components: report.components.map((c) => ({ component: c.component, tools: c.tools, cache: c.cache })), renamed: report.renamed };
    },
  }));
  registry.register(defineNativeTool({
    name: 'toolhost_unload',
    description: 'Unregister every tool a component brought. Admin tool.',
    inputSchema: {
      type: 'object',
      properties: { component: { type: 'string', minLength: 1, description: 'The component name (its file name without .wasm).' } },
      required: ['component'],
      additionalProperties: false,
    },
    run(args) {
      const { component } = args as { component: string };
      const removed = registry.unloadComponent(component);
      if (removed.length === 0) throw toolError('NOT_LOADED', `no tools from a component named "${component}" are registered`);
      return { removed };
    },
  }));
}
