/**
 * Prometheus metrics for a serving host (prom-client): calls by tool and
 * outcome, call latency, budget kills, limit hits (`registry.onLimitHit`),
 * pool utilization and queue depth, token introspection.
 * Served at `/metrics` by the HTTP server.
 *
 * Guarantees (labels a client influences, metric-labels.ts): `tool` is a
 * registered tool's name (a model-facing alias counted under the tool's own
 * name), or a component's surface tool, and a name no tool has (a call
 * refused TOOL_NOT_FOUND) is counted under `(unknown)`; `tool`, `limit` and
 * `reason` values are cut to 128 characters and at most `maxLabelValues`
 * (config `servers.metrics.max_label_values`, default 1000) distinct ones each, further ones under `(other)` (counted in
 * `toolhost_metric_label_values_folded_total`). The other labels take values
 * from fixed sets the host defines (`outcome` and `code` are error codes of
 * host/base/errors.ts, `stage`, `server`, `direction`, `kind`); no label
 * carries a principal, a call id or a session id.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ErrorCode } from '../base/errors.js';
import type { TerminalEvent } from '../core/events.js';
import type { SandboxStats, ToolRegistry } from '../core/registry.js';
import { SURFACE_TOOL_PREFIX } from '../core/surfaces.js';
import type { IntrospectionStats } from './auth/introspection.js';
import { DEFAULT_MAX_LABEL_VALUES, LabelValues, UNKNOWN_TOOL } from './metric-labels.js';

/** Codes that mean the host stopped a call at one of its limits. */
const BUDGET_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'TOOL_TIMEOUT',
  'WALL_TIMEOUT',
  'CPU_BUDGET_EXCEEDED',
  'MEMORY_LIMIT_EXCEEDED',
  'OUTPUT_LIMIT_EXCEEDED',
]);

/**
 * What the servers count at their limits: requests refused before any call
 * (by server and reason: host, origin, unauthenticated, sessions_full,
 * client_sessions_full, call_id...) and sessions the server ended (by reason).
 */
export interface ServerLimitMetrics {
  refused(server: 'mcp' | 'grpc', reason: string): void;
  /** A connection the server's gate closed after accepting it: first_byte_timeout, reaped_silent, reaped_idle (connection-gate.ts). */
  connectionClosed?(server: 'mcp' | 'grpc', reason: 'first_byte_timeout' | 'reaped_silent' | 'reaped_idle'): void;
  sessionEnded(server: 'mcp', reason: string): void;
  /** Report the open sessions of a server (read when metrics are scraped). */
  trackSessions(server: 'mcp', count: () => number): void;
  /** A fleet's shared session (opened on another host) rebuilt on this one from the directory: `restored`, or `failed`. */
  sessionRestored(server: 'mcp', outcome: 'restored' | 'failed'): void;
  /** A shared session's message relayed between hosts: `sent` to the fleet, or `delivered` here to the session's server. */
  relayed(server: 'mcp', direction: 'sent' | 'delivered', kind: 'response' | 'cancel'): void;
  /** Report the 2026-07-28 calls parked for their client's answers (read when metrics are scraped). */
  trackParkedCalls?(server: 'mcp', count: () => number): void;
  /** Events a 2025 session's replay buffer dropped (past `resume_events` / `resume_bytes`). */
  resumeEventsDropped?(server: 'mcp', count: number): void;
  /**
   * A 2025 resume (GET with `Last-Event-ID`) answered: `live` (its request still runs here: the stream stays open
   * until the response), `replayed` (what remained of an ended stream, then the stream ended) or `complete` (an ended
   * stream with nothing left to replay: 405). A resume from an event not held is `refused` (`resume_window`).
   */
  resumed?(server: 'mcp', outcome: 'live' | 'replayed' | 'complete'): void;
}

export interface HostMetrics {
  readonly contentType: string;
  /** Counters for the servers' own limits (pass to `startMcpHttpServer` / `startGrpcServer` as `limitMetrics`). */
  readonly limits: ServerLimitMetrics;
  /** The exposition text. */
  metrics(): Promise<string>;
  /** Report token introspection (an OAuth verifier's `introspectionStats`, read when metrics are scraped). */
  trackIntrospection(stats: () => IntrospectionStats | undefined): void;
  /** Stop listening to the registry. */
  close(): void;
}

export interface MetricsOptions {
  /** Distinct values of each client-influenced label (`tool`, `limit`, `reason`; default 1000); further ones count under `(other)`. */
  maxLabelValues?: number;
}

