/**
 * A fleet of hosts on Redis: the shared conversation state and the fleet-wide
 * call directory, over one link to the store (`link.ts`): one Redis
 * (`cluster.redis`, `serve --redis`) or a Redis Cluster
 * (`cluster.redis_cluster`, `serve --redis-cluster`). The composition root
 * opens one per host when the config has a `cluster` section; without one,
 * the host uses its in-process defaults. `openRedisLink` gives the same link
 * to anything else that keeps fleet data in the store.
 */
import type { Logger } from '../base/logger.js';
import { RedisCallDirectory, type FleetLimits } from './redis-call-directory.js';
import type { RedisLink } from './link.js';
import { ClusterRedisLink } from './redis-cluster-link.js';
import { RedisEventLog, type EventLogLimits } from './redis-event-log.js';
import { SingleRedisLink } from './redis-link.js';
import { RedisSessionDirectory, type SessionDirectoryLimits } from './redis-session-directory.js';
import { RedisStateStore } from './redis-state-store.js';

export { RedisCallDirectory, type FleetLimits } from './redis-call-directory.js';
export { parseHostRecord, readFleet, type FleetHostCall, type FleetHostRecord, type SkippedRecord } from './host-record.js';
export { RedisLink, SingleRedisLink, type RedisLinkOptions } from './redis-link.js';
export { ClusterRedisLink, type ClusterLinkOptions } from './redis-cluster-link.js';
export { fleetError, type AcknowledgedReply, type RedisCommand } from './link.js';
export { RedisEventLog, type EventLogLimits } from './redis-event-log.js';
export { CLUSTER_STATE_BUCKETS, RedisStateStore } from './redis-state-store.js';
export { DEFAULT_SESSION_DIRECTORY_LIMITS, RedisSessionDirectory, type SessionDirectoryLimits } from './redis-session-directory.js';

/** Where the fleet's store is: one Redis, or a Redis Cluster (exactly one of the two). */
export type FleetStoreTarget = { redis: string; redisCluster?: undefined } | { redis?: undefined; redisCluster: { nodes: readonly string[] } };

export type FleetOptions = FleetStoreTarget & FleetSettings;

export interface FleetSettings {
  /** Prefix of every key and channel (default `toolhost:`): fleets sharing one Redis use different prefixes. */
  keyPrefix?: string;
  /** How long a call stays registered without its host renewing it (ms, default 15000). */
  leaseMs?: number;
  /** How long one Redis command may take (ms, default 1000). */
  commandTimeoutMs?: number;
  state?: { ttlSeconds?: number; maxValueBytes?: number; maxKeys?: number; maxBytesPerConversation?: number; maxTotalBytes?: number; maxBytesPerPrincipal?: number; waitReplicas?: number };
  limits?: FleetLimits;
  /** MCP sessions shared by the fleet: caps in the fleet and per principal, their TTL. */
  sessions?: SessionDirectoryLimits;
  /** Their streams' events kept for replay (servers.mcp.http.resume_events / resume_bytes; the sessions' TTL). */
  events?: EventLogLimits;
  /** What this host adds to its record in the fleet view (servers, pool). */
  describe?: () => Record<string, unknown>;
}

export interface Fleet {
  readonly link: RedisLink;
  /** The prefix of its keys and channels. */
  readonly prefix: string;
  readonly stateStore: RedisStateStore;
  readonly directory: RedisCallDirectory;
  /** MCP (2025-era) sessions any host can serve. */
  readonly sessions: RedisSessionDirectory;
  /** Their streams' events, for `Last-Event-ID` replay on any host. */
  readonly events: RedisEventLog;
  /** Stop renewing, drop this host's record, close the connections. */
  close(): Promise<void>;
}

/** A link to the fleet's store (not started: call `start()`). */
export function openRedisLink(target: FleetStoreTarget & { commandTimeoutMs?: number }, logger: Logger): RedisLink {
  const timeout = target.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: target.commandTimeoutMs };
  if (target.redisCluster !== undefined) {
    if (target.redis !== undefined) throw new TypeError('options.redis and options.redisCluster are mutually exclusive');
    return new ClusterRedisLink({ nodes: target.redisCluster.nodes, ...timeout }, logger);
  }
  return new SingleRedisLink({ url: target.redis, ...timeout }, logger);
}

/** Connect (in the background: a host whose Redis is down still starts) and start renewing leases. */
export function openFleet(options: FleetOptions, logger: Logger): Fleet {
  const prefix = options.keyPrefix ?? 'toolhost:';
  if (options.redisCluster !== undefined && /[{}]/.test(prefix)) {
    throw new TypeError('options.keyPrefix must not hold { or } on a Redis Cluster (the fleet\'s own hash tags follow it)');
  }
  const link = openRedisLink(options, logger);
  const stateStore = new RedisStateStore(link, { prefix, ...options.state });
  const directory = new RedisCallDirectory(link, logger, {
    prefix,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.describe === undefined ? {} : { describe: options.describe }),
  });
  const sessions = new RedisSessionDirectory(link, logger, { prefix, ...options.sessions });
  const events = new RedisEventLog(link, { prefix, ...(options.sessions?.ttlMs === undefined ? {} : { ttlMs: options.sessions.ttlMs }), ...options.events });
  directory.start();
  link.start();
  return {
    link,
    prefix,
    stateStore,
    directory,
    sessions,
    events,
    async close() {
      await directory.close();
      await link.close();
    },
  };
}
