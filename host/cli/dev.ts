/**
 * `toolhost dev [DIR]`: build the tool project, serve it over MCP (stdio or
 * Streamable HTTP) under the project's host config, and rebuild and reload it
 * whenever a source changes, so an author can try it in an MCP client, in the
 * world it will run in, while editing.
 *
 * The host is the one `toolhost serve` would build from the same config
 * (`--config`, else DIR/toolhost.yaml when present, else the embedded
 * defaults without their example tools): the config's entry for the
 * project's component (its `path` names the built file, or the directory it
 * is in) gives it its grant and default policy (worktree, sampling,
 * elicitation, network, ...), and the config's approval, audit and limits
 * apply; a component the config does not name is loaded with no grant, as
 * `--load` does. `--worktree DIR` is the worktree of every call (over a
 * grant's own). Each reload uses the same entry.
 *
 * A TypeScript project is type-checked first, with its own TypeScript and
 * tsconfig (`tsc --noEmit -p tsconfig.json`, what its `npm run build` runs):
 * a type error, like a failed build, is printed and the last good build keeps
 * serving. MCP clients are sent `notifications/tools/list_changed` after each
 * reload. The watcher (chokidar, dev-watch.ts) is ready before the first build
 * starts, so an edit made while it runs is built right after it; each rebuild
 * says which changes caused it.
 *
 * Not guaranteed: that an MCP client re-reads the tool list when notified
 * (most do); that a config edited while dev runs is read again (restart dev).
 */
import { existsSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { buildProject, detectProject, type BuildReport, type ToolProject } from '../authoring/project.js';
import type { Host } from '../compose/host.js';
import { typeCheckProject } from '../authoring/typecheck.js';
import type { ToolLoad } from '../config/resolve.js';
import type { ToolGrant } from '../policy/grant.js';
import { UsageError } from './usage-error.js';

export interface DevOptions {
  mcp: 'stdio' | 'http';
  port?: number;
  host?: string;
  /** The host config the tool runs under (default: DIR/toolhost.yaml when present). */
  config?: string;
  /** The worktree of every call (over the grant's own). */
  worktree?: string;
}

/** Whether a config entry's `path` names `file` (the file itself, or a directory it is in). */
function names(entryPath: string, file: string): boolean {
  if (entryPath === file) return true;
  return file.startsWith(entryPath + sep) && existsSync(entryPath) && statSync(entryPath).isDirectory();
}

/** What a grant gives, in a few words (`privilege DEFAULT, worktree /w, sampling, elicitation`). */
export function describeGrant(grant: ToolGrant | undefined): string {
  if (grant === undefined) return 'no grant';
  const parts: string[] = [];
  if (grant.privilege !== undefined) parts.push(`privilege ${grant.privilege}`);
  if (grant.network !== undefined) parts.push(`network ${grant.network}`);
  if (grant.worktree !== undefined) parts.push(`worktree ${grant.worktree}`);
  if (grant.sampling !== undefined) parts.push('sampling');
  if (grant.elicitation !== undefined) parts.push('elicitation');
  if (grant.roots !== undefined) parts.push('roots');
  if (grant.state?.access !== undefined) parts.push(`state ${grant.state.access}`);
  return parts.length === 0 ? 'an empty grant' : parts.join(', ');
}

/**
 * The host for the built project: the config (`configPath`, else the embedded defaults without their examples)
 * with the project's component in it, under its entry's grant when the config names it. Returns that entry.
 * Run after the first build: the config check wants the entry's file to exist.
 */
async function openDevHost(
  project: ToolProject,
  configPath: string | undefined,
  say: (line: string) => void,
  createHost: typeof import('../compose/host.js').createHost,
  loadHostConfig: typeof import('../compose/host.js').loadHostConfig,
): Promise<{ host: Host; entry: ToolLoad | undefined }> {
  // `load` says a component comes besides the config: without a file, the example tools are left out.
  const loaded = await loadHostConfig({ cwd: project.dir, load: [project.outFile], ...(configPath === undefined ? {} : { configPath }) });
  for (const warning of loaded.warnings) say(warning);
  const entry = loaded.config.tools.find((tool) => names(tool.path, project.outFile));
  const where = loaded.file === undefined ? 'no toolhost.yaml' : relative(process.cwd(), loaded.file) || loaded.file;
  say(entry === undefined
    ? `${where}${loaded.file === undefined ? '' : ` names no ${relative(project.dir, project.outFile)}`}: the tool runs with no grant (add a tools entry with a grant to give it one)`
    : `the tool runs under ${where}: ${describeGrant(entry.options.grant)}`);
  return { host: await createHost(loaded.config, { load: entry === undefined ? [project.outFile] : [] }), entry };
}

export async function dev(dir: string, options: DevOptions): Promise<number> {
  // Over stdio, stdout carries the protocol: everything else goes to stderr.
  const say = (line: string): void => void process.stderr.write(`toolhost dev: ${line}\n`);
  const worktree = options.worktree === undefined ? undefined : resolve(options.worktree);
  if (worktree !== undefined && !(existsSync(worktree) && statSync(worktree).isDirectory())) throw new UsageError(`--worktree must name an existing directory: ${options.worktree}`);
  const project = await detectProject(dir);
  const configPath = options.config !== undefined ? resolve(options.config) : existsSync(join(project.dir, 'toolhost.yaml')) ? join(project.dir, 'toolhost.yaml') : undefined;
  // The host's modules load here, after the project was found (as `list` and `call` do).
  const [{ createHost, loadHostConfig }, { RebuildQueue, describeReasons, watchSources }] = await Promise.all([import('../compose/host.js'), import('./dev-watch.js')]);
  const describe = (report: BuildReport): string =>
    `built ${relative(process.cwd(), report.outFile) || report.outFile} in ${(report.ms / 1000).toFixed(1)} s: ${report.tools.map((tool) => tool.name).join(', ')}`;
  let typeChecked = false;
  /** Type-check (TypeScript), then build; throws what failed. */
  const build = async (): Promise<{ report: BuildReport; checked: string }> => {
    let checked = '';
    if (project.lang === 'ts') {
      const check = await typeCheckProject(project.dir);
      if (check.checked) checked = `type-checked in ${(check.ms / 1000).toFixed(1)} s, `;
      else if (!typeChecked) say(`not type-checked: ${check.why}`);
      typeChecked = true;
    }
    return { report: await buildProject(project.dir), checked };
  };

  // Watch first: a save made during the first build queues a rebuild instead of being lost.
  const queue = new RebuildQueue({ build: (reasons) => rebuild(reasons) });
  const watcher = await watchSources(project.dir, (reason) => queue.changed(reason));
  const stopWatching = async (): Promise<void> => {
    queue.close();
    await watcher.close();
  };
  let host: Host;
  let entry: ToolLoad | undefined;
  try {
    const first = await build();
    say(`${first.checked}${describe(first.report)}`);
    ({ host, entry } = await openDevHost(project, configPath, say, createHost, loadHostConfig));
  } catch (error) {
    await stopWatching();
    throw error;
  }
  if (worktree !== undefined) say(`every call's worktree: ${worktree}`);
  const { registry } = host;
  let close: () => Promise<void>;
  let ended: Promise<unknown> = new Promise(() => undefined);
  const served = worktree === undefined ? {} : { worktree: () => worktree };
  try {
    if (options.mcp === 'http') {
      const { startMcpHttpServer } = await import('../servers/mcp-http.js');
      const server = await startMcpHttpServer(registry, { host: options.host ?? '127.0.0.1', port: options.port ?? 3000, ...served });
      say(`serving over MCP at ${server.url}`);
      close = () => server.close();
    } else {
      const { serveMcpStdio } = await import('../servers/mcp-stdio.js');
      const server = await serveMcpStdio(registry, served);
      say('serving over MCP stdio');
      close = () => server.close();
      ended = server.closed;
    }
  } catch (error) {
    await stopWatching();
    await host.close();
    throw error;
  }

  async function rebuild(reasons: string[]): Promise<'built' | 'failed'> {
    const why = describeReasons(reasons);
    say(`rebuilding (${why})`);
    try {
      const next = await build();
      registry.unloadComponent(project.name);
      await registry.registerWasmTools(next.report.outFile, entry?.options ?? {});
      say(`${next.checked}re${describe(next.report)}; reloaded (${why})`);
      return 'built';
    } catch (error) {
      say(`rebuild failed (${why}), still serving the last good build:\n${(error as Error).message}`);
      return 'failed';
    }
  }
  queue.start();
  say(`watching ${project.dir} (Ctrl-C to stop)`);

  await Promise.race([
    ended,
    new Promise((resolveStop) => {
      process.once('SIGINT', resolveStop);
      process.once('SIGTERM', resolveStop);
    }),
  ]);
  queue.close();
  await watcher.close();
  await queue.idle();
  await close();
  await host.close();
  return 0;
}
