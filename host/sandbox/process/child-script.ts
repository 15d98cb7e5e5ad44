/**
 * Where the sandbox process's script is: the compiled `child.js` beside this file, or the sources' `child.ts`
 * (tests). Guarantees only a path and the Node flags to run it with; whether it starts is the supervisor's to see.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The child's script: the compiled `child.js` next to this file, or, when
 * toolhost runs from its TypeScript sources (tests), the one built beside the
 * worker named by TOOLHOST_DEV_WORKER, else the `.ts` itself through tsx.
 */
export function childScript(): { path: string; execArgv: string[] } {
  const compiled = new URL('./child.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return { path: fileURLToPath(compiled), execArgv: [] };
  const worker = process.env.TOOLHOST_DEV_WORKER;
  if (worker) {
    const built = new URL('../process/child.js', pathToFileURL(worker));
    if (existsSync(fileURLToPath(built))) return { path: fileURLToPath(built), execArgv: [] };
  }
  return { path: fileURLToPath(new URL('./child.ts', import.meta.url)), execArgv: ['--import', 'tsx'] };
}
