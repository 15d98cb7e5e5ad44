/**
 * `toolhost build [DIR]`: find what kind of tool project DIR is, build it into
 * one component, and check that component the way the host will load it.
 *
 * A project is recognised from its files (or `package.json` → `"toolhost"`):
 * - TypeScript: `src/index.ts` (or `index.ts`);
 * - JavaScript: `src/index.js` / `src/index.mjs` (or at the top);
 * - C: the `.c` files in `src/` (or at the top), compiled with the shipped C SDK.
 * `package.json` may say `"toolhost": { "lang": "c" | "js" | "ts", "entry": "...",
 * "sources": [...], "name": "...", "out": "...", "disableFeatures": [...],
 * "world": "0.1.0" | "0.2.0" | "0.3.0" }`: the tool world to build against (default 0.1.0,
 * wit/tool.wit; 0.2.0 is wit/v0.2/tool.wit, world tool-provider: content items,
 * title, annotations, icons, sample and elicit; `toolhost init` writes 0.2.0;
 * 0.3.0 is wit/v0.3/tool.wit, 0.2.0 plus `ask`, for JS and TS projects).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import { silentLogger } from '../base/logger.js';
import { reportProgress } from '../base/progress.js';
import type { GuestToolInfo } from '../sandbox/protocol.js';
import { BuildError } from './errors.js';
import { containedDir, containedOutput, containedSource, projectRoot } from './contained.js';
import { buildCComponent } from './c.js';
import { buildJsComponent, type ComponentizeFeature } from './js.js';
import { worldV2WitPath, worldV3WitPath, worldWitPath } from './paths.js';

export type ToolLanguage = 'c' | 'js' | 'ts';
export const TOOL_LANGUAGES: readonly ToolLanguage[] = ['ts', 'js', 'c'];
export type ToolWorld = '0.1.0' | '0.2.0' | '0.3.0';
export const TOOL_WORLDS: readonly ToolWorld[] = ['0.1.0', '0.2.0', '0.3.0'];

/** The WIT file of each world, shipped in the package. */
const WORLD_WIT: Record<ToolWorld, () => string> = { '0.1.0': worldWitPath, '0.2.0': worldV2WitPath, '0.3.0': worldV3WitPath };

export interface ToolProject {
  dir: string;
  lang: ToolLanguage;
  /** The component's name (the output file's stem). */
  name: string;
  /** The JS/TS entry, or the C sources. */
  sources: string[];
  outFile: string;
  /** The tool world's version (`toolhost:tool@WORLD`). */
  world: ToolWorld;
  disableFeatures?: ComponentizeFeature[];
}

interface ManifestSection {
  lang?: unknown;
  entry?: unknown;
  sources?: unknown;
  name?: unknown;
  out?: unknown;
  disableFeatures?: unknown;
  world?: unknown;
}

