/** Where toolhost's own files are, whether it runs from dist/ or from its sources. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { toolhostPackageRoot } from '../policy/host-owned-paths.js';

/** The directory of toolhost's package.json (policy/host-owned-paths.ts finds it: the package is a host-owned path). */
export const packageRoot = toolhostPackageRoot;

/** The built example tools' directory, or undefined when none are built. */
export function examplesDir(): string | undefined {
  const dir = join(packageRoot(), 'guest-tools', 'dist');
  if (!existsSync(dir)) return undefined;
  return readdirSync(dir).some((name) => name.endsWith('.wasm')) ? dir : undefined;
}
