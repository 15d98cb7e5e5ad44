/**
 * A validated config file turned into what the host uses: camelCase values,
 * defaults filled in, labels upper-cased, paths absolute (relative paths are
 * resolved against the config file's directory).
 *
 * Resolution has no side effects: nothing is opened or started. The audit log
 * file, the logger and the approval hook are made by the composition root
 * (`host/compose/`), when the registry is.
 */
import { isAbsolute, resolve } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import type { WasmLoadOptions } from '../core/registry.js';
import { DEFAULT_RETRY_OPTIONS, type RetryOptions } from '../core/retry.js';
import { DEFAULT_POLICY_DEFAULTS, type ExecutionPolicyInput, type PolicyDefaults } from '../policy/execution-policy.js';
import type { ToolGrant } from '../policy/grant.js';
import { NETWORK_LABELS, PRIVILEGE_LABELS, parseLabel } from '../policy/labels.js';
import { DEFAULT_CANCEL_GRACE_MS } from '../core/call/call.js';
import type { SandboxOptions } from '../sandbox/loader.js';
import type { StateLimits } from '../core/state.js';
import type { SchemaLimits } from '../core/schema-limits.js';
import type { ClusterSection, ConfigFile, GrantEntry, HostSection, OAuthSection, PolicyEntry } from './types.js';
import { resolveDistribution, resolveVerify } from './resolve-distribution.js';
import { resolveTelemetry } from './resolve-telemetry.js';
import { isRemoteSource } from '../distribution/source.js';
import { connectionFairness, DEFAULT_CONNECTION_FAIRNESS } from './connection-fairness.js';
import type { McpServerSpecBase, ConfigOrigin, ToolLoad, HttpToolSpec, McpHttpServerSpec, McpServerSpec, ServerSettings, ResolvedConfig, ClusterSettings } from './resolved-types.js';

export type { ConfigOrigin, ToolLoad, HttpToolSpec, McpStdioServerSpec, McpHttpServerSpec, McpServerSpec, ServerSettings, ResolvedConfig, ClusterSettings, ResolvedTelemetry } from './resolved-types.js';

/** MCP over Streamable HTTP, unless the config says otherwise. */
export const DEFAULT_MCP_HTTP = {
  enabled: true,
  host: '127.0.0.1',
  port: 3000,
  maxSessions: 1000,
  maxSessionsPerClient: 256,
  sessionIdleMs: 600_000,
  maxBodyBytes: 4 * 1024 * 1024,
  maxConnectionsPerClient: 256,
  ...DEFAULT_CONNECTION_FAIRNESS,
  headersTimeoutMs: 10_000,
  maxSubscriptions: 1024,
  maxParkedCalls: 16,
  resumeEvents: 1000,
  resumeBytes: 262_144,
  resumeRetryMs: 1000,
} as const;
/** The gRPC ToolService, unless the config says otherwise (the port in sw4rm's docs). */
export const DEFAULT_GRPC = {
  enabled: true,
  host: '127.0.0.1',
  port: 50063,
  maxReceiveMessageBytes: 4 * 1024 * 1024,
  maxSendMessageBytes: 4 * 1024 * 1024,
  health: true,
  reflection: true,
  maxConnectionsPerClient: 256,
  ...DEFAULT_CONNECTION_FAIRNESS,
  idleTimeoutMs: 300_000,
} as const;
/** The host's log level when neither `TOOLHOST_LOG` nor the config sets one. */
export const DEFAULT_LOG_LEVEL = 'warn';

