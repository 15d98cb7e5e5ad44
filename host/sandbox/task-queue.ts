/**
 * The sandbox's one queue, for both containments: thread containment
 * (SandboxPool, whose TaskDispatch keeps here the tasks no worker fits yet)
 * and process containment (the supervisor, which keeps here the tasks not
 * yet handed to its sandbox process). One limit, one refusal, one measure,
 * and one rule of fairness between the principals whose calls wait:
 * - a task is accepted while fewer than `threads + maxQueue` are (running
 *   or waiting), and while its principal has fewer than
 *   `threads + maxQueuePerPrincipal`; past either it is refused with
 *   OVERLOADED, `details.limit` naming the key (`host.pool.max_queue`,
 *   default 64 per thread; `max_queue_per_principal`, default half of it),
 *   so one principal can never fill the queue another needs;
 * - waiting tasks leave in turns: next is the oldest task of the waiting
 *   principal with the fewest tasks in service (accepted and not waiting
 *   here: running, or handed to a sandbox process ahead), ties in turn
 *   order (round robin), so a principal that queued many delays no one
 *   else's next task by more than one of its own, and never gets a second
 *   task into service while another waits with none (with one principal
 *   waiting, the order is plain FIFO);
 * - `size` (tasks accepted beyond one per worker) is the pool's `queueSize`
 *   in its stats and metrics;
 * - one taken back by its caller leaves from wherever it is.
 *
 * The key is the call's authenticated principal (never a name the client
 * chooses); calls with none share one key. Work per operation is constant,
 * or linear in the principals waiting (at most the queue's size) for the
 * rare ones (a task taken back, tasks put back).
 */
import { ToolhostError } from '../base/errors.js';

/** The key calls with no principal share. */
const NO_PRINCIPAL = '';

export class TaskQueue<T> {
  readonly threads: number;
  readonly maxQueue: number;
  readonly maxQueuePerPrincipal: number;
  readonly #keyOf: (item: T) => string | undefined;
  /** Tasks accepted and not given back (running, waiting here, or handed on and not answered yet). */
  #accepted = 0;
  /** The same per principal (only principals with one: at most `threads + maxQueue` entries). */
  readonly #acceptedBy = new Map<string, number>();
  /** Each principal's waiting tasks, oldest first (only principals with one). */
  readonly #waiting = new Map<string, T[]>();
  /** Principals with waiting tasks, in turn: the first is served next. */
  #turns: string[] = [];
  #length = 0;

  /** `keyOf`: the principal a waiting task counts against (as given to `accept`). */
  constructor(threads: number, maxQueue: number, keyOf: (item: T) => string | undefined = () => undefined, maxQueuePerPrincipal = maxQueue) {
    this.threads = threads;
    this.maxQueue = maxQueue;
    this.maxQueuePerPrincipal = Math.min(maxQueuePerPrincipal, maxQueue);
    this.#keyOf = keyOf;
  }

  /** OVERLOADED when the queue, or `principal`'s share of it, is full (the caller refuses the task with it), else undefined. */
  refusal(principal?: string): ToolhostError | undefined {
    if (this.#accepted >= this.threads + this.maxQueue) {
      return new ToolhostError('OVERLOADED', `the sandbox queue is full (${this.maxQueue} waiting for ${this.threads} workers, host.pool.max_queue); try again later`, {
        details: { limit: 'max_queue', max: this.maxQueue },
      });
    }
    if ((this.#acceptedBy.get(principal ?? NO_PRINCIPAL) ?? 0) >= this.threads + this.maxQueuePerPrincipal) {
      return new ToolhostError('OVERLOADED', `this caller already has ${this.maxQueuePerPrincipal} calls waiting for the sandbox's ${this.threads} workers (host.pool.max_queue_per_principal); try again when some have ended`, {
        details: { limit: 'max_queue_per_principal', max: this.maxQueuePerPrincipal },
      });
    }
    return undefined;
  }

  /** A task of `principal` is accepted; returns how many are now. */
  accept(principal?: string): number {
    const key = principal ?? NO_PRINCIPAL;
    this.#acceptedBy.set(key, (this.#acceptedBy.get(key) ?? 0) + 1);
    return ++this.#accepted;
  }

  /** A task of `principal` was given back (answered, failed or stopped); returns how many remain. */
  giveBack(principal?: string): number {
    const key = principal ?? NO_PRINCIPAL;
    const mine = this.#acceptedBy.get(key) ?? 0;
    if (mine <= 1) this.#acceptedBy.delete(key);
    else this.#acceptedBy.set(key, mine - 1);
    return --this.#accepted;
  }

  get accepted(): number {
    return this.#accepted;
  }

  /** Tasks waiting for a worker: accepted beyond one per worker. */
  get size(): number {
    return Math.max(0, this.#accepted - this.threads);
  }

  /** Tasks in the waiting list. */
  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    const key = this.#keyOf(item) ?? NO_PRINCIPAL;
    const list = this.#waiting.get(key);
    if (list === undefined) {
      this.#waiting.set(key, [item]);
      this.#turns.push(key);
    } else {
      list.push(item);
    }
    this.#length += 1;
  }

  /** The task served next (see the header), left in place. */
  head(): T | undefined {
    const at = this.#nextTurn();
    return at === -1 ? undefined : this.#waiting.get(this.#turns[at]!)![0];
  }

  /** The task served next, taken out; its principal goes to the back of the turns. */
  shift(): T | undefined {
    const at = this.#nextTurn();
    if (at === -1) return undefined;
    const key = this.#turns[at]!;
    const list = this.#waiting.get(key)!;
    const item = list.shift()!;
    this.#length -= 1;
    this.#turns.splice(at, 1);
    if (list.length === 0) this.#waiting.delete(key);
    else this.#turns.push(key);
    return item;
  }

  /** Where in the turns the next principal is: the first with the fewest tasks in service (-1: none waits). */
  #nextTurn(): number {
    const turns = this.#turns;
    if (turns.length <= 1) return turns.length - 1;
    let best = 0;
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < turns.length; i += 1) {
      const key = turns[i]!;
      const inService = (this.#acceptedBy.get(key) ?? 0) - this.#waiting.get(key)!.length;
      if (inService < fewest) {
        fewest = inService;
        best = i;
        if (inService <= 0) break;
      }
    }
    return best;
  }

  /** Take `item` out from wherever it waits; false when it was not waiting. */
  remove(item: T): boolean {
    const key = this.#keyOf(item) ?? NO_PRINCIPAL;
    const list = this.#waiting.get(key);
    const at = list?.indexOf(item) ?? -1;
    if (list === undefined || at === -1) return false;
    list.splice(at, 1);
    this.#length -= 1;
    if (list.length === 0) {
      this.#waiting.delete(key);
      this.#turns.splice(this.#turns.indexOf(key), 1);
    }
    return true;
  }

  /** Every waiting task, taken out, in the order they would have been served. */
  takeAll(): T[] {
    const out: T[] = [];
    for (let item = this.shift(); item !== undefined; item = this.shift()) out.push(item);
    return out;
  }

  /** Put tasks back in front, in the order given (they waited before everything that waits now): their principals go first. */
  returnToFront(items: readonly T[]): void {
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!;
      const key = this.#keyOf(item) ?? NO_PRINCIPAL;
      const list = this.#waiting.get(key);
      if (list === undefined) this.#waiting.set(key, [item]);
      else {
        list.unshift(item);
        this.#turns.splice(this.#turns.indexOf(key), 1);
      }
      this.#turns.unshift(key);
      this.#length += 1;
    }
  }
}
