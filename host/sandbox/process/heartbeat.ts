/**
 * The supervisor's heartbeat over one sandbox process: a `ping` every fifth of the timeout, and `onSilent` once the
 * process has answered none for `timeoutMs` (a process stopped with SIGSTOP, or whose main thread is wedged, answers
 * nothing; the supervisor then kills it with SIGKILL and starts another). The process answers from its main
 * thread, which only coordinates its workers: guest code runs in worker threads and never delays an answer.
 *
 * Guarantees: `onSilent` is called at most once per heartbeat, and only after this process's own event loop was
 * responsive for the whole window it judges (a tick that comes late, because this process was busy, restarts the
 * window instead of blaming the child for an answer this side had not read yet).
 * Does not: judge a process that has not answered yet before STARTUP_GRACE_MS (or the timeout, if longer), or tell
 * a slow process from a stopped one (the timeout is the line: the default is far above anything the process's main
 * thread does between two messages).
 */

/** How long the sandbox process may leave heartbeats unanswered before it is killed and replaced (ms). */
export const DEFAULT_HEARTBEAT_MS = 10_000;

/**
 * The first answer's window at least: a process answers once it has loaded its modules and listens (well under a
 * second, longer on a loaded machine), so a short heartbeat does not kill processes that are still starting.
 */
export const STARTUP_GRACE_MS = 10_000;

/** Pings per timeout window: the process is judged at most this fraction of the timeout late. */
const PINGS_PER_WINDOW = 5;

export class Heartbeat {
  readonly #timeoutMs: number;
  readonly #ping: () => void;
  readonly #onSilent: (silentMs: number) => void;
  readonly #intervalMs: number;
  readonly #timer: NodeJS.Timeout;
  /** When the window being judged opened: the last answer, the start, or a late tick. */
  #windowStart: number;
  #lastTick: number;
  #answeredOnce = false;
  #stopped = false;

  /** Starts at once: the first window opens now (STARTUP_GRACE_MS at least). `ping` sends one ping; `answered()` is to be called on each pong. */
  constructor(timeoutMs: number, ping: () => void, onSilent: (silentMs: number) => void) {
    this.#timeoutMs = timeoutMs;
    this.#ping = ping;
    this.#onSilent = onSilent;
    this.#intervalMs = Math.max(10, Math.floor(timeoutMs / PINGS_PER_WINDOW));
    this.#windowStart = this.#lastTick = performance.now();
    this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
    this.#timer.unref();
  }

  /** The process answered a ping (or said anything else that proves its main thread turns). */
  answered(): void {
    this.#windowStart = performance.now();
    this.#answeredOnce = true;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  #tick(): void {
    if (this.#stopped) return;
    const now = performance.now();
    // This side was busy (its timers ran late): pongs may be waiting unread behind this tick. Judge from now on.
    if (now - this.#lastTick > this.#intervalMs * 2) this.#windowStart = now;
    this.#lastTick = now;
    const silentMs = now - this.#windowStart;
    if (silentMs >= (this.#answeredOnce ? this.#timeoutMs : Math.max(this.#timeoutMs, STARTUP_GRACE_MS))) {
      this.stop();
      this.#onSilent(silentMs);
      return;
    }
    this.#ping();
  }
}
