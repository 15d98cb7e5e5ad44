/**
 * `toolhost_load` and `toolhost_unload`: load or unload a component at
 * runtime. Registered only when the config says `admin_tools: true`. Who may
 * call them and which local files load is admin-access.ts's decision: an
 * authenticated caller (unless every caller is local), files only inside
 * `admin.load_dirs`. A remote source
 * (`oci://`, `https://…#sha256=`) loads only from a source
 * `distribution.registries` lists (none unless configured) and only verified
 * with the host's trust: the load is marked `runtime`, the fetcher decides
 * (and answers from its store only what was fetched for that very source). A
 * path inside the store or the transpile cache is refused. The load takes the
 * call's signal: a cancelled or timed-out call ends its fetch.
 */
import { resolve } from 'node:path';
import { ToolhostError, toolError } from '../base/errors.js';
import type { ToolRegistry } from '../core/registry.js';
import { defineNativeTool } from '../core/tool.js';
import { overlapWith } from '../policy/host-owned-paths.js';
import { allowedLocalFiles, checkAdminCaller, type AdminAccess } from './admin-access.js';

export type { AdminAccess } from './admin-access.js';

/**
 * A client never loads by path what the host fetched (the store holds components loaded under verify.skip) or
 * transpiled: such a path is refused whatever spelling (relative, `..`, a symlink) reaches it.
 */
function refuseStorePath(registry: ToolRegistry, path: string): void {
  const owned = registry.hostOwnedPaths.list().filter(({ kind }) => kind === 'store' || kind === 'cache');
  const overlap = overlapWith(path, owned);
  if (overlap !== undefined && (overlap.relation === 'inside' || overlap.entry === overlap.realWorktree)) {
    throw new ToolhostError('PERMISSION_DENIED', `${path} is inside ${overlap.owned.path} (the host's ${overlap.owned.kind === 'store' ? 'store of fetched components' : 'transpile cache'}): a component there is loaded by its remote source, never by path`, { details: { reason: 'host-owned', kind: overlap.owned.kind } });
  }
}

/** The admin tools' names (a one-call host checks them for collisions without registering them first). */
export const ADMIN_TOOL_NAMES = ['toolhost_load', 'toolhost_unload'] as const;

export function registerAdminTools(registry: ToolRegistry, access: AdminAccess = {}): void {
  registry.register(defineNativeTool({
    name: ADMIN_TOOL_NAMES[0],
    description: 'Load a WebAssembly component (a file path on the host) and register its tools. Admin tool.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'The component file (or a directory of them) on the host, or a remote source the host allows (distribution.registries): oci://REGISTRY/REPO:TAG, oci://REGISTRY/REPO@sha256:HEX, https://HOST/PATH.wasm#sha256=HEX.' },
        isolation: { enum: ['call', 'conversation', 'worker'] },
      },
      required: ['path'],
      additionalProperties: false,
    },
    async run(args, ctx) {
      checkAdminCaller(access, ctx.principal, ADMIN_TOOL_NAMES[0]);
      const { path, isolation } = args as { path: string; isolation?: 'call' | 'conversation' | 'worker' };
      const remote = /^(oci|https?):\/\//i.test(path);
      if (!remote) refuseStorePath(registry, resolve(path));
      const report = await registry.registerWasmTools(remote ? path : allowedLocalFiles(access, path), { runtime: true, signal: ctx.signal, ...(isolation === undefined ? {} : { isolation }) });
      return { components: report.components.map((c) => ({ component: c.component, tools: c.tools, cache: c.cache })), renamed: report.renamed };
    },
  }));
  registry.register(defineNativeTool({
    name: ADMIN_TOOL_NAMES[1],
    description: 'Unregister every tool a component brought. Admin tool.',
    inputSchema: {
      type: 'object',
      properties: { component: { type: 'string', minLength: 1, description: 'The component name (its file name without .wasm).' } },
      required: ['component'],
      additionalProperties: false,
    },
    run(args, ctx) {
      checkAdminCaller(access, ctx.principal, ADMIN_TOOL_NAMES[1]);
      const { component } = args as { component: string };
      const removed = registry.unloadComponent(component);
      if (removed.length === 0) throw toolError('NOT_LOADED', `no tools from a component named "${component}" are registered`);
      return { removed };
    },
  }));
}
