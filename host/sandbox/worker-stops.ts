/**
 * How the pool stops a worker (for a task it must stop, or a spare
 * preparation that overran): at once, unless the worker has answered tasks
 * whose answers the main thread has not read yet.
 *
 * Why wait for those: a worker that holds its next task (worker-holdings.ts)
 * starts it right after it posted the previous one's answer (never before:
 * worker/running-tasks.ts), and the pool may stop it for that next task
 * while the answer still waits in its task lane. The lane fails every
 * unanswered task of a worker that exits, and Node does not promise that a
 * worker's exit is read after what it posted: the finished task, an honest
 * call, would end TOOL_CRASHED. Its caller is not kept waiting meanwhile (a
 * stopped task is answered at once), and a dying worker is given nothing.
 */
/** The longest a worker's stop waits for answers already posted (ms): they are one turn of the event loop away. */
export const ANSWERS_WAIT_MS = 250;

export class WorkerStops {
  /** How a worker is terminated (piscina sees it exit and starts a replacement). */
  readonly #terminate: (threadId: number) => void;
  /** Workers being stopped: given no task, since their lanes stay open until they exit. */
  readonly #dying = new Set<number>();

  constructor(terminate: (threadId: number) => void) {
    this.#terminate = terminate;
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
    if (this.#dying.has(threadId)) return;
    this.#dying.add(threadId);
    if (answering.length === 0) {
      this.#terminate(threadId);
      return;
    }
    let stopped = false;
    const stopOnce = (): void => {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      this.#terminate(threadId);
    };
    const timer = setTimeout(stopOnce, ANSWERS_WAIT_MS);
    void Promise.allSettled(answering).then(stopOnce);
  }

  /** Worker `threadId` is gone. */
  forget(threadId: number): void {
    this.#dying.delete(threadId);
  }
}
