/**
 * The fleet's connection to a Redis Cluster (node-redis's cluster client): the
 * same RedisLink as one Redis (`link.ts`), over a cluster of masters and
 * their replicas.
 *
 * - Routing: a command goes to the master of its key's slot; MOVED and ASK
 *   redirections are followed by the client (it re-reads the topology on
 *   MOVED), and a node that stops answering makes it re-read the topology
 *   after `topologyRefreshMs` of reconnect attempts, so a replica promoted by a
 *   failover takes the slot's commands without a restart.
 * - Bounds: every command has the command timeout, and the whole exchange
 *   (redirections and topology reads included) is raced against twice that:
 *   past it, or while the slot has no reachable master (connections refuse at
 *   once: no offline queue), FLEET_UNAVAILABLE. Replies meaning "no master for
 *   the slot now" (CLUSTERDOWN, TRYAGAIN, ...) are outages too (`link.ts`).
 * - Pub/sub is sharded (SSUBSCRIBE / SPUBLISH): a channel lives on its slot's
 *   master; the client subscribes again when the slot moves or fails over. A
 *   subscription asked for before the cluster was first reached is applied
 *   once it is.
 * - Acknowledged writes (`acknowledgedScript`) run on a second cluster client
 *   whose connections carry only them: a WAIT blocks its connection until the
 *   replicas answer, and must never hold other commands back.
 * - The first connection retries with backoff until the cluster answers (a
 *   host whose cluster is down still starts).
 *
 * It does not make writes to a failed master's slot succeed before a replica
 * takes over (they fail FLEET_UNAVAILABLE), nor keep what a master
 * acknowledged but never replicated (see docs/deployment.md).
 */
import { createCluster, type RedisClusterType } from '@redis/client';
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import { fleetError, messageOf, reconnectDelay, withDeadline, type AcknowledgedReply, type RedisCommand, type RedisLink } from './link.js';
import { evalScript } from './redis-link.js';

export interface ClusterLinkOptions {
  /** Seed nodes, `redis://[user:password@]host:port` (or `rediss://`): any reachable one reveals the rest. */
  nodes: readonly string[];
  /** How long one command may take before it fails with FLEET_UNAVAILABLE (ms, default 1000). */
  commandTimeoutMs?: number;
  /** How long one connection attempt may take (ms, default 1000). */
  connectTimeoutMs?: number;
  /** Re-read the topology after a node has been reconnecting this long (ms, default 500). */
  topologyRefreshMs?: number;
}

type Cluster = RedisClusterType;

export class ClusterRedisLink implements RedisLink {
  readonly mode = 'cluster' as const;
  readonly commandTimeoutMs: number;
  readonly #options: ClusterLinkOptions;
  readonly #cluster: Cluster;
  #acked: Cluster | undefined;
  #ackedConnected = false;
  readonly #logger: Logger;
  readonly #upListeners = new Set<() => void>();
  readonly #pending: Array<{ channel: string; listener: (message: string) => void; done: (error?: unknown) => void }> = [];
  #connected = false;
  #closed = false;
  #replicated = false;

  constructor(options: ClusterLinkOptions, logger: Logger) {
    if (!Array.isArray(options.nodes) || options.nodes.length === 0 || !options.nodes.every((url) => typeof url === 'string' && /^rediss?:\/\/./.test(url))) {
      throw new TypeError('options.nodes must be a non-empty list of redis:// or rediss:// URLs');
    }
    this.#options = options;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 1000;
    this.#logger = logger.child({ component: 'fleet' });
    this.#cluster = this.#create('commands');
  }