/** A name usable as a file stem and a tool-name prefix: lower case, [a-z0-9_-]. */
export function componentName(raw: string): string {
  const name = raw.replace(/^@[^/]+\//, '').toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^[-_]+|[-_]+$/g, '');
  return name === '' ? 'tool' : name.slice(0, 64);
}

function cFiles(dir: string | undefined): string[] {
  if (dir === undefined) return [];
  return readdirSync(dir).filter((file) => file.endsWith('.c')).sort().map((file) => join(dir, file));
}

function firstExisting(dir: string, candidates: string[]): string | undefined {
  return candidates.map((candidate) => join(dir, candidate)).find((path) => existsSync(path));
}

/**
 * Read DIR's layout; `out` overrides where the component goes. Every source and the output resolve inside DIR
 * after symlinks (see contained.ts), except an `out` the caller passes.
 */
export async function detectProject(dirArg: string, options: { out?: string } = {}): Promise<ToolProject> {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new BuildError('PROJECT_INVALID', `${dirArg} is not a directory`);
  const root = projectRoot(dir);
  let manifest: { name?: unknown; toolhost?: ManifestSection } = {};
  const manifestPath = join(dir, 'package.json');
  if (existsSync(manifestPath)) {
    containedSource(root, dir, 'package.json', 'the manifest');
    try {
      manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as typeof manifest;
    } catch (error) {
      throw new BuildError('PROJECT_INVALID', `${manifestPath} is not valid JSON: ${(error as Error).message}`);
    }
  }
  const section: ManifestSection = manifest.toolhost ?? {};
  if (section.lang !== undefined && !TOOL_LANGUAGES.includes(section.lang as ToolLanguage)) {
    throw new BuildError('PROJECT_INVALID', `package.json: toolhost.lang must be one of ${TOOL_LANGUAGES.join(', ')}`);
  }

  if (section.world !== undefined && !TOOL_WORLDS.includes(section.world as ToolWorld)) {
    throw new BuildError('PROJECT_INVALID', `package.json: toolhost.world must be one of ${TOOL_WORLDS.join(', ')}`);
  }
  let lang = section.lang as ToolLanguage | undefined;
  let sources: string[] = [];
  if (typeof section.entry === 'string') {
    sources = [containedSource(root, dir, section.entry, 'package.json: toolhost.entry')];
    lang ??= section.entry.endsWith('.ts') ? 'ts' : section.entry.endsWith('.c') ? 'c' : 'js';
  } else if (Array.isArray(section.sources)) {
    sources = section.sources.map((source) => containedSource(root, dir, String(source), 'package.json: toolhost.sources'));
    lang ??= 'c';
  } else {
    const ts = firstExisting(dir, ['src/index.ts', 'index.ts']);
    const js = firstExisting(dir, ['src/index.js', 'src/index.mjs', 'index.js', 'index.mjs']);
    const inSrc = cFiles(containedDir(root, dir, 'src'));
    const c = inSrc.length > 0 ? inSrc : cFiles(dir);
    const found = [ts && 'ts', js && 'js', c.length > 0 && 'c'].filter(Boolean) as ToolLanguage[];
    if (lang === undefined) {
      if (found.length === 0) {
        throw new BuildError('PROJECT_INVALID', `${dirArg}: no tool sources found (looked for src/index.ts, src/index.js, src/*.c); start one with: toolhost init ${dirArg}`);
      }
      if (found.length > 1) throw new BuildError('PROJECT_INVALID', `${dirArg}: sources for ${found.join(' and ')} found; say which in package.json: "toolhost": { "lang": "..." }`);
      lang = found[0]!;
    }
    sources = lang === 'ts' ? (ts ? [ts] : []) : lang === 'js' ? (js ? [js] : []) : c;
    if (sources.length === 0) throw new BuildError('PROJECT_INVALID', `${dirArg}: no ${lang} sources found`);
    sources = sources.map((source) => containedSource(root, dir, relative(dir, source), 'the source'));
  }

  const name = componentName(typeof section.name === 'string' ? section.name : typeof manifest.name === 'string' ? manifest.name : basename(dir));
  const outFile = options.out !== undefined
    ? resolve(options.out)
    : typeof section.out === 'string'
      ? containedOutput(root, dir, section.out, 'package.json: toolhost.out')
      : containedOutput(root, dir, join('dist', `${name}.wasm`), 'the output');
  const project: ToolProject = { dir, lang, name, sources, outFile, world: (section.world as ToolWorld | undefined) ?? '0.1.0' };
  if (project.lang === 'c' && project.world === '0.3.0') {
    throw new BuildError('PROJECT_INVALID', 'package.json: the C SDK builds for the 0.1.0 and 0.2.0 tool worlds; 0.3.0 (`ask`) is for JS and TS tools for now: say "world": "0.2.0"');
  }
  if (Array.isArray(section.disableFeatures)) project.disableFeatures = section.disableFeatures as ComponentizeFeature[];
  return project;
}

export interface BuildReport {
  project: ToolProject;
  outFile: string;
  size: number;
  ms: number;
  /** The tools the component describes, as the host loaded them. */
  tools: Array<Pick<GuestToolInfo, 'name' | 'description' | 'streaming' | 'idempotent'> & { inputSchema: unknown }>;
  /** The interfaces the component imports (toolhost's and WASI's). */
  imports: string[];
  /** Compiler warnings, if any. */
  warnings?: string;
}

/**
 * Load a built component the way a host does (header, transpile, exports,
 * supported imports, describe() in a worker) and report its tools.
 */
export async function checkComponent(file: string): Promise<{ tools: BuildReport['tools']; imports: string[] }> {
  const [{ sourceFromFile }, { SandboxLoader }] = await Promise.all([import('../sandbox/load/component-file.js'), import('../sandbox/loader.js')]);
  const source = await sourceFromFile(file);
  const loader = new SandboxLoader({ threads: 1 }, silentLogger);
  try {
    const loaded = await loader.loadSource(source);
    const cached = await loader.cache.prepare(source.id, source.bytes, file); // a cache hit: the load just put it there
    return {
      tools: loaded.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema, streaming: tool.streaming, idempotent: tool.idempotent })),
      imports: cached.meta.imports,
    };
  } catch (error) {
    if (error instanceof ToolhostError) throw new BuildError('CHECK_FAILED', `${file} was built but does not load: ${error.code}: ${error.message}`);
    throw error;
  } finally {
    await loader.close();
  }
}

