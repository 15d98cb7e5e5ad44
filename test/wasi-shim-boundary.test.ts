/**
 * preview2-shim's internals are reached from one module only
 * (host/sandbox/wasi/shim.ts): no other host file imports or resolves the
 * package, so a shim upgrade has one place to check.
 */
import fs from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

it('names @bytecodealliance/preview2-shim in no host module but sandbox/wasi/shim.ts', () => {
  const naming = sources(join(root, 'host'))
    .filter((file) => /['"`]@bytecodealliance\/preview2-shim/.test(fs.readFileSync(file, 'utf8')))
    .map((file) => relative(root, file));
  expect(naming).toEqual(['host/sandbox/wasi/shim.ts']);
});
