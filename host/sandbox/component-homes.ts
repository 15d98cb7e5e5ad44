/**
 * Which workers hold a component's instances, as far as the pool can tell
 * from their answers, and what a new instance of it costs: the task dispatch
 * sends a call to a worker that can serve it from an instance it has (a
 * spare, or the last call's instance once reset) before one that would make
 * a new instance.
 *
 * Why: a componentize-js instance costs 10-40 ms to make (the engine's
 * instantiation, its heap image, describe() and a snapshot), its reset ~1 ms.
 * Without homes a tool's second call went to whichever worker was idle; on a
 * two-thread host that was the other worker half of the time, and the call
 * waited for a new instance there. A C instance costs about as much as its
 * reset, so its calls go on to any idle worker (see `costly`).
 *
 * What it is not: a guarantee. A worker may have dropped the component since
 * its last answer (its memory budget or idle release; the answer after says
 * so, and the worker stops counting as a home everywhere until it answers for
 * the component again), and a home that is busy is passed over. A wrong guess
 * costs what every call cost before: a new instance on the worker chosen.
 * Bounded: one home per component and memory cap, at most MAX_HOMES before
 * the table starts over.
 *
 * A second home for a hot component: a costly component whose calls keep
 * finding their only home busy resetting (calls back to back: each waits for
 * the last one's reset, ~0.3-0.6 ms of a componentize-js call's ~0.6-1 ms)
 * while another worker is idle gets an instance made ahead on that worker
 * (the pool's warm task, off every call's path); its calls then alternate
 * between the two, each reset done while the other worker serves. What it
 * costs: one more instance of that component, counted in the worker's memory
 * budget like any other (evicted first when least recently called). What it
 * does not do: make a home on a busy worker, make two instances ahead at once
 * (instances-made-ahead.ts), or make one twice for a component (`madeAhead`,
 * made or failed, until the table starts over): a memory budget that keeps
 * evicting cannot turn it into a loop of instantiations.
 */
import type { WorkerAccounting } from './protocol.js';

/** Homes kept before the table starts over (a profile a home at most: the profiles' table starts over at the same size). */
const MAX_HOMES = 4096;

/**
 * A new instance that took longer than this (moving average) makes a home
 * worker that is busy making a spare or resetting worth waiting for, rather
 * than an idle worker that would make one more instance.
 */
const COSTLY_INSTANCE_MS = 2;

/** Weight of the newest fresh instance in `instantiateMs`. */
const WEIGHT = 0.25;

/** Calls in a row that waited for their busy home while another worker was idle, before another home is made. */
const BUSY_WAITS_BEFORE_ANOTHER_HOME = 3;

/** One component at one memory cap. */
export class ComponentHome {
  /** Workers (thread ids) that answered a call of it and have not said since that they dropped components. */
  readonly threads = new Set<number>();
  /** What its fresh instances took to make in a worker (ms, moving average; undefined before the first). */
  instantiateMs: number | undefined;

  /** Calls in a row that waited for a busy home while a worker outside it was idle (see `wantsAnotherHome`). */
  busyWaits = 0;
  /** An instance of it was made ahead on another worker, or tried (instances-made-ahead.ts): never twice. */
  madeAhead = false;

  /** Whether a new instance costs enough that a home busy with its own preparation is worth waiting for. */
  get costly(): boolean {
    return this.instantiateMs !== undefined && this.instantiateMs > COSTLY_INSTANCE_MS;
  }

  /** A call was sent to a home busy with its reset although a worker outside its homes was idle. */
  waitedForBusyHome(): void {
    this.busyWaits += 1;
  }

  /** A call found a home ready for it. */
  servedAtHome(): void {
    this.busyWaits = 0;
  }

  /** Whether an instance made ahead on another worker would spare its calls their waits (see the file comment). */
  get wantsAnotherHome(): boolean {
    return this.busyWaits >= BUSY_WAITS_BEFORE_ANOTHER_HOME && !this.madeAhead;
  }
}

export class ComponentHomes {
  #byKey = new Map<string, ComponentHome>();
  /** The homes each worker is in (so a worker leaves them without a scan of every home). */
  readonly #ofThread = new Map<number, Set<ComponentHome>>();

  /** The home of a component at a memory cap (made the first time). */
  of(componentId: string, memoryMb: number): ComponentHome {
    const key = `${memoryMb}\n${componentId}`;
    let home = this.#byKey.get(key);
    if (home === undefined) {
      if (this.#byKey.size >= MAX_HOMES) this.clear();
      home = new ComponentHome();
      this.#byKey.set(key, home);
    }
    return home;
  }

  /** Start over (the call profiles that hold homes start over with them, see task-profiles.ts). */
  clear(): void {
    this.#byKey = new Map();
    this.#ofThread.clear();
  }

  /** A worker answered a call of the component: it holds an instance (or will, once its spare is made). */
  answered(home: ComponentHome, accounting: WorkerAccounting): void {
    // The worker dropped components since its last answer: which ones it does not say, so it is nobody's home now.
    if (accounting.evictions !== undefined && accounting.evictions > 0) this.forget(accounting.threadId);
    const { threadId } = accounting;
    if (!home.threads.has(threadId)) {
      home.threads.add(threadId);
      let homes = this.#ofThread.get(threadId);
      if (homes === undefined) this.#ofThread.set(threadId, (homes = new Set()));
      homes.add(home);
    }
    if (accounting.instance === 'fresh') {
      const ms = accounting.instantiateMs;
      home.instantiateMs = home.instantiateMs === undefined ? ms : home.instantiateMs + WEIGHT * (ms - home.instantiateMs);
    }
  }

  /** How many components the worker is believed to hold. */
  count(threadId: number): number {
    return this.#ofThread.get(threadId)?.size ?? 0;
  }

  /** A worker is gone, or dropped components it did not name. */
  forget(threadId: number): void {
    const homes = this.#ofThread.get(threadId);
    if (homes === undefined) return;
    this.#ofThread.delete(threadId);
    for (const home of homes) home.threads.delete(threadId);
  }
}
