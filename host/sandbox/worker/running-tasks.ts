/**
 * The task a worker has claimed and not finished, and what waits for it to
 * end: the next task the worker holds (see worker-holdings.ts) and spare
 * preparations.
 *
 * A task that awaits (the first call of a component loads its glue) lets the
 * event loop run, and the next task's message arrives meanwhile. A worker
 * runs one task at a time all the same: the pool stops a whole worker to stop
 * the task it runs, so a second task running beside it would die with it
 * (the full soak found it: honest calls ended TOOL_CRASHED beside hostile
 * first calls).
 */
/** Tasks this worker has claimed and not finished (0 or 1). */
let tasksRunning = 0;
/** Preparations put off until no task runs. */
const putOff: Array<() => void> = [];
/** Tasks that arrived while another ran, in order. */
const waiting: Array<() => void> = [];

/**
 * A claimed task has just ended and its answer may not have left yet (the
 * answer of a task that awaited is posted in the microtasks after it ends;
 * when tasks came through piscina, piscina read every message waiting in the
 * port in one go, so the next task's turn came before that post). Nothing
 * else runs guest code until the answer is posted (`answerPosted`), or else
 * until the next turn of the event loop: were that
 * guest (the next task, or a spare's preparation) then stopped with its
 * worker, the finished task's answer would be lost with it (the stress
 * harness found it: honest calls ended TOOL_CRASHED whose guest had returned).
 */
let leavingTaskId: number | undefined;

/** No claimed task runs and no answer is leaving. */
function quiet(): boolean {
  return tasksRunning === 0 && leavingTaskId === undefined;
}

/**
 * Whether a task that arrives now must wait: one is in progress or its answer
 * is leaving, or others wait before it (`hasTurn`: it was just let through,
 * so those behind it do not count).
 */
export function mustWait(hasTurn: boolean): boolean {
  return !quiet() || (!hasTurn && waiting.length > 0);
}

/** Whether nothing is in progress: no task running, waiting or leaving, no preparation put off. */
export function idle(): boolean {
  return quiet() && waiting.length === 0 && putOff.length === 0;
}

/** Resolves when it is this task's turn (`front`: it had its turn and lost it to one let through with it). */
export function waitTurn(front: boolean): Promise<void> {
  return new Promise((resolve) => {
    if (front) waiting.unshift(resolve);
    else waiting.push(resolve);
  });
}

/** Let the next waiting task through, at the next turn of the event loop, once none runs (one that finds another running waits again, at the front). */
export function releaseNext(): void {
  if (waiting.length > 0) setImmediate(letNextThrough);
}

function letNextThrough(): void {
  if (quiet()) waiting.shift()?.();
}

/**
 * Run a spare's preparation once no claimed task is in progress. A task that
 * awaits (the first call of a component loads its glue) lets the event loop
 * run, and a preparation is guest code the pool may stop the whole worker
 * for (spare_ms): it must not run while a task the worker has claimed is
 * still in progress (or its answer is leaving), or that task would die with it.
 */
export function whenNoTaskRuns(prepare: () => void): void {
  setImmediate(() => {
    if (quiet()) prepare();
    else putOff.push(prepare);
  });
}

/** A claimed task is in progress; `taskEnded` when it is over. */
export function taskStarted(): void {
  tasksRunning += 1;
}

/** Claimed task `taskId` is over; its answer is leaving until `answerPosted(taskId)` or the next turn of the event loop. */
export function taskEnded(taskId: number): void {
  tasksRunning -= 1;
  if (tasksRunning !== 0) return;
  leavingTaskId = taskId;
  // For an answer no one reports posted (piscina's dispatch posts it after its own microtasks).
  setImmediate(answerLeft);
}

/**
 * Task `taskId`'s answer has been posted on the task lane: once `postMessage`
 * returns, the answer is in the main thread's queue and outlives this
 * worker (one put in the answer ring is in memory the main thread holds,
 * and the lane reads it even after the worker exits: answer-ring.ts). What waited for it goes on now, not a turn of the event loop
 * later: a task already waiting in the lane then runs in the same turn,
 * synchronously, instead of through a promise and a turn of its own.
 * (Another task's answer posted meanwhile, one that claimed nothing, says
 * nothing about this one.)
 */
export function answerPosted(taskId: number): void {
  if (leavingTaskId === taskId) answerLeft();
}

/** The answer of the task that ended has left: the next waiting task first, then put-off preparations (they find it running, if it awaits). */
function answerLeft(): void {
  leavingTaskId = undefined;
  if (tasksRunning !== 0) return;
  letNextThrough();
  if (putOff.length > 0) for (const prepare of putOff.splice(0)) whenNoTaskRuns(prepare);
}