/** The `cluster` section as the fleet takes it. */
export function resolveCluster(cluster: ClusterSection): ClusterSettings {
  // The schema allows exactly one of the two.
  const settings: ClusterSettings = cluster.redis_cluster !== undefined ? { redisCluster: { nodes: [...cluster.redis_cluster.nodes] } } : { redis: cluster.redis ?? '' };
  if (cluster.key_prefix !== undefined) settings.keyPrefix = cluster.key_prefix;
  if (cluster.lease_ms !== undefined) settings.leaseMs = cluster.lease_ms;
  if (cluster.command_timeout_ms !== undefined) settings.commandTimeoutMs = cluster.command_timeout_ms;
  if (cluster.state !== undefined) {
    const { ttl_seconds: ttlSeconds, max_value_bytes: maxValueBytes, max_keys: maxKeys, max_bytes_per_conversation: maxBytesPerConversation, max_total_bytes: maxTotalBytes, max_bytes_per_principal: maxBytesPerPrincipal, wait_replicas: waitReplicas } = cluster.state;
    settings.state = {
      ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
      ...(maxValueBytes === undefined ? {} : { maxValueBytes }),
      ...(maxKeys === undefined ? {} : { maxKeys }),
      ...(maxBytesPerConversation === undefined ? {} : { maxBytesPerConversation }),
      ...(maxTotalBytes === undefined ? {} : { maxTotalBytes }),
      ...(maxBytesPerPrincipal === undefined ? {} : { maxBytesPerPrincipal }),
      ...(waitReplicas === undefined ? {} : { waitReplicas }),
    };
  }
  if (cluster.limits !== undefined) {
    settings.limits = {
      ...(cluster.limits.per_tool === undefined ? {} : { perTool: { ...cluster.limits.per_tool } }),
      ...(cluster.limits.per_tenant === undefined ? {} : { perTenant: { ...cluster.limits.per_tenant } }),
    };
  }
  if (cluster.sessions !== undefined) {
    settings.sessions = {
      ...(cluster.sessions.max_sessions === undefined ? {} : { maxSessions: cluster.sessions.max_sessions }),
      ...(cluster.sessions.max_per_principal === undefined ? {} : { maxPerPrincipal: cluster.sessions.max_per_principal }),
    };
  }
  return settings;
}

/** What {@link resolveConfig} needs besides the file's data. */
export interface ResolveContext {
  /** The directory relative paths are resolved against. */
  baseDir: string;
  /** The config file (absolute), if there is one. */
  file?: string;
  /** Where `TOOLHOST_LOG` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The position of a config entry, for `origin` fields. */
  originOf?: (path: ReadonlyArray<string | number>) => ConfigOrigin;
}

/**
 * Host defaults and ceilings from `host.defaults` and `host.ceilings`, merged
 * over DEFAULT_POLICY_DEFAULTS. Labels must already be valid.
 */
export function resolvePolicyDefaults(host: HostSection = {}): PolicyDefaults {
  const defaults: PolicyDefaults = { ...DEFAULT_POLICY_DEFAULTS };
  const d = host.defaults ?? {};
  const c = host.ceilings ?? {};
  if (d.wall_ms !== undefined) defaults.wallMs = d.wall_ms;
  if (d.cpu_ms !== undefined) defaults.cpuMs = d.cpu_ms;
  if (d.memory_mb !== undefined) defaults.memoryMb = d.memory_mb;
  if (d.network_policy !== undefined) defaults.networkPolicy = label(NETWORK_LABELS, d.network_policy);
  if (d.privilege_level !== undefined) defaults.privilegeLevel = label(PRIVILEGE_LABELS, d.privilege_level);
  if (c.wall_ms !== undefined) defaults.maxWallMs = c.wall_ms;
  if (c.cpu_ms !== undefined) defaults.maxCpuMs = c.cpu_ms;
  if (c.memory_mb !== undefined) defaults.maxMemoryMb = c.memory_mb;
  if (c.max_retries !== undefined) defaults.maxRetries = c.max_retries;
  return defaults;
}

/** Retry backoff from `host.retry`, over DEFAULT_RETRY_OPTIONS. */
export function resolveRetry(host: HostSection = {}): RetryOptions {
  return {
    baseMs: host.retry?.base_ms ?? DEFAULT_RETRY_OPTIONS.baseMs,
    capMs: host.retry?.cap_ms ?? DEFAULT_RETRY_OPTIONS.capMs,
  };
}

/**
 * A grant in the host's terms: labels upper-cased, the worktree absolute.
 *
 * @param baseDir what a relative worktree is resolved against
 */
export function resolveGrant(entry: GrantEntry = {}, baseDir: string): ToolGrant {
  const grant: ToolGrant = {};
  if (entry.network !== undefined) grant.network = label(NETWORK_LABELS, entry.network);
  if (entry.egress_allow !== undefined) grant.egressAllow = [...entry.egress_allow];
  if (entry.propagate_trace !== undefined) grant.propagateTrace = entry.propagate_trace;
  if (entry.privilege !== undefined) grant.privilege = label(PRIVILEGE_LABELS, entry.privilege);
  if (entry.env_allow !== undefined) grant.envAllow = [...entry.env_allow];
  if (entry.env !== undefined) grant.env = { ...entry.env };
  if (entry.memory_mb !== undefined) grant.memoryMb = entry.memory_mb;
  if (entry.worktree !== undefined) grant.worktree = resolve(baseDir, entry.worktree);
  if (entry.sampling !== undefined) {
    const { max_requests: maxRequests, max_tokens: maxTokens } = entry.sampling;
    grant.sampling = { ...(maxRequests === undefined ? {} : { maxRequests }), ...(maxTokens === undefined ? {} : { maxTokens }) };
  }
  if (entry.elicitation !== undefined) grant.elicitation = entry.elicitation.max_requests === undefined ? {} : { maxRequests: entry.elicitation.max_requests };
  if (entry.roots !== undefined) grant.roots = entry.roots.max_requests === undefined ? {} : { maxRequests: entry.roots.max_requests };
  if (entry.state !== undefined) grant.state = { ...entry.state };
  return grant;
}

