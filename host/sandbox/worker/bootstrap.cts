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

const entry: Promise<RunTask> = import('./entry.js').then((module) => module.default);

module.exports = async function runTask(task: Parameters<RunTask>[0]): ReturnType<RunTask> {
  return (await entry)(task);
};
