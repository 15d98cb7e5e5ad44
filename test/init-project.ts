/**
 * A tool project as `toolhost init` writes it, installed the way `npm install` installs its dependencies from this
 * checkout without the network: `node_modules/toolhost` links to the checkout (what npm makes of the `file:` spec
 * `init` writes here), `typescript` and `@types/node` to the checkout's own (the versions the template asks for).
 * Enough for `tsc -p tsconfig.json`, `toolhost build` and `toolhost dev`; not for the project's own vitest test.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './cli-runner.js';
import { root } from './helpers.js';

/** `toolhost init DIR --lang LANG`, then its node_modules linked; returns DIR. */
export async function initLinkedProject(dir: string, lang: 'ts' | 'js' | 'c', name?: string): Promise<string> {
  const run = await runCli(['init', dir, '--lang', lang, ...(name === undefined ? [] : ['--name', name])]);
  if (run.code !== 0) throw new Error(`toolhost init failed: ${run.stderr}`);
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '@types'), { recursive: true });
  symlinkSync(root, join(modules, 'toolhost'), 'dir');
  symlinkSync(join(root, 'node_modules', 'typescript'), join(modules, 'typescript'), 'dir');
  symlinkSync(join(root, 'node_modules', '@types', 'node'), join(modules, '@types', 'node'), 'dir');
  return dir;
}
