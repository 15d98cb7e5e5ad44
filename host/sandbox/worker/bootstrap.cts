/**
 * The file piscina loads in each worker: CommonJS on purpose.
 *
 * piscina first tries `require(filename)`. On Node 20.19+ that is
 * `require(esm)`, and for our entry (its module graph has top-level await)
 * it can abort the whole process with a V8 fatal error ("Module::IsGraphAsync
 * must be used on an instantiated module"), seen in CI on a plain `toolhost
 * list`. A CommonJS file is required the ordinary way and reaches the ESM
 * entry through `import()`, which never takes that path.
 */
import type runTaskType from './entry.js';

type RunTask = typeof runTaskType;

let loaded: RunTask | undefined;
const entry: Promise<RunTask> = import('./entry.js').then((module) => (loaded = module.default));

// Once the entry is loaded, a task goes straight to it (no promise of our own per task).
module.exports = function runTask(task: Parameters<RunTask>[0]): ReturnType<RunTask> | Promise<Awaited<ReturnType<RunTask>>> {
  return loaded ? loaded(task) : entry.then((run) => run(task));
};
