/**
 * The sandbox process's side of its heartbeat (process containment; the
 * supervisor's side is heartbeat.ts). A thread of its own answers the
 * supervisor's pings, on a pipe of its own (fd HEARTBEAT_FD, opened by the
 * supervisor's `fork`), so no message on the IPC channel and no work on this
 * process's main thread can hold an answer up; each answer says how long this
 * process's main loop has not turned (LOOP_TICK_MS ticks of a counter in shared
 * memory, read by the thread). The supervisor kills the process when it hears
 * nothing for `heartbeat_ms` (stopped, dead, or this thread wedged) or when the
 * answers say the main loop has not turned for `heartbeat_ms`: truly stuck.
 *
 * Why this design: the main thread of this process relays bounded bytes only
 * (guest code runs in worker threads; a guest's requests, events and results
 * cross as data capped in the worker before they are posted: client requests
 * at `client_request_bytes`, events and results at their limits), so its loop
 * turns within milliseconds whatever a guest sends; a loop that does not turn
 * for `heartbeat_ms` (10 s by default) is stuck, not busy. The answers no
 * longer wait behind large messages either way on the IPC channel (a 16 MiB
 * result, a large task), nor for this main thread to read a ping.
 *
 * Guarantees: an answer per ping while this process runs, whatever its main
 * thread does. Does not: tell a main loop busy for longer than `heartbeat_ms`
 * with legitimate work from a stuck one (nothing legitimate takes that long).
 */
import { fstatSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** The heartbeat pipe's file descriptor in the sandbox process (stdio slot 4: after stdin, stdout, stderr and the IPC channel). */
export const HEARTBEAT_FD = 4;

/** How often the main loop ticks its counter (ms): the answers' resolution. */
export const LOOP_TICK_MS = 100;

/** Bytes of one answer: the main loop's stall in ms, a little-endian uint32 (capped). */
export const ANSWER_BYTES = 4;

/**
 * The thread: reads pings (any byte) from the pipe, answers each with the
 * time since it last saw the main loop's counter move. CommonJS, evaluated
 * (no file of its own, so it runs the same from the sources and from dist/).
 */
const THREAD_SOURCE = `
const { workerData } = require('node:worker_threads');
const net = require('node:net');
const turns = new Int32Array(workerData.turns);
let seen = Atomics.load(turns, 0);
let movedAt = performance.now();
const pipe = new net.Socket({ fd: workerData.fd, readable: true, writable: true });
pipe.on('error', () => {});
pipe.on('data', (pings) => {
  const now = performance.now();
  const turn = Atomics.load(turns, 0);
  if (turn !== seen) {
    seen = turn;
    movedAt = now;
  }
  const answer = Buffer.alloc(${ANSWER_BYTES} * pings.length);
  const stalled = Math.min(0xffffffff, Math.max(0, Math.round(now - movedAt)));
  for (let i = 0; i < pings.length; i++) answer.writeUInt32LE(stalled, i * ${ANSWER_BYTES});
  pipe.write(answer);
});
`;

/**
 * Start the heartbeat thread and the main loop's tick, when the supervisor
 * opened the pipe (an older supervisor pings over IPC, still answered there).
 * Returns whether it started.
 */
export function startHeartbeatThread(): boolean {
  try {
    if (!fstatSync(HEARTBEAT_FD).isSocket() && !fstatSync(HEARTBEAT_FD).isFIFO()) return false;
  } catch {
    return false;
  }
  const turns = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  setInterval(() => Atomics.add(turns, 0, 1), LOOP_TICK_MS).unref();
  const thread = new Worker(THREAD_SOURCE, { eval: true, workerData: { fd: HEARTBEAT_FD, turns: turns.buffer }, resourceLimits: { maxOldGenerationSizeMb: 16 } });
  // The process ends when its host does (child.ts); this thread never keeps it up.
  thread.unref();
  thread.on('error', () => {});
  return true;
}
