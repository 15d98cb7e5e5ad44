/**
 * Build a tool component from JavaScript or TypeScript:
 *
 *   entry (.js/.ts) + its imports (relative files, npm packages, `toolhost/guest`)
 *     --rolldown--> one ES module, wrapped so a thrown exception keeps its message
 *     --componentize-js (SpiderMonkey, the tool world)--> component
 *
 * Bundling first is what lets a tool import the guest toolkit and npm
 * packages: componentize-js itself only follows relative imports below its
 * working directory. TypeScript is stripped by rolldown (types are the
 * project's `tsc --noEmit` business, not the build's).
 *
 * A build takes 3-15 s and yields a ~12 MB component (the engine plus the
 * snapshotted JS). Builds are not byte-reproducible: compare sources, not outputs.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { realpathSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { isInside, projectRoot, writeComponent } from './contained.js';
import { BuildError } from './errors.js';
import { jsMcpToolkitPath, jsToolkitPath, worldWitPath } from './paths.js';
import { JS_TOOLCHAIN_INSTALL } from './toolchain.js';
import { engineWasiSpecifier, worldWithWasiImports } from './wasi-world.js';

export type ComponentizeFeature = 'stdio' | 'random' | 'clocks' | 'http' | 'fetch-event';

export interface JsBuildOptions {
  /** The entry module; it exports `tool` ({ describe(), call(name, args) }). */
  source: string;
  /** Where to write the component (parent directories are created). */
  outFile: string;
  /** The WIT file (default: the shipped tool world). */
  witPath?: string;
  /** The world in it (default `tool-provider`). */
  world?: string;
  /**
   * componentize-js features to leave out. Default `['http', 'fetch-event']`:
   * stdio, random and clocks stay so console.*, Math.random and Date.now work;
   * a tool that uses fetch() keeps `http` (pass `['fetch-event']`).
   */
  disableFeatures?: ComponentizeFeature[];
  /** Where bare imports are resolved from (default: the entry's directory). */
  cwd?: string;
  /**
   * Turn anything `call` throws that is not a tool-error into the tool-error
   * UNCAUGHT_EXCEPTION with its message and stack (default true). Without it,
   * componentize-js cannot lower the exception and the instance traps.
   */
  guardExceptions?: boolean;
}

export interface JsBuildResult {
  outFile: string;
  size: number;
  /** Build time in ms (bundle + componentize + write). */
  ms: number;
}

const ENTRY = '\0toolhost-guest-entry';

