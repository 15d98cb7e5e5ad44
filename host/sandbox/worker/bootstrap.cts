/**
 * The file piscina loads in each worker: CommonJS on purpose.
 *
 * piscina first tries `require(filename)`. On Node 20.19+ that is
 * `require(esm)`, and for our entry (its module graph has top-level await)
 * it can abort the whole process with a V8 fatal error ("Module::IsGraphAsync
 * must be used on an instantiated module"), seen in CI on a plain `toolhost
 * list`. A CommonJS file is required the ordinary way and reaches the ESM
 * entry through `import()`, which never takes that path.
 *
 * It loads the entry bundled into one file (entry.bundle.js, made by
 * scripts/bundle-worker.mjs after tsc): a worker then starts in about half the
 * time, since Node's module loader pays per file. It loads entry.js and its
 * modules one by one instead when there is no bundle, or when tsc compiled
 * after the bundle was made (a checkout's dist/.tsbuildinfo is newer), so a
 * stale bundle never runs.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type runTaskType from './entry.js';

type RunTask = typeof runTaskType;

let loaded: RunTask | undefined;
/** When a file was last written, or undefined when it is not there. */
function writtenAt(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

const bundledAt = writtenAt(join(__dirname, 'entry.bundle.js'));
const compiledAt = writtenAt(join(__dirname, '..', '..', '..', '.tsbuildinfo'));
const useBundle = bundledAt !== undefined && (compiledAt === undefined || bundledAt >= compiledAt);
const BUNDLE = './entry.bundle.js';
const entry: Promise<RunTask> = (useBundle ? (import(BUNDLE) as Promise<{ default: RunTask }>) : import('./entry.js'))
  .then((module) => (loaded = module.default));

// Once the entry is loaded, a task goes straight to it (no promise of our own per task).
module.exports = function runTask(task: Parameters<RunTask>[0]): ReturnType<RunTask> | Promise<Awaited<ReturnType<RunTask>>> {
  return loaded ? loaded(task) : entry.then((run) => run(task));
};
