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
 * time, since Node's module loader pays per file. A build made by tsc alone
 * has no bundle, and the worker loads entry.js and its modules one by one.
 */
import type runTaskType from './entry.js';

type RunTask = typeof runTaskType;

let loaded: RunTask | undefined;
const BUNDLE = './entry.bundle.js';
const entry: Promise<RunTask> = (import(BUNDLE) as Promise<{ default: RunTask }>)
  .catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ERR_MODULE_NOT_FOUND' || !error.message.includes('entry.bundle.js')) throw error;
    return import('./entry.js');
  })
  .then((module) => (loaded = module.default));

// Once the entry is loaded, a task goes straight to it (no promise of our own per task).
module.exports = function runTask(task: Parameters<RunTask>[0]): ReturnType<RunTask> | Promise<Awaited<ReturnType<RunTask>>> {
  return loaded ? loaded(task) : entry.then((run) => run(task));
};
