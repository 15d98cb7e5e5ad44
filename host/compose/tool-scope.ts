/**
 * What a host opened for one call (`toolhost call NAME`) must load: only the
 * component that carries NAME (or the HTTP tool named NAME), as the transpile
 * cache's descriptions tell, instead of every component, HTTP tool and MCP
 * server of the config. Loading the example tools to call one of them costs
 * reading and checking five components and compiling every tool's schema.
 *
 * The scope is used only when it cannot change the answer: every component's
 * id is remembered and its tools described in the cache, and every tool name
 * (components', HTTP tools', the admin and fleet tools') is unique, so no
 * tool is renamed, no registration collides and nothing is logged about it,
 * and NAME is registered under its own name, by the same component with the
 * same options as with everything loaded. Anything else (an unknown NAME,
 * with its TOOL_NOT_FOUND suggestions; a dotted name, which may be an MCP
 * server's or a renamed tool; a component the cache has not seen) loads it
 * all. MCP servers are left out: their tools are named `<server>.<tool>`.
 */
import type { ResolvedConfig, HttpToolSpec, ToolLoad } from '../config/resolve.js';
import { ComponentCache } from '../sandbox/load/component-cache.js';
import { expandComponentPaths } from '../sandbox/load/component-file.js';
import { ADMIN_TOOL_NAMES } from '../tools/admin-tools.js';
import { CANCEL_TOOL } from '../tools/fleet-tools.js';

/** What to load for the call: config component loads narrowed to files, `--load` files, HTTP tools. */
export interface ToolScope {
  /** Config entries with the files of theirs to load (the entry keeps its path for error messages). */
  tools: Array<ToolLoad & { files: string[] }>;
  load: string[];
  httpTools: HttpToolSpec[];
}

/** A plain tool name, as components must name their tools: no dot, so neither an MCP import's nor a renamed tool's. */
const PLAIN_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** The tools the cache has described for each file, or undefined when it cannot tell for one of them. */
async function cachedTools(cache: ComponentCache, files: readonly string[]): Promise<string[][] | undefined> {
  const described = await Promise.all(files.map(async (file) => {
    const id = await cache.ids.known(file);
    return id === undefined ? undefined : cache.describedTools(id);
  }));
  const names: string[][] = [];
  for (const tools of described) {
    if (tools === undefined) return undefined;
    names.push(tools.map((tool) => tool.name));
  }
  return names;
}

/**
 * The scope of a host opened to call `name`, or undefined when everything must
 * load (see the header for when).
 */
export async function scopeToTool(name: string, config: ResolvedConfig, load: readonly string[]): Promise<ToolScope | undefined> {
  if (!PLAIN_NAME.test(name)) return undefined;
  // Every component file, in load order, with the config entry it comes from (none: `--load`).
  const sources: Array<{ file: string; entry?: ToolLoad }> = [];
  try {
    for (const entry of config.tools) for (const file of await expandComponentPaths([entry.path])) sources.push({ file, entry });
    for (const file of await expandComponentPaths([...load])) sources.push({ file });
  } catch {
    // A path that cannot be read: the full load says so, with its own message.
    return undefined;
  }
  const tools = await cachedTools(new ComponentCache(config.sandbox.cacheDir), sources.map((source) => source.file));
  if (tools === undefined) return undefined;

  // (A file loaded twice brings its names twice: not unique either.)
  const names = [
    ...tools.flat(),
    ...config.httpTools.map((spec) => spec.name),
    ...(config.adminTools ? ADMIN_TOOL_NAMES : []),
    ...(config.cluster === undefined ? [] : [CANCEL_TOOL]),
  ];
  if (new Set(names).size !== names.length || !tools.flat().every((tool) => PLAIN_NAME.test(tool))) return undefined;

  const carrier = sources[tools.findIndex((list) => list.includes(name))];
  const http = config.httpTools.find((spec) => spec.name === name);
  if (carrier === undefined && http === undefined) return undefined;
  return {
    tools: carrier?.entry === undefined ? [] : [{ ...carrier.entry, files: [carrier.file] }],
    load: carrier !== undefined && carrier.entry === undefined ? [carrier.file] : [],
    httpTools: http === undefined ? [] : [http],
  };
}
