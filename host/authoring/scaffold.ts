/**
 * `toolhost init DIR`: a new tool project that builds and passes its own test
 * right away. The files come from `templates/<lang>/` in the package, with
 * `{{name}}`, `{{tool}}` and the dependency versions filled in. A `package.json`
 * template is filled as JSON (each value one escaped string, never package.json
 * text), and a `--toolhost` spec with control characters is refused.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import { BuildError } from './errors.js';
import { componentName, TOOL_LANGUAGES, type ToolLanguage } from './project.js';

export interface InitOptions {
  lang?: ToolLanguage;
  /** The component's name (default: DIR's base name). */
  name?: string;
  /** The `toolhost` dependency to write into package.json (default: see `defaultToolhostSpec`). */
  toolhostSpec?: string;
}

export interface InitReport {
  dir: string;
  lang: ToolLanguage;
  name: string;
  tool: string;
  files: string[];
  toolhostSpec: string;
}

interface OwnManifest {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

async function ownManifest(): Promise<OwnManifest> {
  return JSON.parse(await readFile(join(packageRoot(), 'package.json'), 'utf8')) as OwnManifest;
}

/** How the project in `holder` depends on toolhost (its package.json's spec), if it says. */
function holderSpec(holder: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(holder, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | undefined>;
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies']) {
      const spec = manifest[field]?.toolhost;
      if (typeof spec === 'string') return spec;
    }
  } catch {
    // no manifest, or not JSON: nothing to follow
  }
  return undefined;
}

/** A registry spec: a version or range (`^0.1.0`, `0.1.x`, `>=0.1`), a dist-tag, or `npm:`. */
const REGISTRY_SPEC = /^(?:npm:|[\^~<>=v]|\d|\*|x$|latest$|next$)/;

/**
 * The `toolhost` dependency for a project in `projectDir`: `^version` when toolhost was installed from a
 * registry (npx, global, or a project that depends on a registry version); when the new project sits inside
 * the project that installed it from a packed tarball, that tarball by its absolute path (the registry may not
 * have this version; the spec still works after the new project moves, and a tarball runs no `prepare`);
 * otherwise the installed or source copy this toolhost runs from, by its absolute path. Never a relative
 * `file:../node_modules/toolhost`, which broke as soon as the project moved.
 */
export function defaultToolhostSpec(projectDir: string, version: string, root: string = packageRoot()): string {
  if (basename(dirname(root)) !== 'node_modules') return `file:${root}`;
  const holder = dirname(dirname(root));
  if (!resolve(projectDir).startsWith(holder + sep)) return `^${version}`;
  const spec = holderSpec(holder);
  if (spec?.startsWith('file:')) {
    const target = resolve(holder, spec.slice('file:'.length));
    if (/\.(?:tgz|tar\.gz)$/.test(target) && existsSync(target)) return `file:${target}`;
  } else if (spec !== undefined && REGISTRY_SPEC.test(spec)) {
    return `^${version}`;
  }
  return `file:${root}`;
}

/** The longest `--toolhost` spec accepted (npm's own specs are far shorter). */
const MAX_SPEC_LENGTH = 1024;

/** A dependency spec as `init` takes it: a non-empty string without control characters (it is printed and written as one JSON string). */
export function checkToolhostSpec(spec: string): string {
  // eslint-disable-next-line no-control-regex
  if (spec.trim() === '' || spec.length > MAX_SPEC_LENGTH || /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(spec)) {
    throw new BuildError('PROJECT_INVALID', `--toolhost must be a dependency spec (e.g. ^1.2.0, file:../toolhost, a tarball URL): non-empty, at most ${MAX_SPEC_LENGTH} characters, no control characters or line breaks`);
  }
  return spec;
}

/** Fill every `{{key}}` in the string values of a JSON template (keys and structure stay the template's). */
function fillJson(value: unknown, fill: (text: string) => string): unknown {
  if (typeof value === 'string') return fill(value);
  if (Array.isArray(value)) return value.map((item) => fillJson(item, fill));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fillJson(item, fill)]));
  return value;
}

async function listTemplate(dir: string, prefix = ''): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) files.push(...(await listTemplate(join(dir, entry.name), rel)));
    else files.push(rel);
  }
  return files.sort();
}

export async function initProject(dirArg: string, options: InitOptions = {}): Promise<InitReport> {
  const lang = options.lang ?? 'ts';
  if (!TOOL_LANGUAGES.includes(lang)) throw new BuildError('PROJECT_INVALID', `--lang must be one of ${TOOL_LANGUAGES.join(', ')}`);
  const dir = resolve(dirArg);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new BuildError('PROJECT_INVALID', `${dirArg} exists and is not a directory`);
    if (readdirSync(dir).some((name) => name !== '.git')) throw new BuildError('PROJECT_INVALID', `${dirArg} is not empty: toolhost init writes a new project into an empty or new directory`);
  }
  const name = componentName(options.name ?? basename(dir));
  const tool = name.replace(/-/g, '_');
  const manifest = await ownManifest();
  const toolhostSpec = checkToolhostSpec(options.toolhostSpec ?? defaultToolhostSpec(dir, manifest.version));
  const dev = manifest.devDependencies ?? {};
  const values: Record<string, string> = {
    name,
    tool,
    toolhostSpec,
    vitestVersion: dev.vitest ?? '^4.1.0',
    typescriptVersion: dev.typescript ?? '~5.9.0',
    typesNodeVersion: dev['@types/node'] ?? '^20.19.0',
  };
  const fill = (text: string): string => text.replace(/\{\{(\w+)\}\}/g, (match, key: string) => values[key] ?? match);

  const templates = join(packageRoot(), 'templates');
  const sources: Array<[from: string, to: string]> = [
    ...(await listTemplate(join(templates, lang))).map((file): [string, string] => [join(templates, lang, file), file]),
    [join(templates, 'common', 'gitignore'), '.gitignore'], // npm never packs a file named .gitignore
  ];
  const written: string[] = [];
  for (const [from, to] of sources) {
    const target = join(dir, to);
    await mkdir(dirname(target), { recursive: true });
    const template = await readFile(from, 'utf8');
    await writeFile(target, basename(to) === 'package.json' ? `${JSON.stringify(fillJson(JSON.parse(template), fill), null, 2)}\n` : fill(template));
    written.push(to);
  }
  return { dir, lang, name, tool, files: written, toolhostSpec };
}
