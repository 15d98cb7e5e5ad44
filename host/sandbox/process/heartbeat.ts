/**
 * The supervisor's heartbeat over one sandbox process: a ping every fifth of the timeout, and `onSilent` once the
 * process has not proved for `timeoutMs` that its main loop turns. The process answers from a thread of its own on
 * a pipe of its own (heartbeat-thread.ts), each answer saying how long its main loop has not turned; any IPC message
 * from it proves a turn too. So a process stopped with SIGSTOP or dead (no answer), and one whose main loop is
 * wedged (answers that say so), are judged alike; a process whose IPC channel is busy with large messages, or whose
 * main loop is briefly busy, is not: guest code runs in worker threads, and what crosses its main thread is capped
 * in the worker before it is posted, so a loop that does not turn for `timeoutMs` is stuck, not busy with a guest.
 *
 * Guarantees: `onSilent` is called at most once per heartbeat, and only after this process's own event loop was
 * responsive for the whole window it judges (a tick that comes late, because this process was busy, restarts the
 * window instead of blaming the child for an answer this side had not read yet).
 * Does not: judge a process that has not answered yet before STARTUP_GRACE_MS (or the timeout, if longer), or tell
 * a slow process from a stopped one (the timeout is the line: the default is far above anything the process's main
 * thread does between two messages).
 */

import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { ANSWER_BYTES } from './heartbeat-thread.js';

/** One ping on the heartbeat pipe (any byte is one). */
const PING = Buffer.from([1]);

/** The supervisor's end of a sandbox process's heartbeat pipe (the child's is heartbeat-thread.ts). */
export class HeartbeatPipe {
  readonly #pipe: Socket;

  private constructor(pipe: Socket) {
    this.#pipe = pipe;
    pipe.on('error', () => {});
    // The IPC channel keeps the child's lifetime; this pipe never keeps the host up.
    pipe.unref?.();
  }

  /** The pipe at the child's HEARTBEAT_FD stdio slot, when `fork` opened one. */
  static of(stream: Readable | Writable | null | undefined): HeartbeatPipe | undefined {
    return stream ? new HeartbeatPipe(stream as Socket) : undefined;
  }

  /** Send one ping; true when it was written (false: the pipe is gone, ping some other way). */
  ping(): true | undefined {
    if (!this.#pipe.writable) return undefined;
    this.#pipe.write(PING);
    return true;
  }

  /** Each answer: how long the child's main loop had not turned (ms). */
  onAnswer(listener: (loopStalledMs: number) => void): void {
    let carry: Buffer = Buffer.alloc(0);
    this.#pipe.on('data', (chunk: Buffer) => {
      const bytes = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
      let at = 0;
      for (; at + ANSWER_BYTES <= bytes.length; at += ANSWER_BYTES) listener(bytes.readUInt32LE(at));
      carry = bytes.subarray(at);
    });
  }
}

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

  /**
   * The process answered a ping, or said anything else that proves its main
   * thread turns. `loopStalledMs`: the answer came from its heartbeat thread
   * (heartbeat-thread.ts), which says how long ago its main loop last turned:
   * that is when the process last proved it is not stuck.
   */
  answered(loopStalledMs = 0): void {
    // Never moved back: a late tick may have opened the window later than the process's last turn, on purpose.
    this.#windowStart = Math.max(this.#windowStart, performance.now() - loopStalledMs);
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
