/**
 * Build what the tests load, from source: the example tools and the test
 * fixtures (skipped when up to date). C guests need clang; without it they
 * are skipped with a message and their tests are skipped too.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const script = fileURLToPath(new URL('../scripts/build-guests.mjs', import.meta.url));
  execFileSync(process.execPath, [script], { stdio: 'inherit' });
  execFileSync(process.execPath, [script, '--fixtures'], { stdio: 'inherit' });
}
