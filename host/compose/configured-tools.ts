/**
 * What a config file puts in a registry, in order: components, native HTTP
 * tools, imported MCP servers' tools. A failure names the config entry it came
 * from (`file:line:col:`), so a person can find the line to fix.
 */
import { ToolhostError } from '../base/errors.js';
import type { ToolRegistry } from '../core/registry.js';
import type { ConfigOrigin, HttpToolSpec, McpServerSpec, ToolLoad } from '../config/resolve.js';
import type { McpImport } from '../tools/mcp-import.js';

/** Run `step`; a ToolhostError it throws is re-thrown with the config entry's position in front. */
async function atOrigin<T>(origin: ConfigOrigin | undefined, what: string, step: () => Promise<T> | T): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (origin === undefined || !(error instanceof ToolhostError)) throw error;
    const { file, line, column } = origin;
    throw new ToolhostError(error.code, `${file}:${line}:${column}: ${what}: ${error.message}`, { details: error.details });
  }
}

/** Register each configured component, in order (only `files` of an entry's path, when given: see tool-scope.ts). */
export async function registerConfiguredComponents(registry: ToolRegistry, loads: ReadonlyArray<ToolLoad & { files?: readonly string[] }>, signal?: AbortSignal): Promise<void> {
  for (const load of loads) {
    const options = signal === undefined ? load.options : { ...load.options, signal };
    await atOrigin(load.origin, `tools entry ${load.path}`, () => registry.registerWasmTools(load.files === undefined ? load.path : [...load.files], options));
  }
}

/** Register each configured native HTTP streaming tool (its HTTP client loads only when one is configured). */
export async function registerHttpTools(registry: ToolRegistry, specs: readonly HttpToolSpec[]): Promise<void> {
  if (specs.length === 0) return;
  const { createHttpStreamingTool } = await import('../tools/http-streaming-tool.js');
  for (const spec of specs) {
    await atOrigin(spec.origin, `http_tools entry ${spec.name}`, () =>
      registry.register(createHttpStreamingTool({
        name: spec.name,
        description: spec.description,
        url: spec.url,
        headers: spec.headers,
        inputSchema: spec.inputSchema,
        grant: spec.grant,
        ...(spec.method === undefined ? {} : { method: spec.method }),
        ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
        ...(spec.propagateTrace === true ? { propagateTrace: true } : {}),
        ...(spec.defaultPolicy === undefined ? {} : { defaultPolicy: spec.defaultPolicy }),
      })),
    );
  }
}

/**
 * Connect to each configured MCP server and register its tools as
 * `<server>.<tool>`. Imports made before a failure are pushed to `imports`,
 * so the caller can close them. The MCP client is loaded only when a server
 * is configured.
 */
export async function importConfiguredMcpServers(registry: ToolRegistry, specs: readonly McpServerSpec[], imports: McpImport[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (specs.length === 0) return;
  const { importMcpServer } = await import('../tools/mcp-import.js');
  for (const spec of specs) {
    const common = {
      name: spec.name,
      grant: spec.grant,
      ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
      ...(spec.protocol === undefined ? {} : { protocol: spec.protocol }),
      ...(spec.defaultPolicy === undefined ? {} : { defaultPolicy: spec.defaultPolicy }),
    };
    const imported = await atOrigin(spec.origin, `mcp_servers entry ${spec.name}`, () => {
      if (spec.transport === 'stdio') {
        return importMcpServer(registry, { ...common, command: spec.command, args: spec.args, env: spec.env, cwd: spec.cwd });
      }
      const token = spec.bearerTokenEnv === undefined ? undefined : env[spec.bearerTokenEnv];
      const headers = token === undefined ? spec.headers : { ...spec.headers, authorization: `Bearer ${token}` };
      return importMcpServer(registry, { ...common, url: spec.url, headers });
    });
    imports.push(imported);
  }
}
