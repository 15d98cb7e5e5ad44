/**
 * How the pool stops a worker (for a task it must stop, or a spare
 * preparation that overran): at once, unless the worker has answered tasks
 * whose answers the main thread has not read yet.
 *
 * Why wait for those: a worker that holds its next task (worker-holdings.ts)
 * starts it right after it posted the previous one's answer (never before:
 * worker/running-tasks.ts), and the pool may stop it for that next task
 * while the answer still waits in the task port. piscina fails every task of
 * a worker that exits, and Node does not promise that a worker's exit is
 * read after what it posted on another port: the finished task, an honest
 * call, would end TOOL_CRASHED. Its caller is not kept waiting meanwhile (a
 * stopped task is answered at once), and a dying worker is given nothing.
 */
/** The longest a worker's stop waits for answers already posted (ms): they are one turn of the event loop away. */
export const ANSWERS_WAIT_MS = 250;

/** The part of piscina's worker view used here (its balancer's view; piscina keeps its Worker behind a symbol). */
interface WorkerView {
  readonly id: number;
}

export class WorkerStops<W extends WorkerView> {
  /** piscina's view of each worker, by thread id (seen by the load balancer): how a worker is terminated. */
  readonly #workers = new Map<number, W>();
  /** Workers being stopped: given no task, since piscina counts a worker live until its exit event and would hand it one. */
  readonly #dying = new Set<number>();

  /** The balancer saw `worker`. */
  see(worker: W): void {
    if (!this.#workers.has(worker.id)) this.#workers.set(worker.id, worker);
  }

  /** Whether worker `threadId` is being stopped. */
  isDying(threadId: number): boolean {
    return this.#dying.has(threadId);
  }

  /**
   * Stop worker `threadId` once `answering` (the tasks it answered whose
   * answers are not read yet) have settled, or after ANSWERS_WAIT_MS.
   */
  stop(threadId: number, answering: readonly Promise<unknown>[]): void {
    const worker = this.#workers.get(threadId);
    if (!worker || this.#dying.has(threadId)) return;
    this.#dying.add(threadId);
    if (answering.length === 0) {
      terminate(worker);
      return;
    }
    let stopped = false;
    const stopOnce = (): void => {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      terminate(worker);
    };
    const timer = setTimeout(stopOnce, ANSWERS_WAIT_MS);
    void Promise.allSettled(answering).then(stopOnce);
  }

  /** Worker `threadId` is gone. */
  forget(threadId: number): void {
    this.#workers.delete(threadId);
    this.#dying.delete(threadId);
  }
}

/** Terminate a worker through piscina's view of it (piscina sees it exit, fails its tasks, and starts a replacement). */
function terminate(view: WorkerView): void {
  // piscina keeps its Worker behind a symbol on the view its balancer sees (5.x: kWorkerData).
  for (const symbol of Object.getOwnPropertySymbols(view)) {
    const info = (view as unknown as Record<symbol, unknown>)[symbol] as { worker?: { terminate?: () => Promise<number> } } | undefined;
    if (typeof info?.worker?.terminate === 'function') {
      void info.worker.terminate();
      return;
    }
  }
}
