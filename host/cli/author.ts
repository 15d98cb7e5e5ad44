/** `toolhost build` and `toolhost init`: the tool author's commands (human-readable output). */
import { relative } from 'node:path';
import { buildProject } from '../authoring/project.js';
import type { ToolLanguage } from '../authoring/project.js';
import { initProject } from '../authoring/scaffold.js';

function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' ? '.' : rel.startsWith('..') ? path : rel;
}

function size(bytes: number): string {
  return bytes >= 1048576 ? `${(bytes / 1048576).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

export async function build(dir: string, options: { out?: string; json?: boolean }): Promise<number> {
  const report = await buildProject(dir, options.out === undefined ? {} : { out: options.out });
  if (report.warnings) process.stderr.write(report.warnings.endsWith('\n') ? report.warnings : `${report.warnings}\n`);
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ outFile: report.outFile, lang: report.project.lang, size: report.size, ms: report.ms, imports: report.imports, tools: report.tools }, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(`built ${shown(report.outFile)} (${report.project.lang}, ${size(report.size)}, ${(report.ms / 1000).toFixed(1)} s)\n`);
  process.stdout.write(`imports: ${report.imports.join(', ')}\n`);
  process.stdout.write(`tools:\n`);
  for (const tool of report.tools) {
    const flags = [tool.streaming ? 'streaming' : '', tool.idempotent ? 'idempotent' : ''].filter(Boolean).join(', ');
    process.stdout.write(`  ${tool.name}${flags ? ` (${flags})` : ''}: ${tool.description}\n`);
  }
  return 0;
}

export async function init(dir: string, options: { lang?: ToolLanguage; name?: string; toolhost?: string }): Promise<number> {
  const report = await initProject(dir, {
    ...(options.lang === undefined ? {} : { lang: options.lang }),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.toolhost === undefined ? {} : { toolhostSpec: options.toolhost }),
  });
  const where = shown(report.dir);
  process.stdout.write(`created ${where}: a ${report.lang} tool component "${report.name}" with the tool "${report.tool}"\n`);
  for (const file of report.files) process.stdout.write(`  ${file}\n`);
  process.stdout.write(`toolhost dependency: ${report.toolhostSpec}\n\nnext:\n  cd ${where}\n  npm install\n  npm run build\n  npm test\n  npx toolhost call ${report.tool} --load dist/${report.name}.wasm --args '{"name":"Ada","times":2}'\n`);
  return 0;
}
