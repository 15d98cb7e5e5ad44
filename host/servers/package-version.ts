/**
 * toolhost's own version, for the MCP servers' `serverInfo` (HTTP and stdio), read once from its package.json.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedVersion: string | undefined;

/** toolhost's version, from its package.json (found upwards from this file, in sources and in dist/). */
export function packageVersion(): string {
  if (cachedVersion !== undefined) return cachedVersion;
  cachedVersion = '0.0.0';
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'toolhost' && typeof manifest.version === 'string') {
        cachedVersion = manifest.version;
        break;
      }
    } catch {
      // not here; keep looking upwards
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return cachedVersion;
}
