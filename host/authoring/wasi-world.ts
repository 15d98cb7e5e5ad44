/**
 * The WASI interfaces a JS/TS guest may import directly, and the world a build
 * hands componentize-js when it does.
 *
 * componentize-js can only bind an import the world declares; the tool world
 * declares none of WASI, so `import { getDirectories } from
 * 'wasi:filesystem/preopens@0.2.3'` failed with "Error loading module". The
 * bundler reports which `wasi:` modules the tool's code still imports after
 * tree-shaking; this module
 *
 *  - maps each to the version the engine itself imports (StarlingMonkey in
 *    componentize-js 0.23 imports WASI 0.2.12; every 0.2.x is the same ABI), so
 *    the component imports one filesystem, not two versions of it;
 *  - adds those interfaces to the world, with the WASI packages they need
 *    (shipped in `wit/deps/`) written in as nested packages: componentize-js
 *    reads WIT through a shim without preopens, so it gets text, not a path.
 *
 * Guaranteed: a tool that imports none of WASI gets the tool world unchanged;
 * an import of a WASI interface outside the supported set (or a version other
 * than 0.2.x) is a BuildError naming it. Not guaranteed: that the host grants
 * anything — what the guest sees under `/worktree` is the call's policy.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import { BuildError } from './errors.js';

/** The WASI version componentize-js's engine imports (checked by test/js-guest-fs.test.ts on a built tool). */
export const ENGINE_WASI_VERSION = '0.2.12';

/** Interfaces a guest may import directly, by package, and the packages each package's WIT uses. */
const PACKAGES: Readonly<Record<string, { interfaces: readonly string[]; uses: readonly string[] }>> = {
  io: { interfaces: ['error', 'poll', 'streams'], uses: [] },
  clocks: { interfaces: ['monotonic-clock', 'wall-clock'], uses: ['io'] },
  filesystem: { interfaces: ['types', 'preopens'], uses: ['io', 'clocks'] },
};

/** What the guest may import, for messages: `wasi:filesystem/types`, … */
export const GUEST_WASI_INTERFACES: readonly string[] = Object.entries(PACKAGES).flatMap(([pkg, { interfaces }]) => interfaces.map((name) => `wasi:${pkg}/${name}`));

const SPECIFIER = /^wasi:([a-z][a-z0-9-]*)\/([a-z][a-z0-9-]*)(?:@(\d+)\.(\d+)\.(\d+))?$/;

/**
 * The module id a guest's `wasi:` import is bundled as (`wasi:filesystem/preopens@0.2.3` →
 * `wasi:filesystem/preopens@0.2.12`), or a BuildError when the interface cannot be imported by a guest.
 */
export function engineWasiSpecifier(specifier: string): string {
  const match = SPECIFIER.exec(specifier);
  const supported = `a JS/TS tool may import ${GUEST_WASI_INTERFACES.join(', ')} (any 0.2.x version)`;
  if (!match) throw new BuildError('COMPILE_FAILED', `cannot import ${JSON.stringify(specifier)}: ${supported}`);
  const [, pkg, iface, major, minor] = match as unknown as [string, string, string, string | undefined, string | undefined];
  if (!PACKAGES[pkg]?.interfaces.includes(iface)) {
    throw new BuildError('COMPILE_FAILED', `cannot import ${JSON.stringify(specifier)}: ${supported}`);
  }
  if (major !== undefined && (major !== '0' || minor !== '2')) {
    throw new BuildError('COMPILE_FAILED', `cannot import ${JSON.stringify(specifier)}: only WASI 0.2.x is supported (${supported})`);
  }
  return `wasi:${pkg}/${iface}@${ENGINE_WASI_VERSION}`;
}

function depText(pkg: string): string {
  const text = readFileSync(join(packageRoot(), 'wit', 'deps', `${pkg}.wit`), 'utf8');
  const declaration = /^package ([^;\s]+);$/m.exec(text);
  if (!declaration) throw new BuildError('COMPILE_FAILED', `wit/deps/${pkg}.wit declares no package`);
  const body = text.slice(declaration.index + declaration[0].length);
  return `package ${declaration[1]} {\n${body}\n}\n`;
}

/**
 * The world text for componentize-js: `toolWorld` (the tool world's WIT) with an import of each interface in
 * `imports` (engine-version specifiers, as engineWasiSpecifier returns them) and the WASI packages they need.
 * Without WASI imports, `toolWorld` unchanged.
 */
export function worldWithWasiImports(toolWorld: string, worldName: string, imports: readonly string[]): string {
  const wanted = [...new Set(imports.filter((id) => id.startsWith('wasi:')))].sort();
  if (wanted.length === 0) return toolWorld;
  const opening = new RegExp(`^world ${worldName} \\{$`, 'm').exec(toolWorld);
  if (!opening) throw new BuildError('COMPILE_FAILED', `the WIT declares no world ${JSON.stringify(worldName)} to add WASI imports to`);
  const packages = new Set<string>();
  const need = (pkg: string): void => {
    if (packages.has(pkg)) return;
    for (const used of PACKAGES[pkg]?.uses ?? []) need(used);
    packages.add(pkg);
  };
  for (const id of wanted) need(id.slice('wasi:'.length, id.indexOf('/')));
  const at = opening.index + opening[0].length;
  const lines = wanted.map((id) => `\n    import ${id};`).join('');
  return `${toolWorld.slice(0, at)}${lines}${toolWorld.slice(at)}\n${[...packages].map(depText).join('\n')}`;
}