/** A rendered `import … from "wasi:…"` / `export … from "toolhost:…"` / `import "wasi:…"` statement of the bundle. */
const RENDERED_IMPORT = /^(?:import|export)\b[^;'"]*?\bfrom\s*["']((?:wasi|toolhost):[^"']+)["']|^import\s*["']((?:wasi|toolhost):[^"']+)["']/gm;

/**
 * The module componentize-js sees: the author's `tool`, with `call` guarded so
 * that a host call's refusal becomes the host's tool-error (its code kept), and
 * anything else thrown that is not a tool-error ({ code, message, details })
 * becomes the tool-error UNCAUGHT_EXCEPTION carrying its message and stack,
 * instead of trapping the instance ("wasm 'unreachable' instruction executed").
 */
function entryModule(source: string, alsoExports: readonly string[]): string {
  // Interfaces the world exports besides the tool interface (0.2.0's prompts and resources): the author's, as they are.
  const passed = alsoExports.map((name) => `export const ${name} = guest.${name};\n`).join('');
  return `${passed}import * as guest from ${JSON.stringify(source)};
const inner = guest.tool;
if (inner === null || typeof inner !== 'object' || typeof inner.describe !== 'function' || typeof inner.call !== 'function') {
  throw new Error(${JSON.stringify(`${source} must export \`tool\`: an object with describe() and call(name, args)`)});
}
function isToolError(e) {
  return e !== null && typeof e === 'object' && typeof e.code === 'string' && typeof e.message === 'string' && !(e instanceof Error);
}
function uncaught(name, e) {
  if (isToolError(e)) return { code: e.code, message: e.message, details: typeof e.details === 'string' ? e.details : e.details === undefined ? undefined : JSON.stringify(e.details) };
  // A host call's refusal (componentize-js throws an import's error as an Error with its value in \`payload\`):
  // the host's tool-error, so the caller gets its code.
  if (e !== null && typeof e === 'object' && Object.prototype.hasOwnProperty.call(e, 'payload')) {
    const p = e.payload;
    if (isToolError(p)) return { code: p.code, message: p.message, details: typeof p.details === 'string' ? p.details : undefined };
    const coded = typeof p === 'string' ? /^([A-Z][A-Z0-9_]*): ([\\s\\S]*)$/.exec(p) : null;
    if (coded) return { code: coded[1], message: coded[2], details: undefined };
  }
  const message = e instanceof Error ? (e.name && e.name !== 'Error' ? e.name + ': ' + e.message : e.message) : String(e);
  const details = { tool: name };
  if (e instanceof Error) {
    details.name = e.name;
    if (typeof e.stack === 'string' && e.stack !== '') details.stack = e.stack;
  }
  return { code: 'UNCAUGHT_EXCEPTION', message, details: JSON.stringify(details) };
}
export const tool = {
  describe() {
    return inner.describe();
  },
  call(name, args) {
    let result;
    try {
      result = inner.call(name, args);
    } catch (e) {
      throw uncaught(name, e);
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      return result.then((value) => value, (e) => { throw uncaught(name, e); });
    }
    return result;
  },
};
`;
}

/** The host interfaces whose calls can be refused, by world version: `toolhost build` binds them through a wrapper. */
const REFUSABLE_HOST_CALLS: Record<string, { all: readonly string[]; refusable: readonly string[] }> = {
  '0.1.0': { all: ['context', 'progress', 'delta', 'log', 'getState', 'setState', 'cancelled'], refusable: ['setState'] },
  '0.2.0': { all: ['context', 'progress', 'delta', 'log', 'getState', 'setState', 'cancelled', 'sample', 'elicit'], refusable: ['setState', 'sample', 'elicit'] },
  '0.3.0': { all: ['context', 'progress', 'delta', 'log', 'getState', 'setState', 'cancelled', 'sample', 'elicit', 'ask'], refusable: ['setState', 'sample', 'elicit', 'ask'] },
};

const HOST_MODULE = /^toolhost:tool\/host@(\d+\.\d+\.\d+)$/;
const HOST_WRAPPER = '\0toolhost-host@';

/**
 * What a guest's `import { sample } from 'toolhost:tool/host@0.2.0'` binds to: the host's functions, those that
 * can be refused (`sample`, `elicit`, `setState`) wrapped so a refusal is thrown as the host's tool-error
 * `{ code, message, details }` (the toolkit's `hostCall`), not as componentize-js's Error with the error in `payload`.
 */
function hostWrapperModule(version: string, toolkit: string): string {
  const { all, refusable } = REFUSABLE_HOST_CALLS[version]!;
  const host = JSON.stringify(`toolhost:tool/host@${version}`);
  const plain = all.filter((name) => !refusable.includes(name));
  return `import { ${refusable.map((name) => `${name} as host_${name}`).join(', ')} } from ${host};
import { hostCall } from ${JSON.stringify(toolkit)};
export { ${plain.join(', ')} } from ${host};
${refusable.map((name) => `export function ${name}(...args) { return hostCall(() => host_${name}(...args)); }`).join('\n')}
`;
}

/**
 * Refuse a bundle that imports the tool world in another version than the one it is built against (a 0.1.0
 * example in a project `toolhost init` made for 0.2.0, say), before componentize-js fails on it with a bare
 * ReferenceError from its snapshot.
 */
export function checkWorldVersion(imports: readonly string[], witText: string, source: string): void {
  const world = /^package toolhost:tool@(\S+);/m.exec(witText)?.[1];
  if (world === undefined) return;
  const other = imports.find((id) => id.startsWith('toolhost:tool/') && !id.endsWith(`@${world}`));
  if (other === undefined) return;
  const version = other.slice(other.lastIndexOf('@') + 1);
  const fix = world !== '0.1.0'
    ? `import the host from 'toolhost:tool/host@${world}' and define the tools with defineMcpComponent from 'toolhost/guest/mcp'; or, to build a ${version} tool, say "world": "${version}" in package.json's "toolhost" section`
    : `import the host from 'toolhost:tool/host@${world}' and define the tools with defineComponent from 'toolhost/guest'; or, to build a ${version} tool, say "world": "${version}" in package.json's "toolhost" section`;
  throw new BuildError('COMPILE_FAILED', `${source} imports ${other}, but the project builds for the ${world} tool world (package.json "toolhost": { "world": ... }, default 0.1.0): ${fix}`);
}