/**
 * Turn a validated config file into the host's values. The file must have
 * passed the schema and the semantic checks (`loadConfig` does both).
 */
export function resolveConfig(config: ConfigFile, context: ResolveContext): ResolvedConfig {
  const { baseDir } = context;
  const env = context.env ?? process.env;
  const host = config.host ?? {};
  const originOf = (path: ReadonlyArray<string | number>): { origin?: ConfigOrigin } =>
    context.originOf ? { origin: context.originOf(path) } : {};

  const sandbox: SandboxOptions = {};
  const pool = host.pool ?? {};
  if (pool.threads !== undefined) sandbox.threads = pool.threads;
  if (pool.max_queue !== undefined) sandbox.maxQueue = pool.max_queue;
  if (pool.max_queue_per_principal !== undefined) sandbox.maxQueuePerPrincipal = pool.max_queue_per_principal;
  if (pool.max_heap_mb !== undefined) sandbox.maxHeapMb = pool.max_heap_mb;
  if (pool.idle_timeout_ms !== undefined) sandbox.idleTimeoutMs = pool.idle_timeout_ms;
  if (pool.spin_us !== undefined) sandbox.spinMicros = pool.spin_us;
  if (pool.wait_behind !== undefined) {
    sandbox.waitBehind = {};
    if (pool.wait_behind.average_ms !== undefined) sandbox.waitBehind.averageMs = pool.wait_behind.average_ms;
    if (pool.wait_behind.within_ms !== undefined) sandbox.waitBehind.withinMs = pool.wait_behind.within_ms;
  }
  if (pool.cache_dir !== undefined) sandbox.cacheDir = resolve(baseDir, pool.cache_dir);
  if (pool.containment !== undefined) sandbox.containment = pool.containment;
  if (pool.heartbeat_ms !== undefined) sandbox.heartbeatMs = pool.heartbeat_ms;
  if (pool.kept_instances_mb !== undefined) sandbox.keptInstanceMb = pool.kept_instances_mb;
  if (pool.memory_budget_mb !== undefined) sandbox.memoryBudgetMb = pool.memory_budget_mb;
  if (pool.idle_release_ms !== undefined) sandbox.idleReleaseMs = pool.idle_release_ms;
  if (pool.client_waits !== undefined) sandbox.clientWaits = pool.client_waits;
  if (pool.client_waits_per_principal !== undefined) sandbox.clientWaitsPerPrincipal = pool.client_waits_per_principal;
  const limits = host.output_limits;
  if (limits) {
    const outputLimits: NonNullable<SandboxOptions['outputLimits']> = {};
    if (limits.stdio_bytes !== undefined) outputLimits.stdioBytes = limits.stdio_bytes;
    if (limits.max_events !== undefined) outputLimits.maxEvents = limits.max_events;
    if (limits.max_event_bytes !== undefined) outputLimits.maxEventBytes = limits.max_event_bytes;
    if (limits.max_result_bytes !== undefined) outputLimits.maxResultBytes = limits.max_result_bytes;
    sandbox.outputLimits = outputLimits;
  }
  const guest = host.guest_limits ?? {};
  if (guest.host_calls_per_call !== undefined) sandbox.outputLimits = { ...sandbox.outputLimits, maxHostCalls: guest.host_calls_per_call };
  if (guest.handles_per_call !== undefined) sandbox.outputLimits = { ...sandbox.outputLimits, maxHandles: guest.handles_per_call };
  if (guest.table_elements !== undefined) sandbox.tableElements = guest.table_elements;
  if (guest.describe_ms !== undefined) sandbox.describeTimeoutMs = guest.describe_ms;
  if (guest.spare_ms !== undefined) sandbox.spareTimeoutMs = guest.spare_ms;
  const schemaLimits = schemaLimitsOf(host.guest_limits);
  const stateLimits: Partial<StateLimits> = {};
  if (guest.state_value_bytes !== undefined) stateLimits.maxValueBytes = guest.state_value_bytes;
  if (guest.state_keys_per_conversation !== undefined) stateLimits.maxKeysPerConversation = guest.state_keys_per_conversation;
  if (guest.state_bytes_per_conversation !== undefined) stateLimits.maxBytesPerConversation = guest.state_bytes_per_conversation;
  if (guest.state_conversations !== undefined) stateLimits.maxConversations = guest.state_conversations;
  if (guest.state_total_bytes !== undefined) stateLimits.maxTotalBytes = guest.state_total_bytes;

  const tools = (config.tools ?? []).map((entry, i): ToolLoad => {
    const options: WasmLoadOptions = { grant: resolveGrant(entry.grant, baseDir) };
    if (entry.isolation !== undefined) options.isolation = entry.isolation;
    if (entry.default_policy !== undefined) options.defaultPolicy = policyInput(entry.default_policy);
    if (entry.verify !== undefined) options.verify = resolveVerify(entry.verify, baseDir);
    return { path: isRemoteSource(entry.path) ? entry.path : resolve(baseDir, entry.path), options, ...originOf(['tools', i]) };
  });

  const httpTools = (config.http_tools ?? []).map((entry, i): HttpToolSpec => {
    const spec: HttpToolSpec = {
      name: entry.name,
      description: entry.description,
      url: entry.url,
      headers: { ...entry.headers },
      inputSchema: structuredClone(entry.input_schema),
      grant: resolveGrant(entry.grant, baseDir),
      ...originOf(['http_tools', i]),
    };
    if (entry.method !== undefined) spec.method = entry.method;
    if (entry.timeout_ms !== undefined) spec.timeoutMs = entry.timeout_ms;
    if (entry.propagate_trace === true) spec.propagateTrace = true;
    if (entry.default_policy !== undefined) spec.defaultPolicy = policyInput(entry.default_policy);
    return spec;
  });

  const mcpServers = (config.mcp_servers ?? []).map((entry, i): McpServerSpec => {
    const base: McpServerSpecBase = { name: entry.name, grant: resolveGrant(entry.grant, baseDir), ...originOf(['mcp_servers', i]) };
    if (entry.timeout_ms !== undefined) base.timeoutMs = entry.timeout_ms;
    if (entry.protocol !== undefined) base.protocol = entry.protocol;
    if (entry.default_policy !== undefined) base.defaultPolicy = policyInput(entry.default_policy);
    if (entry.url !== undefined) {
      const spec: McpHttpServerSpec = { ...base, transport: 'http', url: entry.url, headers: { ...entry.headers } };
      if (entry.bearer_token_env !== undefined) spec.bearerTokenEnv = entry.bearer_token_env;
      return spec;
    }
    return {
      ...base,
      transport: 'stdio',
      command: resolveCommand(entry.command, baseDir),
      args: [...(entry.args ?? [])],
      env: { ...entry.env },
      cwd: resolve(baseDir, entry.cwd ?? '.'),
    };
  });

  const mcpHttp = config.servers?.mcp?.http ?? {};
  const grpc = config.servers?.grpc ?? {};
  const servers: ServerSettings = {
    tokens: (config.servers?.auth?.tokens ?? []).map((entry) => ({ principal: entry.principal, tokenEnv: entry.token_env })),
    ...(config.servers?.auth?.oauth === undefined ? {} : { oauth: resolveOAuth(config.servers.auth.oauth) }),
    ...(config.servers?.metrics?.max_label_values === undefined ? {} : { metricsMaxLabelValues: config.servers.metrics.max_label_values }),
    mcp: {
      ...(config.servers?.mcp?.progress_flush_ms === undefined ? {} : { progressFlushMs: config.servers.mcp.progress_flush_ms }),
      http: {
        enabled: mcpHttp.enabled ?? DEFAULT_MCP_HTTP.enabled,
        host: mcpHttp.host ?? DEFAULT_MCP_HTTP.host,
        port: mcpHttp.port ?? DEFAULT_MCP_HTTP.port,
        ...(mcpHttp.allowed_hosts === undefined ? {} : { allowedHosts: [...mcpHttp.allowed_hosts] }),
        ...(mcpHttp.bearer_token_env === undefined ? {} : { bearerTokenEnv: mcpHttp.bearer_token_env }),
        ...(mcpHttp.allowed_origins === undefined ? {} : { allowedOrigins: [...mcpHttp.allowed_origins] }),
        maxSessions: mcpHttp.max_sessions ?? DEFAULT_MCP_HTTP.maxSessions,
        maxSessionsPerClient: mcpHttp.max_sessions_per_client ?? DEFAULT_MCP_HTTP.maxSessionsPerClient,
        sessionIdleMs: mcpHttp.session_idle_ms ?? DEFAULT_MCP_HTTP.sessionIdleMs,
        maxBodyBytes: mcpHttp.max_body_bytes ?? DEFAULT_MCP_HTTP.maxBodyBytes,
        ...(mcpHttp.max_connections === undefined ? {} : { maxConnections: mcpHttp.max_connections }),
        maxConnectionsPerClient: mcpHttp.max_connections_per_client ?? DEFAULT_MCP_HTTP.maxConnectionsPerClient,
        ...connectionFairness(mcpHttp),
        headersTimeoutMs: mcpHttp.headers_timeout_ms ?? DEFAULT_MCP_HTTP.headersTimeoutMs,
        maxSubscriptions: mcpHttp.max_subscriptions ?? DEFAULT_MCP_HTTP.maxSubscriptions,
        maxParkedCalls: mcpHttp.max_parked_calls ?? DEFAULT_MCP_HTTP.maxParkedCalls,
        resumeEvents: mcpHttp.resume_events ?? DEFAULT_MCP_HTTP.resumeEvents,
        resumeBytes: mcpHttp.resume_bytes ?? DEFAULT_MCP_HTTP.resumeBytes,
        resumeRetryMs: mcpHttp.resume_retry_ms ?? DEFAULT_MCP_HTTP.resumeRetryMs,
      },
    },
    grpc: {
      enabled: grpc.enabled ?? DEFAULT_GRPC.enabled,
      host: grpc.host ?? DEFAULT_GRPC.host,
      port: grpc.port ?? DEFAULT_GRPC.port,
      maxReceiveMessageBytes: grpc.max_receive_message_bytes ?? DEFAULT_GRPC.maxReceiveMessageBytes,
      maxSendMessageBytes: grpc.max_send_message_bytes ?? DEFAULT_GRPC.maxSendMessageBytes,
      ...((grpc.bearer_token_env ?? mcpHttp.bearer_token_env) === undefined ? {} : { bearerTokenEnv: (grpc.bearer_token_env ?? mcpHttp.bearer_token_env)! }),
      health: grpc.health ?? DEFAULT_GRPC.health,
      reflection: grpc.reflection ?? DEFAULT_GRPC.reflection,
      ...(grpc.max_connections === undefined ? {} : { maxConnections: grpc.max_connections }),
      maxConnectionsPerClient: grpc.max_connections_per_client ?? DEFAULT_GRPC.maxConnectionsPerClient,
      ...connectionFairness(grpc),
      idleTimeoutMs: grpc.idle_timeout_ms ?? DEFAULT_GRPC.idleTimeoutMs,
    },
  };

  const resolved: ResolvedConfig = {
    baseDir,
    logLevel: env.TOOLHOST_LOG || host.log_level || DEFAULT_LOG_LEVEL,
    defaults: resolvePolicyDefaults(host),
    cancelGraceMs: host.cancel_grace_ms ?? DEFAULT_CANCEL_GRACE_MS,
    callIds: {
      ...(host.call_ids?.max_length === undefined ? {} : { maxLength: host.call_ids.max_length }),
      ...(host.call_ids?.remembered_bytes === undefined ? {} : { rememberedBytes: host.call_ids.remembered_bytes }),
    },
    retry: resolveRetry(host),
    sandbox,
    ...(host.output_limits?.max_result_depth === undefined ? {} : { maxResultDepth: host.output_limits.max_result_depth }),
    ...(host.guest_limits?.client_request_bytes === undefined ? {} : { clientRequestBytes: host.guest_limits.client_request_bytes }),
    ...(host.guest_limits?.surface_items === undefined ? {} : { surfaceItems: host.guest_limits.surface_items }),
    ...(host.guest_limits?.surface_listing_wait_ms === undefined ? {} : { surfaceListingWaitMs: host.guest_limits.surface_listing_wait_ms }),
    stateLimits,
    schemaLimits,
    approval: host.approval ?? 'never',
    auditLog: host.audit_log === undefined || host.audit_log === 'stderr' ? 'stderr' : { file: resolve(baseDir, host.audit_log) },
    tools,
    httpTools,
    mcpServers,
    servers,
    adminTools: config.admin_tools ?? false,
    adminLoadDirs: (config.admin?.load_dirs ?? []).map((dir) => resolve(baseDir, dir)),
    distribution: resolveDistribution(config.distribution ?? {}, baseDir),
  };
  if (config.cluster !== undefined) resolved.cluster = resolveCluster(config.cluster);
  if (config.telemetry !== undefined) resolved.telemetry = resolveTelemetry(config.telemetry);
  if (context.file !== undefined) resolved.file = context.file;
  return resolved;
}

