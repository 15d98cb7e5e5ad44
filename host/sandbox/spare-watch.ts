/**
 * The pool's watchdog over spare preparations. Guest code runs while a spare
 * is made (the component's initialization), so it gets a budget too: a
 * worker still preparing after `spareTimeoutMs` is terminated (piscina
 * replaces it) and the component reported wedged. One sweep timer looks at
 * every worker's status block while any may be preparing (a timer per call
 * cost more than the spare it watched); a worker is stopped at most a sweep
 * interval past its budget.
 */
import { SpareStatus } from './spare-status.js';

/**
 * One worker's announcements, oldest first: the task whose answer announced
 * a spare and the spare's component, in two parallel lists (task ids mostly
 * grow: a worker answers in order). Lists, not a Map: an entry a call, dropped in
 * bulk at the next sweep, and Map churn cost the main thread ~1 % at 8 calls
 * in flight.
 */
interface Announcements {
  taskIds: number[];
  components: string[];
}

export class SpareWatch {
  /**
   * Each worker's status block (from its hello), by thread id: whether it is
   * busy after answering (preparing a spare instance), and since when.
   */
  readonly #statuses = new Map<number, SpareStatus>();
  /**
   * The components whose spares each worker announced, by the task whose
   * answer announced them (its status block says which one it is making):
   * a wedged worker is blamed on the right component. Pruned at every sweep.
   */
  readonly #announced = new Map<number, Announcements>();
  readonly #wedgedListeners = new Set<(componentId: string, threadId: number) => void>();
  /** The next look, while some worker may be preparing. */
  #sweep: NodeJS.Timeout | undefined;
  readonly #spareTimeoutMs: number;
  readonly #terminate: (threadId: number) => void;

  constructor(spareTimeoutMs: number, terminate: (threadId: number) => void) {
    this.#spareTimeoutMs = spareTimeoutMs;
    this.#terminate = terminate;
  }

  /** A worker said hello with its status block. */
  add(threadId: number, status: SharedArrayBuffer): void {
    this.#statuses.set(threadId, new SpareStatus(status));
  }

  /** A worker is gone. */
  forget(threadId: number): void {
    this.#statuses.delete(threadId);
    this.#announced.delete(threadId);
  }

  /** Whether the worker is making a spare after its last answer that a task sent now would wait for (a quick reset does not count). */
  isPreparing(threadId: number): boolean {
    const status = this.#statuses.get(threadId);
    return status !== undefined && status.slow !== 0;
  }

  /** When the worker's running preparation started (epoch ms); undefined when none runs yet (it has yet to start). */
  preparingSince(threadId: number): number | undefined {
    return this.#statuses.get(threadId)?.runningSince;
  }

  /** Whether the worker's only preparations are quick resets (it spins for its next task once they are done). */
  isQuickPreparing(threadId: number): boolean {
    const status = this.#statuses.get(threadId);
    return status !== undefined && status.pending !== 0 && status.slow === 0;
  }

  /** Be told when a worker was terminated because its spare's preparation overran. */
  onWedged(listener: (componentId: string, threadId: number) => void): () => void {
    this.#wedgedListeners.add(listener);
    return () => this.#wedgedListeners.delete(listener);
  }

  /** A worker was stopped because an instance of `componentId` it was making did not initialize in time (a spare, or one made ahead: instances-made-ahead.ts). */
  reportWedged(componentId: string, threadId: number): void {
    for (const listener of this.#wedgedListeners) listener(componentId, threadId);
  }

  /** Task `taskId`'s answer announced a spare of `componentId` on `threadId`: watch it. */
  watch(threadId: number, taskId: number, componentId: string): void {
    let announced = this.#announced.get(threadId);
    if (!announced) this.#announced.set(threadId, (announced = { taskIds: [], components: [] }));
    announced.taskIds.push(taskId);
    announced.components.push(componentId);
    if (this.#sweep !== undefined) return;
    const interval = Math.max(5, Math.min(this.#spareTimeoutMs / 8, 250));
    const sweep = (): void => {
      this.#sweep = undefined;
      const now = performance.timeOrigin + performance.now();
      let busy = false;
      for (const [id, status] of this.#statuses) {
        const announced = this.#announced.get(id);
        const current = status.task;
        if (status.pending <= 0) {
          if (announced) announced.taskIds.length = announced.components.length = 0;
          continue;
        }
        // Announcements older than the preparation running now are done.
        if (announced) {
          let done = 0;
          while (done < announced.taskIds.length && announced.taskIds[done]! < current) done += 1;
          announced.taskIds.splice(0, done);
          announced.components.splice(0, done);
        }
        if (!status.overran(this.#spareTimeoutMs, now)) {
          busy = true;
          continue;
        }
        // Stopped once: the status block goes with the worker.
        this.#statuses.delete(id);
        this.#terminate(id);
        // Usually the first left; a task posted again after its worker was lost can answer out of order.
        const at = announced?.taskIds.indexOf(current) ?? -1;
        const component = at === -1 ? undefined : announced!.components[at];
        if (component !== undefined) this.reportWedged(component, id);
      }
      if (busy) this.#sweep = setTimeout(sweep, interval).unref();
    };
    this.#sweep = setTimeout(sweep, interval).unref();
  }

  /** The pool closes. */
  stop(): void {
    clearTimeout(this.#sweep);
    this.#sweep = undefined;
  }
}