  #create(name: string): Cluster {
    const first = new URL(this.#options.nodes[0]!);
    const cluster = createCluster({
      rootNodes: this.#options.nodes.map((url) => ({ url })),
      // What every node connection takes (the seeds' URLs are only read for the topology).
      defaults: {
        ...(first.username === '' ? {} : { username: decodeURIComponent(first.username) }),
        ...(first.password === '' ? {} : { password: decodeURIComponent(first.password) }),
        disableOfflineQueue: true,
        socket: { connectTimeout: this.#options.connectTimeoutMs ?? 1000, reconnectStrategy: reconnectDelay, ...(first.protocol === 'rediss:' ? { tls: true as const } : {}) },
      },
      commandOptions: { timeout: this.commandTimeoutMs },
      maxCommandRedirections: 8,
      topologyRefreshOnReconnectionAttemptStrategy: this.#options.topologyRefreshMs ?? 500,
    }) as unknown as Cluster;
    cluster.on('error', (error: Error) => this.#logger.debug({ connection: name, err: error.message }, 'fleet: Redis Cluster error'));
    cluster.on('node-error', (error: Error, node: { host?: string; port?: number }) => this.#logger.debug({ connection: name, node: `${node?.host}:${node?.port}`, err: error?.message }, 'fleet: Redis Cluster node error'));
    cluster.on('node-reconnecting', (node: { host?: string; port?: number }) => this.#logger.debug({ connection: name, node: `${node?.host}:${node?.port}` }, 'fleet: Redis Cluster node reconnecting'));
    cluster.on('sharded-channel-moved-error', (error: Error, channel: string) => this.#logger.warn({ channel, err: error?.message }, 'fleet: could not follow a channel to its new master'));
    const subscribe = this.#guardResubscribe(cluster);
    if (name === 'commands' && subscribe !== undefined) this.#sSubscribe = subscribe;
    return cluster;
  }

  /**
   * node-redis subscribes its sharded listeners again after a topology change
   * by calling the instance's `sSubscribe` without awaiting it: a failure there
   * (the new master not reachable yet) would be an unhandled rejection, which
   * ends a Node process. The instance's `sSubscribe` is wrapped so such a call
   * is retried every second until it succeeds or the link closes; the link's
   * own subscriptions call the original (their callers see their failures).
   */
  #guardResubscribe(cluster: Cluster): ((channel: string, listener: (message: string) => void) => Promise<unknown>) | undefined {
    const instance = Object.getPrototypeOf(cluster) as { sSubscribe?: (...args: unknown[]) => Promise<unknown> };
    const original = instance.sSubscribe;
    if (typeof original !== 'function') return undefined;
    const retry = (args: unknown[]): void => {
      original.apply(instance, args).catch((error: unknown) => {
        this.#logger.warn({ channel: String(args[0]), err: messageOf(error) }, 'fleet: could not subscribe again after a topology change; retrying');
        if (!this.#closed) setTimeout(() => retry(args), 1000).unref();
      });
    };
    instance.sSubscribe = (...args: unknown[]): Promise<unknown> => {
      retry(args);
      return Promise.resolve();
    };
    return (channel, listener) => original.call(instance, channel, listener);
  }

  /** SSUBSCRIBE as node-redis does it (before the guard above wrapped it). */
  #sSubscribe: (channel: string, listener: (message: string) => void) => Promise<unknown> = (channel, listener) => this.#cluster.sSubscribe(channel, listener);

  start(): void {
    void this.#connectLoop();
  }

  async #connectLoop(): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt += 1) {
      try {
        await this.#cluster.connect();
        if (this.#closed) return;
        await this.#readTopology();
        this.#connected = true;
        this.#logger.info({}, 'fleet: Redis Cluster is reachable');
        for (const { channel, listener, done } of this.#pending.splice(0)) this.subscribe(channel, listener).then(() => done(), done);
        for (const listener of this.#upListeners) listener();
        return;
      } catch (error) {
        if (attempt === 0) this.#logger.warn({ err: messageOf(error) }, 'fleet: could not reach the Redis Cluster; retrying');
        await new Promise((resolve) => setTimeout(resolve, reconnectDelay(attempt)));
      }
    }
  }

  /**
   * Whether the cluster has replicas (CLUSTER NODES: a node flagged `slave`); once seen, remembered.
   * Until seen, asked again every 2 s (a node may learn of replicas by gossip after the cluster is made).
   */
  async #readTopology(): Promise<void> {
    try {
      const nodes = String(await this.command<string>(['CLUSTER', 'NODES'], undefined));
      if (nodes.split('\n').some((line) => /\bslave\b/.test(line.split(' ')[2] ?? ''))) this.#replicated = true;
    } catch (error) {
      this.#logger.debug({ err: messageOf(error) }, 'fleet: could not read the cluster topology');
    }
    if (!this.#replicated && !this.#closed) setTimeout(() => void this.#readTopology(), 2000).unref();
  }

  get up(): boolean {
    return this.#connected && !this.#closed && this.#cluster.isReady;
  }

  get replicated(): boolean {
    return this.#replicated;
  }

  onUp(listener: () => void): void {
    this.#upListeners.add(listener);
  }

  async ready(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.up) {
      if (Date.now() > deadline) throw new ToolhostError('FLEET_UNAVAILABLE', 'the Redis Cluster did not become reachable in time');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Routed by `key` (default: the first argument after the command name; `undefined` for a keyless command). */
  async command<T = unknown>(args: RedisCommand, key: string | undefined = args[1] === undefined ? undefined : String(args[1])): Promise<T> {
    return this.#send<T>(this.#cluster, args, key);
  }

  async #send<T>(cluster: Cluster, args: RedisCommand, key: string | undefined): Promise<T> {
    try {
      return await withDeadline(cluster.sendCommand<T>(key, false, [...args], { timeout: this.commandTimeoutMs }), this.commandTimeoutMs * 2, String(args[0]));
    } catch (error) {
      throw fleetError(error);
    }
  }

  async transaction(commands: ReadonlyArray<RedisCommand>): Promise<unknown[]> {
    const key = commands.find((args) => args[1] !== undefined)?.[1];
    if (key === undefined) return [];
    try {
      const client = await withDeadline(this.#cluster.getNodeClientForKey(String(key)), this.commandTimeoutMs, 'finding the node of a transaction');
      const multi = client.multi();
      for (const args of commands) multi.addCommand([...args]);
      return (await withDeadline(multi.exec(), this.commandTimeoutMs, 'a transaction')) as unknown[];
    } catch (error) {
      throw fleetError(error);
    }
  }

  /** Each command to its own slot's master, all at once (node-redis pipelines those that share a node). */
  async batch(commands: ReadonlyArray<RedisCommand>): Promise<void> {
    const settled = await Promise.allSettled(commands.map((args) => this.command(args)));
    const failed = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  slotTag(group: string): string {
    return `{${group}}`;
  }

  async script<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return evalScript((command) => this.#send<T>(this.#cluster, command, keys[0]), source, keys, args);
  }

  async acknowledgedScript<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[], replicas: number): Promise<AcknowledgedReply<T>> {
    if (replicas <= 0 || keys[0] === undefined) return { reply: await this.script<T>(source, keys, args), acknowledged: 0 };
    const acked = await this.#ackedCluster();
    const reply = await evalScript((command) => this.#send<T>(acked, command, keys[0]), source, keys, args);
    try {
      // The master that ran the script (the client keeps one connection per node): WAIT counts the
      // replicas that have this connection's writes. A bare WAIT through the cluster client would go
      // to every master and answer the least.
      const timeout = this.commandTimeoutMs;
      const node = await withDeadline(acked.getNodeClientForKey(keys[0]), timeout, 'finding the master of an acknowledged write');
      const acknowledged = Number(await withDeadline(node.sendCommand(['WAIT', String(replicas), String(timeout)], { timeout: timeout + 500 }), timeout + 1000, 'WAIT'));
      return { reply, acknowledged };
    } catch (error) {
      throw fleetError(error);
    }
  }

  /** The cluster client kept for acknowledged writes (connected on first use, within the command timeout or FLEET_UNAVAILABLE). */
  async #ackedCluster(): Promise<Cluster> {
    if (this.#acked === undefined) {
      const acked = this.#create('acknowledged writes');
      this.#acked = acked;
      const connect = async (attempt: number): Promise<void> => {
        try {
          await acked.connect();
          this.#ackedConnected = true;
        } catch {
          if (this.#closed) return;
          await new Promise((resolve) => setTimeout(resolve, reconnectDelay(attempt)));
          if (!this.#closed) await connect(attempt + 1);
        }
      };
      void connect(0);
    }
    const deadline = Date.now() + this.commandTimeoutMs;
    while (!this.#ackedConnected) {
      if (this.#closed || Date.now() > deadline) throw new ToolhostError('FLEET_UNAVAILABLE', 'the Redis Cluster is unreachable: the connection for acknowledged writes is not ready');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.#acked;
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<void> {
    if (!this.#connected) {
      // Applied once the cluster is first reached (the connect loop retries until then).
      return new Promise<void>((resolve, reject) => this.#pending.push({ channel, listener, done: (error) => (error === undefined ? resolve() : reject(error)) }));
    }
    try {
      await withDeadline(this.#sSubscribe(channel, listener), this.commandTimeoutMs * 2, 'SSUBSCRIBE');
    } catch (error) {
      throw fleetError(error);
    }
  }

  async publish(channel: string, message: string): Promise<number> {
    try {
      return Number(await withDeadline(this.#cluster.sPublish(channel, message), this.commandTimeoutMs * 2, 'SPUBLISH'));
    } catch (error) {
      throw fleetError(error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const { done } of this.#pending.splice(0)) done(new ToolhostError('FLEET_UNAVAILABLE', 'the fleet link closed'));
    await Promise.allSettled([this.#cluster, ...(this.#acked === undefined ? [] : [this.#acked])].map(async (cluster) => {
      if (cluster.isOpen) await withDeadline(cluster.close(), 2000, 'closing').catch(() => cluster.destroy());
      else cluster.destroy();
    }));
  }
}