/** A command with a `/` is a path (relative to the config file's directory); a bare name is looked up on PATH. */
function resolveCommand(command: string, baseDir: string): string {
  return command.includes('/') && !isAbsolute(command) ? resolve(baseDir, command) : command;
}

/** A default policy as the registry takes it (an ExecutionPolicyInput; a copy). */
function policyInput(entry: PolicyEntry): ExecutionPolicyInput {
  return structuredClone(entry);
}

function label<L extends string>(vocabulary: readonly L[], value: string): L {
  const parsed = parseLabel(vocabulary, value);
  if (parsed === undefined) throw new ToolhostError('INTERNAL', `unchecked label "${value}" reached config resolution`);
  return parsed;
}

/** `host.guest_limits`' schema limits (only what the file sets; the registry defaults the rest). */
export function schemaLimitsOf(guest: NonNullable<HostSection['guest_limits']> = {}): Partial<SchemaLimits> {
  const limits: Partial<SchemaLimits> = {};
  if (guest.schema_nodes !== undefined) limits.nodes = guest.schema_nodes;
  if (guest.schema_depth !== undefined) limits.depth = guest.schema_depth;
  if (guest.schema_fanout !== undefined) limits.fanout = guest.schema_fanout;
  if (guest.schema_enum_values !== undefined) limits.enumValues = guest.schema_enum_values;
  if (guest.schema_pattern_chars !== undefined) limits.patternChars = guest.schema_pattern_chars;
  if (guest.schema_pattern_program !== undefined) limits.patternProgram = guest.schema_pattern_program;
  if (guest.args_depth !== undefined) limits.argsDepth = guest.args_depth;
  if (guest.validation_steps !== undefined) limits.validationSteps = guest.validation_steps;
  if (guest.schema_lane_ms !== undefined) limits.laneMs = guest.schema_lane_ms;
  return limits;
}

