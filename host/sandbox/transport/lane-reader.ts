/**
 * The worker's side of its task lane: tasks come on the lane's port (as
 * posted messages) and in its ring (plain calls put in shared memory, see
 * ../task-ring.ts). The reader hands them to the worker one by one, port
 * first: whatever a ring call relies on (its control buffer, its call
 * profile) came on the port before it.
 *
 * It also keeps the ring's `listening` flag true while the worker waits in
 * its event loop, and only then: a call put in the ring of a worker that
 * listens comes with a kick (LANE_KICK on the port); one put there while the
 * worker runs a task or spins is taken when that is over, without a message.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { LANE_KICK, type LaneMessage, type LaneTask } from './lane-codec.js';
import type { TaskRing } from './task-ring.js';
import type { SpinSource } from './lane-spin.js';

export class LaneReader implements SpinSource<LaneTask> {
  readonly #port: MessagePort;
  readonly #ring: TaskRing;
  readonly #run: (task: LaneTask) => void;

  constructor(port: MessagePort, ring: TaskRing, run: (task: LaneTask) => void) {
    this.#port = port;
    this.#ring = ring;
    this.#run = run;
  }

  /** The port's message event (or a task a spin caught): run a posted task, then whatever the ring holds. */
  onMessage(message: LaneMessage): void {
    this.#ring.listen(false);
    if (message !== LANE_KICK) this.#run(message);
    this.drain();
  }

  /**
   * Run every call the ring holds (and the posts before them), then listen.
   * After it starts listening it looks once more: a call put in the ring
   * before the pool could see it listening came with no kick.
   */
  drain(): void {
    const ring = this.#ring;
    for (;;) {
      while (ring.pending) {
        const task = this.next();
        if (task !== undefined) this.#run(task);
      }
      ring.listen(true);
      if (!ring.pending) return;
      ring.listen(false);
    }
  }

  /** The next task the lane holds: the port's first, then the ring's. */
  next(): LaneTask | undefined {
    for (;;) {
      const posted = receiveMessageOnPort(this.#port) as { message: LaneMessage } | undefined;
      if (posted === undefined) return this.#ring.take();
      if (posted.message !== LANE_KICK) return posted.message;
    }
  }

  listen(on: boolean): void {
    this.#ring.listen(on);
  }
}