/** The interfaces `world` exports besides `tool` (e.g. 0.2.0's `prompts` and `resources` in world mcp-provider). */
function otherWorldExports(wit: string, world: string): string[] {
  const block = new RegExp(`^world ${world} \\{$([\\s\\S]*?)^\\}`, 'm').exec(wit)?.[1] ?? '';
  return [...block.matchAll(/^\s*export ([a-z][a-z0-9-]*);/gm)].map((match) => match[1]!).filter((name) => name !== 'tool');
}

async function loadRolldown(): Promise<typeof import('rolldown')> {
  try {
    return await import('rolldown');
  } catch (error) {
    throw new BuildError('TOOLCHAIN_MISSING', `JS/TS tools need rolldown, which could not be loaded (${(error as Error).message.split('\n')[0]}).\nInstall: ${JS_TOOLCHAIN_INSTALL}`);
  }
}

async function loadComponentize(): Promise<typeof import('@bytecodealliance/componentize-js')> {
  try {
    return await import('@bytecodealliance/componentize-js');
  } catch (error) {
    throw new BuildError('TOOLCHAIN_MISSING', `JS/TS tools need @bytecodealliance/componentize-js, which could not be loaded (${(error as Error).message.split('\n')[0]}).\nInstall: ${JS_TOOLCHAIN_INSTALL}`);
  }
}

/**
 * Whether the bundle may read `id`: a file inside the project (`cwd`), the guest toolkit's directory, or a
 * package under a `node_modules` directory, each on its real path. Anything else (an absolute import of
 * `/etc/shadow`, a `../../` climb out of the project, a symlink out of it) is refused before it is read, so a
 * parse error can never print what it holds.
 */
function readableModule(roots: string[], id: string): boolean {
  let real: string;
  try {
    real = realpathSync(id);
  } catch {
    return true; // nothing to read there: the bundler reports it missing
  }
  return roots.some((root) => isInside(root, real)) || real.split(sep).includes('node_modules');
}

/** One bundled guest: its code and the external modules it still imports after tree-shaking. */
export interface GuestBundle {
  code: string;
  /** `toolhost:` and `wasi:` module ids (WASI ones already mapped to the engine's version). */
  imports: string[];
}

/**
 * Bundle `source` and what it imports into one ES module. Host and WASI imports stay imports; a WASI import is
 * mapped to the version the engine imports (wasi-world.ts), and one the build cannot bind is refused here.
 */
/** Whether `id` is a host module `toolhost build` binds through its wrapper. */
function wrapsHost(id: string): boolean {
  const version = HOST_MODULE.exec(id)?.[1];
  return version !== undefined && REFUSABLE_HOST_CALLS[version] !== undefined;
}

