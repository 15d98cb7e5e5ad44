/**
 * The fleet's store connection, whatever Redis runs it: one interface, two
 * implementations, `SingleRedisLink` (one Redis, `redis-link.ts`) and
 * `ClusterRedisLink` (a Redis Cluster, `redis-cluster-link.ts`). Every fleet
 * structure (state, call directory, sessions, host records, and whatever
 * joins them: an event store, a tracer's relay) talks to Redis through it.
 *
 * The contract a user of a link keeps, so the same code runs on both:
 * - a script names every key it touches in KEYS (never builds a key name in
 *   Lua), and its keys share one slot: keys built with the same
 *   {@link RedisLink.slotTag} do (`''` on a single Redis, `{group}` on a
 *   cluster);
 * - `transaction` is atomic and single-slot; `batch` is neither (each command
 *   goes to its own slot's master: use it for independent writes);
 * - `publish`/`subscribe` are sharded pub/sub on a cluster (SPUBLISH /
 *   SSUBSCRIBE: a channel lives on its slot's master, re-subscribed by the
 *   client when the slot moves or fails over), plain pub/sub on one Redis.
 *
 * Every command is bounded by the link's command timeout: past it, or while
 * the store (or the slot's master) is unreachable, it rejects with
 * FLEET_UNAVAILABLE; nothing queues while Redis is away.
 */
import { ErrorReply, type RedisArgument } from '@redis/client';
import { ToolhostError } from '../base/errors.js';

export type RedisCommand = readonly RedisArgument[];

/** A script's reply and how many replicas acknowledged the write (WAIT). */
export interface AcknowledgedReply<T> {
  reply: T;
  /** Replicas that acknowledged the write within the command timeout. */
  acknowledged: number;
}

export interface RedisLink {
  /** `single`: one Redis (`cluster.redis`); `cluster`: a Redis Cluster (`cluster.redis_cluster`). */
  readonly mode: 'single' | 'cluster';
  /** The store answers (a cluster: its topology is known; one of its masters may still be failing over). */
  readonly up: boolean;
  /** How long one command may take (ms). */
  readonly commandTimeoutMs: number;
  /** Start connecting (in the background: this never waits for Redis). */
  start(): void;
  /** Be told each time the store is reachable again (and the first time). */
  onUp(listener: () => void): void;
  /** Wait until the store is reachable (tests, tools); rejects with FLEET_UNAVAILABLE after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  /**
   * One command. On a cluster it goes to the master of `key`'s slot (default:
   * its first argument after the command name).
   */
  command<T = unknown>(args: RedisCommand, key?: string): Promise<T>;
  /** Commands in one MULTI/EXEC transaction (on a cluster, every key must share one slot). */
  transaction(commands: ReadonlyArray<RedisCommand>): Promise<unknown[]>;
  /** Independent commands sent together (not atomic); rejects with the first failure. */
  batch(commands: ReadonlyArray<RedisCommand>): Promise<void>;
  /** Run a Lua script (EVALSHA, loading it on NOSCRIPT); every key in `keys`, all in one slot. */
  script<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T>;
  /**
   * A script whose write must reach `replicas` replicas: the script, then
   * `WAIT replicas <command timeout>` on the same connection to the same
   * master (a connection kept for acknowledged writes, so a WAIT never holds
   * other commands back). Resolves with how many acknowledged.
   */
  acknowledgedScript<T = unknown>(source: string, keys: readonly string[], args: readonly (string | number)[], replicas: number): Promise<AcknowledgedReply<T>>;
  /** Whether the store was seen with replicas (a cluster whose shards have them); decides `wait_replicas`' default. */
  readonly replicated: boolean;
  /** The hash tag that puts keys in one slot: `''` on a single Redis, `{group}` on a cluster. */
  slotTag(group: string): string;
  /** Listen on a channel (re-subscribed by the client after a reconnect or a failover). */
  subscribe(channel: string, listener: (message: string) => void): Promise<void>;
  /** Publish; resolves with how many subscribers got the message. */
  publish(channel: string, message: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Replies that mean "the store cannot serve this now", not "this command is
 * wrong": a cluster without a master for the slot, a slot moving, a replica
 * promoted mid-write, a server loading its data. They fail as outages.
 */
const OUTAGE_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING|READONLY|NOREPLICAS|MOVED|ASK|BUSY)\b/;

/** `error` as the fleet's error: FLEET_UNAVAILABLE for an outage or a timeout, INTERNAL for a reply that refused the command. */
export function fleetError(error: unknown): ToolhostError {
  if (error instanceof ToolhostError) return error;
  // Redis answered, with an error: a bug (a script, a wrong type), not an outage.
  if (error instanceof ErrorReply && !OUTAGE_REPLIES.test(error.message)) {
    return new ToolhostError('INTERNAL', `Redis refused a command: ${error.message}`, { cause: error });
  }
  return new ToolhostError('FLEET_UNAVAILABLE', `Redis is unreachable: ${messageOf(error)}`, { cause: error });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Reconnect after 50, 100, 200... ms, at most 2 s, with jitter. */
export function reconnectDelay(retries: number): number {
  const base = Math.min(50 * 2 ** Math.min(retries, 6), 2000);
  return Math.round(base / 2 + Math.random() * (base / 2));
}

/** `work`, or FLEET_UNAVAILABLE once `ms` have passed (the work is left to finish or fail unobserved). */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ToolhostError('FLEET_UNAVAILABLE', `Redis is unreachable: ${what} took longer than ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
