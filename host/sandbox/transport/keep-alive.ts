/**
 * What keeps the process alive while the pool has tasks (ref'd only then):
 * piscina's workers do not (it refs a worker only for its own tasks), nor do
 * the lanes, and a task may wait for a worker that is still starting.
 *
 * A MessagePort that listens counts for the event loop while it is ref'd
 * (and while its other end lives: both are kept). It lives here because
 * only the transport makes channels (test/transport-wall.test.ts).
 */
import { MessageChannel } from 'node:worker_threads';

export class KeepAlive {
  readonly #channel = new MessageChannel();

  constructor() {
    this.#channel.port1.on('message', () => {});
    this.#channel.port1.unref();
  }

  ref(): void {
    this.#channel.port1.ref();
  }

  unref(): void {
    this.#channel.port1.unref();
  }

  close(): void {
    this.#channel.port1.close();
  }
}