/** `servers.auth.oauth` in the servers' terms (they check it again, with the loopback rule, when they start). */
function resolveOAuth(section: OAuthSection): NonNullable<ServerSettings['oauth']> {
  return {
    issuer: section.issuer,
    audience: section.audience,
    ...(section.jwks_uri === undefined ? {} : { jwksUri: section.jwks_uri }),
    ...(section.principal_claim === undefined ? {} : { principalClaim: section.principal_claim }),
    ...(section.tenant_claim === undefined ? {} : { tenantClaim: section.tenant_claim }),
    ...(section.scope_labels === undefined ? {} : { scopeLabels: Object.fromEntries(Object.entries(section.scope_labels).map(([scope, labels]) => [scope, { ...labels }])) }),
    ...(section.resource_name === undefined ? {} : { resourceName: section.resource_name }),
    ...(section.metrics_scope === undefined ? {} : { metricsScope: section.metrics_scope }),
    ...(section.admin_scope === undefined ? {} : { adminScope: section.admin_scope }),
    ...(section.max_jwks_bytes === undefined ? {} : { maxJwksBytes: section.max_jwks_bytes }),
    ...(section.accept_plain_jwt === undefined ? {} : { acceptPlainJwt: section.accept_plain_jwt }),
    ...(section.introspection === undefined ? {} : {
      introspection: {
        endpoint: section.introspection.endpoint,
        clientId: section.introspection.client_id,
        clientSecretEnv: section.introspection.client_secret_env,
        // Its numbers (cache_ms, negative_cache_ms, max_in_flight, max_waiting, address_*, max_addresses), camel-cased.
        ...Object.fromEntries(Object.entries(section.introspection).filter(([, value]) => typeof value === 'number')
          .map(([key, value]) => [key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()), value])),
      },
    }),
  };
}