/** Build the project in `dir` and check the result. */
export async function buildProject(dir: string, options: { out?: string } = {}): Promise<BuildReport> {
  const project = await detectProject(dir, options);
  const started = performance.now();
  const witPath = WORLD_WIT[project.world]();
  // Stages on the progress channel (base/progress.ts): a JS build is silent for 10-30 s otherwise.
  const task = basename(project.outFile);
  const stage = (text: string): void => reportProgress({ kind: 'stage', task, stage: text });
  let ok = false;
  try {
    stage(project.lang === 'c' ? 'compiling (clang, wasm32-wasi) and making a component' : 'bundling and componentizing (componentize-js: SpiderMonkey and Wizer, ~10-30 s)');
    const report = await buildAndCheck(project, witPath, started, () => stage('checking (transpile, describe() in a worker)'));
    ok = true;
    return report;
  } finally {
    reportProgress({ kind: 'end', task, ok });
  }
}

async function buildAndCheck(project: ToolProject, witPath: string, started: number, checking: () => void): Promise<BuildReport> {
  let size: number;
  let warnings = '';
  if (project.lang === 'c') {
    const built = await buildCComponent({ witPath, sources: project.sources, includeDirs: [containedDir(projectRoot(project.dir), project.dir, 'src'), project.dir].filter((path): path is string => path !== undefined), outFile: project.outFile });
    size = built.size;
    warnings = built.warnings;
  } else {
    const built = await buildJsComponent({
      source: project.sources[0]!,
      outFile: project.outFile,
      witPath,
      cwd: project.dir,
      ...(project.disableFeatures === undefined ? {} : { disableFeatures: project.disableFeatures }),
    });
    size = built.size;
  }
  checking();
  const checked = await checkComponent(project.outFile).catch((error: unknown) => {
    // A 0.1.0 tool (defineComponent, or a C SDK built without TOOLHOST_WORLD_0_2) in a 0.2.0 project traps in describe().
    if (error instanceof BuildError && error.kind === 'CHECK_FAILED' && project.world !== '0.1.0' && project.lang !== 'c') {
      throw new BuildError('CHECK_FAILED', `${error.message}\n(package.json says "toolhost": { "world": "${project.world}" }: define the tools with defineMcpComponent from 'toolhost/guest/mcp', or say "world": "0.1.0" for defineComponent)`);
    }
    throw error;
  });
  const report: BuildReport = { project, outFile: project.outFile, size, ms: Math.round(performance.now() - started), tools: checked.tools, imports: checked.imports };
  if (warnings.trim() !== '') report.warnings = warnings;
  return report;
}
