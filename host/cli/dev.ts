/**
 * `toolhost dev [DIR]`: build the tool project, serve it over MCP (stdio or
 * Streamable HTTP), and rebuild and reload it whenever a source changes, so
 * an author can try it in an MCP client while editing. A failed rebuild is
 * reported and the last good component keeps serving; MCP clients are sent
 * `notifications/tools/list_changed` after each reload.
 *
 * The watcher (chokidar, dev-watch.ts) is ready before the first build starts, so an edit made while it runs
 * is built right after it; each rebuild says which changes caused it. Not guaranteed: that an MCP client
 * re-reads the tool list when notified (most do).
 */
import { relative } from 'node:path';
import { createRegistry } from '../compose/registry.js';
import { createDefaultLogger } from '../base/logger.js';
import { buildProject, detectProject, type BuildReport } from '../authoring/project.js';
import { RebuildQueue, describeReasons, watchSources } from './dev-watch.js';

export interface DevOptions {
  mcp: 'stdio' | 'http';
  port?: number;
  host?: string;
}

export async function dev(dir: string, options: DevOptions): Promise<number> {
  // Over stdio, stdout carries the protocol: everything else goes to stderr.
  const say = (line: string): void => void process.stderr.write(`toolhost dev: ${line}\n`);
  const project = await detectProject(dir);
  const describe = (report: BuildReport): string =>
    `built ${relative(process.cwd(), report.outFile) || report.outFile} in ${(report.ms / 1000).toFixed(1)} s: ${report.tools.map((tool) => tool.name).join(', ')}`;
  // Watch first: a save made during the first build queues a rebuild instead of being lost.
  const queue = new RebuildQueue({ build: (reasons) => rebuild(reasons) });
  const watcher = await watchSources(project.dir, (reason) => queue.changed(reason));
  let report: BuildReport;
  try {
    report = await buildProject(dir);
  } catch (error) {
    queue.close();
    await watcher.close();
    throw error;
  }
  say(describe(report));

  const registry = createRegistry({ logger: createDefaultLogger(process.env.TOOLHOST_LOG ?? 'warn'), sandbox: { threads: 1 } });
  await registry.registerWasmTools(report.outFile);
  let close: () => Promise<void>;
  let ended: Promise<unknown> = new Promise(() => undefined);
  if (options.mcp === 'http') {
    const { startMcpHttpServer } = await import('../servers/mcp-http.js');
    const server = await startMcpHttpServer(registry, { host: options.host ?? '127.0.0.1', port: options.port ?? 3000 });
    say(`serving over MCP at ${server.url}`);
    close = () => server.close();
  } else {
    const { serveMcpStdio } = await import('../servers/mcp-stdio.js');
    const server = await serveMcpStdio(registry);
    say('serving over MCP stdio');
    close = () => server.close();
    ended = server.closed;
  }

  async function rebuild(reasons: string[]): Promise<'built' | 'failed'> {
    const why = describeReasons(reasons);
    say(`rebuilding (${why})`);
    try {
      const next = await buildProject(dir);
      registry.unloadComponent(project.name);
      await registry.registerWasmTools(next.outFile);
      report = next;
      say(`re${describe(report)}; reloaded (${why})`);
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
  await registry.close();
  return 0;
}
