/**
 * The fleet's connections to one Redis (node-redis): one for commands, one for
 * pub/sub, and (opened on the first acknowledged write) one for writes that
 * wait for replicas. None is awaited at start: a host whose Redis is down
 * starts and serves local calls, and every connection reconnects by itself
 * (backoff up to 2 s). Commands never queue while Redis is away
 * (`disableOfflineQueue`) and time out after `commandTimeoutMs`: they fail at
 * once with FLEET_UNAVAILABLE, so no call waits on a dead store. A Redis
 * Cluster is `redis-cluster-link.ts`; both implement `link.ts`'s RedisLink.
 */
import { createHash } from 'node:crypto';
import { createClient } from '@redis/client';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import { fleetError, messageOf, reconnectDelay, withDeadline, type AcknowledgedReply, type RedisCommand, type RedisLink as Link } from './link.js';

export interface RedisLinkOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** How long one command may take before it fails with FLEET_UNAVAILABLE (ms, default 1000). */
  commandTimeoutMs?: number;
  /** How long one connection attempt may take (ms, default 1000). */
  connectTimeoutMs?: number;
}

type Client = ReturnType<typeof createClient>;

/** EVALSHA through `send`, loading the script (EVAL) on NOSCRIPT. */
export async function evalScript<T>(send: (args: RedisCommand) => Promise<T>, source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
  const sha = scriptSha(source);
  const tail = [String(keys.length), ...keys, ...args.map(String)];
  try {
    return await send(['EVALSHA', sha, ...tail]);
  } catch (error) {
    // The reply itself, or wrapped by the cluster link's error mapping.
    if (!messageOf(error).includes('NOSCRIPT')) throw error;
  }
  return send(['EVAL', source, ...tail]);
}

const shas = new Map<string, string>();
function scriptSha(source: string): string {
  let sha = shas.get(source);
  if (sha === undefined) {
    sha = createHash('sha1').update(source).digest('hex');
    shas.set(source, sha);
  }
  return sha;
}

export class SingleRedisLink implements Link {
  readonly mode = 'single' as const;
  readonly commandTimeoutMs: number;
  readonly #config: Parameters<typeof createClient>[0];
  readonly #commands: Client;
  readonly #subscriber: Client;
  #acked: Client | undefined;
  readonly #logger: Logger;
  readonly #upListeners = new Set<() => void>();
  #wasUp = false;
  #closed = false;

  constructor(options: RedisLinkOptions, logger: Logger) {
    if (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url)) {
      throw new TypeError('options.url must be a redis:// or rediss:// URL');
    }
    this.commandTimeoutMs = options.commandTimeoutMs ?? 1000;
    this.#logger = logger.child({ component: 'fleet' });
    this.#config = {
      url: options.url,
      disableOfflineQueue: true,
      socket: { connectTimeout: options.connectTimeoutMs ?? 1000, reconnectStrategy: reconnectDelay },
    };
    this.#commands = this.#client('commands');
    this.#subscriber = this.#client('subscriber');
  }

  #client(name: string): Client {
    const client = createClient(this.#config);
    client.on('error', (error: Error) => this.#onError(name, error));
    client.on('ready', () => this.#onReady());
    client.on('end', () => this.#onDown());
    client.on('reconnecting', () => this.#onDown());
    return client;
  }

  start(): void {
    for (const client of [this.#commands, this.#subscriber]) this.#connect(client);
  }

  #connect(client: Client): void {
    client.connect().catch((error: unknown) => {
      if (!this.#closed) this.#logger.warn({ err: messageOf(error) }, 'fleet: could not connect to Redis');
    });
  }

  /** Both connections are ready. */
  get up(): boolean {
    return this.#commands.isReady && this.#subscriber.isReady;
  }

  /** Always false: `wait_replicas` defaults to 0 on a single Redis (set it to wait for the replicas of one). */
  get replicated(): boolean {
    return false;
  }

  onUp(listener: () => void): void {
    this.#upListeners.add(listener);
  }

  async ready(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.up) {
      if (Date.now() > deadline) throw new ToolhostError('FLEET_UNAVAILABLE', 'Redis did not become reachable in time');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async command<T = unknown>(args: RedisCommand): Promise<T> {
    try {
      return await this.#commands.sendCommand<T>([...args], { timeout: this.commandTimeoutMs });
    } catch (error) {
      throw fleetError(error);
    }
  }

  async transaction(commands: ReadonlyArray<RedisCommand>): Promise<unknown[]> {
    try {
      const multi = this.#commands.multi();
      for (const args of commands) multi.addCommand([...args]);
      return (await withDeadline(multi.exec(), this.commandTimeoutMs, 'a transaction')) as unknown[];
    } catch (error) {
      throw fleetError(error);
    }
  }

  /** One MULTI/EXEC on a single Redis (one round trip; atomic as a bonus, which callers must not rely on). */
  async batch(commands: ReadonlyArray<RedisCommand>): Promise<void> {
    if (commands.length > 0) await this.transaction(commands);
  }

  slotTag(): string {
    return '';
  }

  async script<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    try {
      return await evalScript((command) => this.#commands.sendCommand<T>([...command], { timeout: this.commandTimeoutMs }), source, keys, args);
    } catch (error) {
      throw fleetError(error);
    }
  }

  async acknowledgedScript<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[], replicas: number): Promise<AcknowledgedReply<T>> {
    if (replicas <= 0) return { reply: await this.script<T>(source, keys, args), acknowledged: 0 };
    const client = await this.#ackedClient();
    try {
      const timeout = this.commandTimeoutMs;
      const reply = await evalScript((command) => client.sendCommand<T>([...command], { timeout }), source, keys, args);
      // WAIT blocks this connection until enough replicas answer or its timeout passes; the client's own timeout is a margin later.
      const acknowledged = Number(await client.sendCommand(['WAIT', String(replicas), String(timeout)], { timeout: timeout + 500 }));
      return { reply, acknowledged };
    } catch (error) {
      throw fleetError(error);
    }
  }

  /** The connection kept for acknowledged writes (opened on first use, ready within the command timeout or FLEET_UNAVAILABLE). */
  async #ackedClient(): Promise<Client> {
    if (this.#acked === undefined) {
      this.#acked = this.#client('acknowledged writes');
      this.#connect(this.#acked);
    }
    const client = this.#acked;
    const deadline = Date.now() + this.commandTimeoutMs;
    while (!client.isReady) {
      if (this.#closed || Date.now() > deadline) throw new ToolhostError('FLEET_UNAVAILABLE', 'Redis is unreachable: the connection for acknowledged writes is not ready');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return client;
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<void> {
    try {
      await withDeadline(this.#subscriber.subscribe(channel, listener), this.commandTimeoutMs, 'SUBSCRIBE');
    } catch (error) {
      throw fleetError(error);
    }
  }

  async publish(channel: string, message: string): Promise<number> {
    return Number(await this.command(['PUBLISH', channel, message]));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const clients = [this.#commands, this.#subscriber, ...(this.#acked === undefined ? [] : [this.#acked])];
    await Promise.allSettled(clients.map(async (client) => {
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

/** The interface (a type) and, for `new RedisLink(options)`, the single-Redis link (a value). */
export type RedisLink = Link;
export const RedisLink = SingleRedisLink;