export function createMetrics(registry: ToolRegistry, options: MetricsOptions = {}): HostMetrics {
  const prometheus = new Registry();
  const folded = new Counter({
    name: 'toolhost_metric_label_values_folded_total',
    help: 'Label values counted under "(other)" because their label already had its cap of distinct values (servers.metrics.max_label_values, createMetrics maxLabelValues; default 1000), by label.',
    labelNames: ['label'] as const,
    registers: [prometheus],
  });
  const maxValues = options.maxLabelValues ?? DEFAULT_MAX_LABEL_VALUES;
  const tools = new LabelValues(maxValues, () => folded.inc({ label: 'tool' }));
  const limitNames = new LabelValues(maxValues, () => folded.inc({ label: 'limit' }));
  const reasons = new LabelValues(maxValues, () => folded.inc({ label: 'reason' }));
  /**
   * The `tool` label of a call: a registered tool's own name, else the name a call that passed lookup ran
   * under (a component's surface tool), else `(unknown)`: a refused call's name is the client's.
   */
  const toolLabel = (name: string, event?: TerminalEvent): string => {
    const registered = registry.resolveName(name);
    if (registered !== undefined) return tools.of(registered);
    const lookedUp = event === undefined || event.type === 'result' || event.stage !== 'rejected'
      || (event.code !== 'TOOL_NOT_FOUND' && name.startsWith(SURFACE_TOOL_PREFIX));
    return lookedUp ? tools.of(name) : UNKNOWN_TOOL;
  };
  const calls = new Counter({
    name: 'toolhost_calls_total',
    help: 'Calls by tool and outcome (ok, or the error code).',
    labelNames: ['tool', 'outcome', 'stage'] as const,
    registers: [prometheus],
  });
  const latency = new Histogram({
    name: 'toolhost_call_duration_seconds',
    help: 'Wall time of calls, from acceptance to the terminal event.',
    labelNames: ['tool'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [prometheus],
  });
  const budgetKills = new Counter({
    name: 'toolhost_budget_kills_total',
    help: 'Calls the host ended at a limit, by tool and code.',
    labelNames: ['tool', 'code'] as const,
    registers: [prometheus],
  });
  const limitHits = new Counter({
    name: 'toolhost_limit_hits_total',
    help: 'Times a call hit one of the host\'s limits on what a guest makes it hold (a state write refused, a conversation evicted, too many host calls or handles), by tool and limit (its config key).',
    labelNames: ['tool', 'limit'] as const,
    registers: [prometheus],
  });
  const evictions = new Counter({
    name: 'toolhost_instance_evictions_total',
    help: 'Components whose instances (spares, snapshots, worker-isolation instances) a worker dropped for host.pool.memory_budget_mb or idle_release_ms, reported with the next call it answered (by that call\'s tool).',
    labelNames: ['tool'] as const,
    registers: [prometheus],
  });
  const reinstantiations = new Counter({
    name: 'toolhost_instance_reinstantiations_total',
    help: 'Calls whose instance was made anew because their worker had dropped the component\'s instances (evicted), by tool.',
    labelNames: ['tool'] as const,
    registers: [prometheus],
  });
  new Gauge({
    name: 'toolhost_pool_utilization_ratio',
    help: 'Share of sandbox worker time spent running tasks since the pool started.',
    registers: [prometheus],
    collect() {
      this.set(registry.sandboxStats()?.utilization ?? 0);
    },
  });
  new Gauge({
    name: 'toolhost_pool_queue_depth',
    help: 'Sandbox tasks waiting for a worker.',
    registers: [prometheus],
    collect() {
      this.set(registry.sandboxStats()?.queueSize ?? 0);
    },
  });
  new Gauge({
    name: 'toolhost_pool_client_waits',
    help: 'Sandbox workers held by calls whose guest waits for its client\'s answer (sampling, elicitation; a parked 2026-07-28 call), at most host.pool.client_waits; a request past it, or past client_waits_per_principal, is refused (a limit hit of that name).',
    registers: [prometheus],
    collect() {
      this.set(registry.sandboxStats()?.clientWaits?.waiting ?? 0);
    },
  });
  new Counter({
    name: 'toolhost_sandbox_process_restarts_total',
    help: 'Times the sandbox process (process containment) died and was started again.',
    registers: [prometheus],
    collect() {
      // The count lives in the supervisor; a scrape reports it as it is.
      this.reset();
      this.inc(registry.sandboxStats()?.process?.restarts ?? 0);
    },
  });
  // Counts the sandbox keeps by outcome, reported as they are at each scrape.
  const outcomeCounter = <O extends string>(name: string, help: string, outcomes: readonly O[], read: (stats: SandboxStats | undefined) => Partial<Record<O, number>> | undefined): void => {
    new Counter({
      name,
      help,
      labelNames: ['outcome'] as const,
      registers: [prometheus],
      collect() {
        const counts = read(registry.sandboxStats());
        this.reset();
        for (const outcome of outcomes) this.inc({ outcome }, counts?.[outcome] ?? 0);
      },
    });
  };
  outcomeCounter(
    'toolhost_pool_tasks_handed_back_total',
    'Sandbox tasks a worker held but never claimed: taken back because their caller stopped them (outcome="abandoned"), or posted again because the worker holding them was lost (outcome="reposted"). Thread containment.',
    ['abandoned', 'reposted'],
    (stats) => stats?.handedBack,
  );
  outcomeCounter(
    'toolhost_pool_worker_spins_total',
    'Spins of idle workers for their next call (host.pool.spin_us): outcome="caught" took a call without a wake-up, outcome="missed" ended without one (its CPU spent for nothing). Thread containment.',
    ['caught', 'missed'],
    (stats) => stats?.spins,
  );
  outcomeCounter(
    'toolhost_pool_instances_made_ahead_total',
    'Instances of a hot component (its calls came back to back, each waiting for the last one\'s reset) made ahead on a second worker: outcome="made", or outcome="failed" (that component gets no more). A sandbox process reports its own with its utilization.',
    ['made', 'failed'],
    (stats) => stats?.warms,
  );
  new Gauge({
    name: 'toolhost_sandbox_process_up',
    help: 'Whether the sandbox process (process containment) is running (1) or not (0: between a death and its restart, or thread containment).',
    registers: [prometheus],
    collect() {
      this.set(registry.sandboxStats()?.process?.pid === undefined ? 0 : 1);
    },
  });
  new Gauge({
    name: 'toolhost_calls_in_flight',
    help: 'Calls accepted and not yet finished.',
    registers: [prometheus],
    collect() {
      this.set(registry.inFlight);
    },
  });
  new Gauge({
    name: 'toolhost_tools',
    help: 'Tools registered.',
    registers: [prometheus],
    collect() {
      this.set(registry.names().length);
    },
  });

  // A host in a fleet: whether its Redis answers, and the calls it ran while it did not.
  if (registry.fleetStatus() !== undefined) {
    new Gauge({
      name: 'toolhost_fleet_store_up',
      help: 'Whether the fleet\'s Redis is reachable from this host (1) or not (0).',
      registers: [prometheus],
      collect() {
        this.set(registry.fleetStatus()?.store === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'toolhost_fleet_calls_unregistered',
      help: 'Calls running on this host that the fleet does not know (they started while Redis was unreachable).',
      registers: [prometheus],
      collect() {
        this.set(registry.fleetStatus()?.unregistered ?? 0);
      },
    });
  }
  const refused = new Counter({
    name: 'toolhost_server_refused_total',
    help: 'Requests a server refused at one of its limits or checks, before any call (by server and reason).',
    labelNames: ['server', 'reason'] as const,
    registers: [prometheus],
  });
  const connectionsClosed = new Counter({
    name: 'toolhost_server_connections_closed_total',
    help: 'Connections a server closed after accepting them, to keep slots for clients that speak: by server and reason (first_byte_timeout: nothing sent in time; reaped_silent, reaped_idle: closed to make room when full).',
    labelNames: ['server', 'reason'] as const,
    registers: [prometheus],
  });
  const sessionsEnded = new Counter({
    name: 'toolhost_server_sessions_ended_total',
    help: 'Sessions that ended, by server and reason (closed, idle_expired, evicted_lru, evicted_client_limit).',
    labelNames: ['server', 'reason'] as const,
    registers: [prometheus],
  });
  const sessionsRestored = new Counter({
    name: 'toolhost_server_sessions_restored_total',
    help: 'Shared sessions of a fleet (opened on another host) that this host rebuilt from the session directory to serve a request, by server and outcome (restored, failed).',
    labelNames: ['server', 'outcome'] as const,
    registers: [prometheus],
  });
  const relayed = new Counter({
    name: 'toolhost_server_messages_relayed_total',
    help: 'Messages of shared sessions relayed between the hosts of a fleet, by server, direction (sent: this host got a message another host holds the request of; delivered: a message another host relayed reached a session\'s server here) and kind (response: an answer to a server-to-client request; cancel).',
    labelNames: ['server', 'direction', 'kind'] as const,
    registers: [prometheus],
  });
  const sessionCounts = new Map<string, () => number>();
  new Gauge({
    name: 'toolhost_server_sessions',
    help: 'Sessions open, by server.',
    labelNames: ['server'] as const,
    registers: [prometheus],
    collect() {
      for (const [server, count] of sessionCounts) this.set({ server }, count());
    },
  });
  const parkedCounts = new Map<string, () => number>();
  new Gauge({
    name: 'toolhost_server_parked_calls',
    help: 'MCP 2026-07-28 calls parked, each waiting for its client\'s answer to a sampling or elicitation request (input_required), by server.',
    labelNames: ['server'] as const,
    registers: [prometheus],
    collect() {
      for (const [server, count] of parkedCounts) this.set({ server }, count());
    },
  });
  const resumeDropped = new Counter({
    name: 'toolhost_server_resume_events_dropped_total',
    help: 'Events of MCP 2025-11-25 sessions dropped from their replay buffer (past servers.mcp.http.resume_events or resume_bytes): a client resuming from before them is refused.',
    labelNames: ['server'] as const,
    registers: [prometheus],
  });
  const resumes = new Counter({
    name: 'toolhost_server_resumes_total',
    help: 'MCP 2025-11-25 resumes (GET with Last-Event-ID), by outcome: live (the request still runs: the stream stays open until its response), replayed (what remained of an ended stream, then the stream ended), complete (an ended stream with nothing left: 405).',
    labelNames: ['server', 'outcome'] as const,
    registers: [prometheus],
  });
  const limits: ServerLimitMetrics = {
    refused: (server, reason) => refused.inc({ server, reason: reasons.of(reason) }),
    connectionClosed: (server, reason) => connectionsClosed.inc({ server, reason }),
    sessionEnded: (server, reason) => sessionsEnded.inc({ server, reason: reasons.of(reason) }),
    trackSessions: (server, count) => {
      sessionCounts.set(server, count);
    },
    sessionRestored: (server, outcome) => sessionsRestored.inc({ server, outcome }),
    relayed: (server, direction, kind) => relayed.inc({ server, direction, kind }),
    trackParkedCalls: (server, count) => {
      parkedCounts.set(server, count);
    },
    resumeEventsDropped: (server, count) => resumeDropped.inc({ server }, count),
    resumed: (server, outcome) => resumes.inc({ server, outcome }),
  };

  let introspection: () => IntrospectionStats | undefined = () => undefined;
  const introspectionCounter = (name: string, help: string, label: string, read: (stats: IntrospectionStats) => Record<string, number>): void => {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [prometheus],
      collect() {
        const stats = introspection();
        this.reset();
        if (stats === undefined) return;
        for (const [value, count] of Object.entries(read(stats))) this.inc({ [label]: value }, count);
      },
    });
  };
  introspectionCounter('toolhost_introspection_requests_total', 'Token introspection requests (RFC 7662) sent to the authorization server, by outcome (active, inactive, error).', 'outcome', (stats) => stats.requests);
  introspectionCounter('toolhost_introspection_cache_hits_total', 'Token checks answered from the introspection cache without a request, by the cached answer (active; inactive: servers.auth.oauth.introspection.negative_cache_ms).', 'answer', (stats) => stats.cacheHits);
  introspectionCounter('toolhost_introspection_refused_total', 'Token checks refused before any request: reason="rate_limited" (the client address over servers.auth.oauth.introspection.address_rate: 429), reason="busy" (max_in_flight requests out and max_waiting checks waiting: 503).', 'reason', (stats) => stats.refused);
  new Counter({
    name: 'toolhost_introspection_shared_total',
    help: 'Token checks that joined an introspection request already in flight for the same token (one request per token).',
    registers: [prometheus],
    collect() {
      this.reset();
      this.inc(introspection()?.shared ?? 0);
    },
  });
  new Gauge({
    name: 'toolhost_introspection_in_flight',
    help: 'Introspection requests at the authorization server now (at most servers.auth.oauth.introspection.max_in_flight), by state (in_flight; waiting: checks waiting for a slot).',
    labelNames: ['state'] as const,
    registers: [prometheus],
    collect() {
      const stats = introspection();
      this.set({ state: 'in_flight' }, stats?.inFlight ?? 0);
      this.set({ state: 'waiting' }, stats?.waiting ?? 0);
    },
  });

  const unsubscribeLimits = registry.onLimitHit((name, limit) => limitHits.inc({ tool: toolLabel(name), limit: limitNames.of(limit) }));
  const unsubscribe = registry.onCallFinished((name, event) => {
    const tool = toolLabel(name, event);
    const outcome = event.type === 'result' ? 'ok' : event.code;
    calls.inc({ tool, outcome, stage: event.type === 'result' ? 'run' : event.stage });
    if (event.type === 'result' || event.stage === 'run') latency.observe({ tool }, event.accounting.wallMs / 1000);
    if (event.type === 'error' && BUDGET_CODES.has(event.code)) budgetKills.inc({ tool, code: event.code });
    const { accounting } = event;
    if (accounting.evictions !== undefined) evictions.inc({ tool }, accounting.evictions);
    if (accounting.reinstantiated === true) reinstantiations.inc({ tool });
  });

  return {
    contentType: prometheus.contentType,
    limits,
    metrics: () => prometheus.metrics(),
    trackIntrospection: (stats) => {
      introspection = stats;
    },
    close: () => {
      unsubscribe();
      unsubscribeLimits();
    },
  };
}
