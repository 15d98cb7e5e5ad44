/**
 * The fleet's connections to Redis (node-redis): one for commands, one for
 * pub/sub. Neither is awaited at start: a host whose Redis is down starts and
 * serves local calls, and both connections reconnect by themselves (backoff up
 * to 2 s). Commands never queue while Redis is away (`disableOfflineQueue`)
 * and time out after `commandTimeoutMs`: they fail at once with
 * FLEET_UNAVAILABLE, so no call waits on a dead store.
 */
import { createHash } from 'node:crypto';
import { createClient, ErrorReply, type RedisArgument } from '@redis/client';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';

export interface RedisLinkOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** How long one command may take before it fails with FLEET_UNAVAILABLE (ms, default 1000). */
  commandTimeoutMs?: number;
  /** How long one connection attempt may take (ms, default 1000). */
  connectTimeoutMs?: number;
}

type Client = ReturnType<typeof createClient>;
type Reply = unknown;

/** Reconnect after 50, 100, 200... ms, at most 2 s, with jitter. */
function reconnectDelay(retries: number): number {
  const base = Math.min(50 * 2 ** Math.min(retries, 6), 2000);
  return Math.round(base / 2 + Math.random() * (base / 2));
}

export class RedisLink {
  readonly #commands: Client;
  readonly #subscriber: Client;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #scripts = new Map<string, string>();
  readonly #upListeners = new Set<() => void>();
  #wasUp = false;
  #closed = false;

  constructor(options: RedisLinkOptions, logger: Logger) {
    if (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url)) {
      throw new TypeError('options.url must be a redis:// or rediss:// URL');
    }
    this.#timeoutMs = options.commandTimeoutMs ?? 1000;
    this.#logger = logger.child({ component: 'fleet' });
    const config = {
      url: options.url,
      disableOfflineQueue: true,
      socket: { connectTimeout: options.connectTimeoutMs ?? 1000, reconnectStrategy: reconnectDelay },
    };
    this.#commands = createClient(config);
    this.#subscriber = createClient(config);
    for (const [name, client] of [['commands', this.#commands], ['subscriber', this.#subscriber]] as const) {
      client.on('error', (error: Error) => this.#onError(name, error));
      client.on('ready', () => this.#onReady());
      client.on('end', () => this.#onDown());
      client.on('reconnecting', () => this.#onDown());
    }
  }

  /** Start connecting (in the background: this never waits for Redis). */
  start(): void {
    for (const client of [this.#commands, this.#subscriber]) {
      client.connect().catch((error: unknown) => {
        if (!this.#closed) this.#logger.warn({ err: messageOf(error) }, 'fleet: could not connect to Redis');
      });
    }
  }

  /** Both connections are ready. */
  get up(): boolean {
    return this.#commands.isReady && this.#subscriber.isReady;
  }

  /** Be told each time Redis is reachable again (and the first time). */
  onUp(listener: () => void): void {
    this.#upListeners.add(listener);
  }

  /** Wait until both connections are ready (tests, tools); rejects after `timeoutMs`. */
  async ready(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.up) {
      if (Date.now() > deadline) throw new ToolhostError('FLEET_UNAVAILABLE', 'Redis did not become reachable in time');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** One command; rejects with FLEET_UNAVAILABLE when Redis is unreachable or slow. */
  async command<T = Reply>(args: readonly RedisArgument[]): Promise<T> {
    try {
      return await this.#commands.sendCommand<T>([...args], { timeout: this.#timeoutMs });
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Commands in one MULTI/EXEC transaction; resolves with their replies. */
  async transaction(commands: ReadonlyArray<readonly RedisArgument[]>): Promise<Reply[]> {
    try {
      const multi = this.#commands.multi();
      for (const args of commands) multi.addCommand([...args]);
      return (await multi.exec()) as Reply[];
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Run a Lua script (EVALSHA, loading it on NOSCRIPT). */
  async script<T = Reply>(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    let sha = this.#scripts.get(source);
    if (sha === undefined) {
      sha = createHash('sha1').update(source).digest('hex');
      this.#scripts.set(source, sha);
    }
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    try {
      return await this.#commands.sendCommand<T>(['EVALSHA', sha, ...tail], { timeout: this.#timeoutMs });
    } catch (error) {
      if (!messageOf(error).startsWith('NOSCRIPT')) throw unavailable(error);
    }
    return this.command<T>(['EVAL', source, ...tail]);
  }

  /** Listen on a channel (re-subscribed by the client after a reconnect). */
  async subscribe(channel: string, listener: (message: string) => void): Promise<void> {
    try {
      await this.#subscriber.subscribe(channel, listener);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Publish; resolves with how many subscribers got the message. */
  async publish(channel: string, message: string): Promise<number> {
    return Number(await this.command(['PUBLISH', channel, message]));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([this.#commands, this.#subscriber].map(async (client) => {
      if (client.isReady) await client.close();
      else client.destroy();
    }));
  }

  #onReady(): void {
    if (!this.up || this.#wasUp) return;
    this.#wasUp = true;
    this.#logger.info({}, 'fleet: Redis is reachable');
    for (const listener of this.#upListeners) listener();
  }

  #onDown(): void {
    if (this.#closed || !this.#wasUp) return;
    this.#wasUp = false;
    this.#logger.warn({}, 'fleet: lost Redis; reconnecting (shared state is read-only best effort, fleet features fail with FLEET_UNAVAILABLE)');
  }

  #onError(connection: string, error: Error): void {
    // Logged once per outage at warn (by #onDown), every attempt at debug.
    this.#logger.debug({ connection, err: error.message }, 'fleet: Redis connection error');
  }
}

function unavailable(error: unknown): ToolhostError {
  if (error instanceof ToolhostError) return error;
  // Redis answered, with an error: a bug (a script, a wrong type), not an outage.
  if (error instanceof ErrorReply) return new ToolhostError('INTERNAL', `Redis refused a command: ${error.message}`, { cause: error });
  return new ToolhostError('FLEET_UNAVAILABLE', `Redis is unreachable: ${messageOf(error)}`, { cause: error });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
