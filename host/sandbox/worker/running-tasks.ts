/**
 * The tasks a worker has claimed and not finished, and the spare preparations
 * put off until none is in progress (see whenNoTaskRuns).
 */
/** Tasks this worker has claimed and not finished (more than one only while a first call awaits its component). */
let tasksRunning = 0;
/** Preparations put off until no task runs. */
const putOff: Array<() => void> = [];

/**
 * Run a spare's preparation once no claimed task is in progress. A task that
 * awaits (the first call of a component loads its glue) lets the event loop
 * run, and a preparation is guest code the pool may stop the whole worker
 * for (spare_ms): it must not run while a task the worker has claimed is
 * still in progress, or that task would die with it.
 */
export function whenNoTaskRuns(prepare: () => void): void {
  setImmediate(() => {
    if (tasksRunning === 0) prepare();
    else putOff.push(prepare);
  });
}

/** A claimed task is in progress (`+1`) or over (`-1`); put-off preparations run once none is. */
export function taskRunning(delta: 1 | -1): void {
  tasksRunning += delta;
  if (tasksRunning === 0 && putOff.length > 0) for (const prepare of putOff.splice(0)) whenNoTaskRuns(prepare);
}

