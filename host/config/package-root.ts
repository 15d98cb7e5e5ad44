/** Where toolhost's own files are, whether it runs from dist/ or from its sources. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The directory of toolhost's package.json. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'toolhost') return dir;
      } catch {
        // keep looking upwards
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find toolhost\'s package.json');
    dir = parent;
  }
}

/** The built example tools' directory, or undefined when none are built. */
export function examplesDir(): string | undefined {
  const dir = join(packageRoot(), 'guest-tools', 'dist');
  if (!existsSync(dir)) return undefined;
  return readdirSync(dir).some((name) => name.endsWith('.wasm')) ? dir : undefined;
}
