/**
 * `toolhost dev [DIR]`: build the tool project, serve it over MCP (stdio or
 * Streamable HTTP), and rebuild and reload it whenever a source changes, so
 * an author can try it in an MCP client while editing. A failed rebuild is
 * reported and the last good component keeps serving; MCP clients are sent
 * `notifications/tools/list_changed` after each reload.
 */
import { watch } from 'node:fs';
import { relative, sep } from 'node:path';
import { createRegistry } from '../compose/registry.js';
import { createDefaultLogger } from '../base/logger.js';
import { buildProject, detectProject, type BuildReport } from '../authoring/project.js';

export interface DevOptions {
  mcp: 'stdio' | 'http';
  port?: number;
  host?: string;
}

const IGNORED = ['node_modules', 'dist', '.git'];

export async function dev(dir: string, options: DevOptions): Promise<number> {
  // Over stdio, stdout carries the protocol: everything else goes to stderr.
  const say = (line: string): void => void process.stderr.write(`toolhost dev: ${line}\n`);
  const project = await detectProject(dir);
  const describe = (report: BuildReport): string =>
    `built ${relative(process.cwd(), report.outFile) || report.outFile} in ${(report.ms / 1000).toFixed(1)} s: ${report.tools.map((tool) => tool.name).join(', ')}`;
  let report = await buildProject(dir);
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

  // Rebuild at most one at a time; changes during a build trigger one more.
  let timer: NodeJS.Timeout | undefined;
  let building = false;
  let again = false;
  const rebuild = async (): Promise<void> => {
    if (building) {
      again = true;
      return;
    }
    building = true;
    try {
      const next = await buildProject(dir);
      registry.unloadComponent(project.name);
      await registry.registerWasmTools(next.outFile);
      report = next;
      say(`re${describe(report)}; reloaded`);
    } catch (error) {
      say(`rebuild failed, still serving the last good build:\n${(error as Error).message}`);
    } finally {
      building = false;
      if (again) {
        again = false;
        void rebuild();
      }
    }
  };
  const watcher = watch(project.dir, { recursive: true }, (_event, filename) => {
    const name = filename?.toString() ?? '';
    if (IGNORED.some((part) => name === part || name.startsWith(`${part}${sep}`))) return;
    clearTimeout(timer);
    timer = setTimeout(() => void rebuild(), 150);
  });
  say(`watching ${project.dir} (Ctrl-C to stop)`);

  await Promise.race([
    ended,
    new Promise((resolveStop) => {
      process.once('SIGINT', resolveStop);
      process.once('SIGTERM', resolveStop);
    }),
  ]);
  watcher.close();
  clearTimeout(timer);
  await close();
  await registry.close();
  return 0;
}
