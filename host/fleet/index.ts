/**
 * A fleet of hosts on Redis: the shared conversation state and the fleet-wide
 * call directory, over one pair of Redis connections. The composition root
 * opens one per host when the config has a `cluster` section (or `serve` got
 * `--redis`); without one, the host uses its in-process defaults.
 */
import type { Logger } from '../base/logger.js';
import { RedisCallDirectory, type FleetLimits } from './redis-call-directory.js';
import { RedisEventLog, type EventLogLimits } from './redis-event-log.js';
import { RedisLink } from './redis-link.js';
import { RedisSessionDirectory, type SessionDirectoryLimits } from './redis-session-directory.js';
import { RedisStateStore } from './redis-state-store.js';

export { RedisCallDirectory, type FleetLimits } from './redis-call-directory.js';
export { parseHostRecord, readFleet, type FleetHostCall, type FleetHostRecord, type SkippedRecord } from './host-record.js';
export { RedisLink } from './redis-link.js';
export { RedisEventLog, type EventLogLimits } from './redis-event-log.js';
export { RedisStateStore } from './redis-state-store.js';
export { DEFAULT_SESSION_DIRECTORY_LIMITS, RedisSessionDirectory, type SessionDirectoryLimits } from './redis-session-directory.js';

export interface FleetOptions {
  /** `redis://host:port[/db]`. */
  redis: string;
  /** Prefix of every key and channel (default `toolhost:`): fleets sharing one Redis use different prefixes. */
  keyPrefix?: string;
  /** How long a call stays registered without its host renewing it (ms, default 15000). */
  leaseMs?: number;
  /** How long one Redis command may take (ms, default 1000). */
  commandTimeoutMs?: number;
  state?: { ttlSeconds?: number; maxValueBytes?: number; maxKeys?: number; maxBytesPerConversation?: number; maxTotalBytes?: number; maxBytesPerPrincipal?: number };
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

/** Connect (in the background: a host whose Redis is down still starts) and start renewing leases. */
export function openFleet(options: FleetOptions, logger: Logger): Fleet {
  const prefix = options.keyPrefix ?? 'toolhost:';
  const link = new RedisLink({ url: options.redis, ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }) }, logger);
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
