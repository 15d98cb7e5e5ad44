/**
 * Build what the tests run, from source: the host (the CLI tests spawn
 * dist/), the example tools and the test fixtures (guests are skipped when up
 * to date). C guests need clang; without it they are skipped with a message
 * and their tests are skipped too.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  const script = fileURLToPath(new URL('../scripts/build-guests.mjs', import.meta.url));
  execFileSync(process.execPath, [script], { stdio: 'inherit' });
  execFileSync(process.execPath, [script, '--fixtures'], { stdio: 'inherit' });
}