export async function bundleGuest(source: string, cwd: string, guardExceptions = true, alsoExports: readonly string[] = []): Promise<GuestBundle> {
  const { rolldown } = await loadRolldown();
  const entry = resolve(source);
  const toolkit = jsToolkitPath();
  const roots = [projectRoot(cwd), dirname(projectRoot(toolkit))];
  let bundle;
  try {
    bundle = await rolldown({
      input: guardExceptions ? ENTRY : entry,
      cwd,
      platform: 'neutral',
      // Host interfaces stay imports; the host module itself is bound through the wrapper (hostWrapperModule).
      external: (id: string, importer: string | undefined) => id.startsWith('toolhost:') && (!wrapsHost(id) || (importer?.startsWith(HOST_WRAPPER) ?? false)),
      // A host interface has no side effects to keep: an import nothing uses is dropped, so the world only
      // gains the WASI interfaces the tool's code really calls (e.g. the toolkit's filesystem helpers).
      treeshake: { moduleSideEffects: 'no-external' },
      // A guest never sees Node's built-ins: say so at build time, not as a failed import at load.
      resolve: { alias: { 'toolhost/guest': toolkit } },
      logLevel: 'warn',
      onLog(level, log) {
        if (level === 'warn' && log.code !== 'EMPTY_IMPORT_META') process.stderr.write(`toolhost build: ${log.message}\n`);
      },
      plugins: [
        {
          name: 'toolhost-guest-entry',
          resolveId(id: string, importer: string | undefined) {
            if (id.startsWith('wasi:')) return { id: engineWasiSpecifier(id), external: true, moduleSideEffects: false };
            if (wrapsHost(id)) {
              if (importer?.startsWith(HOST_WRAPPER)) return { id, external: true, moduleSideEffects: false };
              return `${HOST_WRAPPER}${HOST_MODULE.exec(id)![1]}`;
            }
            // The 0.2.0 toolkit (before the `toolhost/guest` alias, which would read it as a path under toolkit.js).
            if (id === 'toolhost/guest/mcp') return jsMcpToolkitPath();
            return id === ENTRY ? ENTRY : null;
          },
          load(id: string) {
            if (id === ENTRY) return entryModule(entry, alsoExports);
            if (id.startsWith(HOST_WRAPPER)) return { code: hostWrapperModule(id.slice(HOST_WRAPPER.length), toolkit), moduleSideEffects: false };
            if (id.startsWith('\0') || readableModule(roots, id)) return null;
            throw new BuildError('PROJECT_INVALID', `the module ${JSON.stringify(id)} resolves outside the project (after symlinks); a build reads only the project, its node_modules and the guest toolkit`);
          },
        },
      ],
    });
  } catch (error) {
    throw new BuildError('COMPILE_FAILED', `could not bundle ${source}:\n${(error as Error).message}`);
  }
  try {
    const { output } = await bundle.generate({ format: 'esm', codeSplitting: false });
    const chunk = output.find((item) => item.type === 'chunk');
    if (!chunk || chunk.type !== 'chunk') throw new BuildError('COMPILE_FAILED', `bundling ${source} produced no code`);
    // chunk.imports keeps an external whose every binding was tree-shaken away; the rendered import statements do not.
    const rendered = new Set([...chunk.code.matchAll(RENDERED_IMPORT)].map((match) => match[1] ?? match[2]));
    return { code: chunk.code, imports: chunk.imports.filter((id) => rendered.has(id) && (id.startsWith('wasi:') || id.startsWith('toolhost:'))) };
  } catch (error) {
    if (error instanceof BuildError) throw error;
    throw new BuildError('COMPILE_FAILED', `could not bundle ${source}:\n${(error as Error).message}`);
  } finally {
    await bundle.close();
  }
}

export async function buildJsComponent(options: JsBuildOptions): Promise<JsBuildResult> {
  const { source, outFile, witPath = worldWitPath(), world = 'tool-provider', disableFeatures = ['http', 'fetch-event'] } = options;
  const started = performance.now();
  const witText = await readFile(witPath, 'utf8');
  const { code, imports } = await bundleGuest(source, options.cwd ?? dirname(resolve(source)), options.guardExceptions ?? true, otherWorldExports(witText, world));
  checkWorldVersion(imports, witText, source);
  const { componentize } = await loadComponentize();
  // componentize-js reads a witPath through its own WASI shim, which has no preopens: pass the WIT as text,
  // with the WASI interfaces the bundle imports (e.g. wasi:filesystem for the worktree) added to the world.
  const witWorld = worldWithWasiImports(witText, world, imports);
  const tmp = await mkdtemp(join(tmpdir(), 'toolhost-js-'));
  let component: Uint8Array;
  try {
    const bundled = join(tmp, 'guest.js');
    await writeFile(bundled, code);
    // The engine sees the bundle's directory as its root; the bundle needs nothing else.
    // `witWorld` (the WIT as text) is accepted at runtime but missing from componentize-js's types.
    const run = componentize as unknown as (options: { sourcePath: string; witWorld: string; worldName: string; disableFeatures: ComponentizeFeature[] }) => Promise<{ component: Uint8Array }>;
    ({ component } = await run({ sourcePath: bundled, witWorld, worldName: world, disableFeatures }));
  } catch (error) {
    if (error instanceof BuildError) throw error;
    throw new BuildError('COMPILE_FAILED', `componentize-js failed for ${source}:\n${String((error as Error).message ?? error).trim()}`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  await writeComponent(outFile, component);
  return { outFile, size: component.byteLength, ms: Math.round(performance.now() - started) };
}
