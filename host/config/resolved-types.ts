/** The configuration in the host's terms: what `resolveConfig` returns, section by section. */
import type { ExecutionPolicyInput, PolicyDefaults } from '../policy/execution-policy.js';
import type { JsonSchema } from '../core/tool.js';
import type { RetryOptions } from '../core/retry.js';
import type { SandboxOptions } from '../sandbox/loader.js';
import type { StateLimits } from '../core/state.js';
import type { SchemaLimits } from '../core/schema-limits.js';
import type { ToolGrant } from '../policy/grant.js';
import type { DistributionOptions } from '../distribution/options.js';
import type { WasmLoadOptions } from '../core/registry.js';

/** Where a value came from in the config file (for messages about it later, e.g. a failed load). */
export interface ConfigOrigin {
  file: string;
  line: number;
  column: number;
}

/** One `registerWasmTools` call: a component file or directory, with its options. */
export interface ToolLoad {
  /** Absolute path. */
  path: string;
  options: WasmLoadOptions;
  /** The config entry it came from (absent for the embedded defaults). */
  origin?: ConfigOrigin;
}

/** A native HTTP streaming tool (implemented elsewhere; passed through as configured). */
export interface HttpToolSpec {
  name: string;
  description: string;
  url: string;
  /** Absent: the tool's own default. */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers: Record<string, string>;
  timeoutMs?: number;
  /** Send the call's trace context with each request (`propagate_trace`). */
  propagateTrace?: boolean;
  inputSchema: JsonSchema;
  grant: ToolGrant;
  defaultPolicy?: ExecutionPolicyInput;
  origin?: ConfigOrigin;
}

export interface McpServerSpecBase {
  /** The namespace of its tools (`<name>.<tool>`). */
  name: string;
  timeoutMs?: number;
  /** The protocol version: negotiated (`auto`, the default) or one era pinned. */
  protocol?: 'auto' | '2025-11-25' | '2026-07-28';
  /** The grant of every tool imported from it. */
  grant: ToolGrant;
  defaultPolicy?: ExecutionPolicyInput;
  origin?: ConfigOrigin;
}

/** An MCP server started as a child process, spoken to over stdio. */
export interface McpStdioServerSpec extends McpServerSpecBase {
  transport: 'stdio';
  /** A program name looked up on PATH, or an absolute path (a relative path with a `/` was resolved). */
  command: string;
  args: string[];
  /** Added to the child's environment. */
  env: Record<string, string>;
  /** Absolute; the config file's directory unless set. */
  cwd: string;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServerSpec extends McpServerSpecBase {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
  /** The environment variable holding a bearer token to send (read when connecting). */
  bearerTokenEnv?: string;
}

export type McpServerSpec = McpStdioServerSpec | McpHttpServerSpec;

/** The servers `toolhost serve` starts. */
/** A server's connection caps per network and its first-byte deadline (servers/connection-gate.ts). */
export interface ConnectionFairness {
  maxConnectionsPerNetwork: number;
  networkPrefixV4: number;
  networkPrefixV6: number;
  firstByteTimeoutMs: number;
}

export interface ServerSettings {
  /** Named tokens (MCP HTTP and gRPC): each principal and the environment variable holding its token. */
  tokens: Array<{ principal: string; tokenEnv: string }>;
  /** `/metrics`: distinct values of each client-influenced label (absent: metrics.ts's default, 1000). */
  metricsMaxLabelValues?: number;
  /** OAuth 2.1 access tokens for both servers (absent: none); the servers check it again when they start. */
  oauth?: {
    issuer: string;
    jwksUri?: string;
    audience: string;
    principalClaim?: string;
    tenantClaim?: string;
    scopeLabels?: Record<string, { network?: string; privilege?: string }>;
    resourceName?: string;
    maxJwksBytes?: number;
    acceptPlainJwt?: boolean;
    /** RFC 7662 introspection of opaque tokens; the secret is read from `clientSecretEnv` when the servers start. */
    introspection?: {
      endpoint: string;
      clientId: string;
      clientSecretEnv: string;
      cacheMs?: number;
      negativeCacheMs?: number;
      maxInFlight?: number;
      maxWaiting?: number;
      addressRate?: number;
      addressBurst?: number;
      maxAddresses?: number;
    };
  };
  mcp: {
    /** How long a call's answer waits for the ping after its last progress notification (ms; absent: the server's default). */
    progressFlushMs?: number;
    http: {
      enabled: boolean;
      host: string;
      port: number;
      /** Host header values accepted (absent: the server's own default). */
      allowedHosts?: string[];
      /** The environment variable holding the bearer token clients must send (absent: none required). */
      bearerTokenEnv?: string;
      /** Origin header values accepted (absent: the server's own default). */
      allowedOrigins?: string[];
      maxSessions: number;
      maxSessionsPerClient: number;
      sessionIdleMs: number;
      maxBodyBytes: number;
      /** TCP connections at once (absent: the server's default, sized to the open-file limit). */
      maxConnections?: number;
      maxConnectionsPerClient: number;
      maxConnectionsPerNetwork: number;
      networkPrefixV4: number;
      networkPrefixV6: number;
      firstByteTimeoutMs: number;
      headersTimeoutMs: number;

      /** 2026-07-28 `subscriptions/listen` streams open at once on this host. */
      maxSubscriptions: number;
      /** 2026-07-28 calls one principal may have parked for its client's answers. */
      maxParkedCalls: number;
      /** 2025-era events kept per session for replay after Last-Event-ID (count, bytes). */
      resumeEvents: number;
      resumeBytes: number;
      resumeRetryMs: number;
    };
  };
  grpc: {
    enabled: boolean;
    host: string;
    port: number;
    maxReceiveMessageBytes: number;
    maxSendMessageBytes: number;
    /** The environment variable holding the token clients must send (default: the MCP server's). */
    bearerTokenEnv?: string;
    health: boolean;
    reflection: boolean;
    /** TCP connections at once (absent: the server's default, sized to the open-file limit). */
    maxConnections?: number;
    maxConnectionsPerClient: number;
    maxConnectionsPerNetwork: number;
    networkPrefixV4: number;
    networkPrefixV6: number;
    firstByteTimeoutMs: number;
    idleTimeoutMs: number;
  };
}

/** The configuration in the host's terms. */
export interface ResolvedConfig {
  /** The config file (absolute), or undefined for the embedded defaults. */
  file?: string;
  /** What relative paths were resolved against: the config file's directory. */
  baseDir: string;
  /** The host log's level: `TOOLHOST_LOG`, else `host.log_level`, else `warn`. */
  logLevel: string;
  /** The file's `telemetry:` section (the OTEL_* environment is applied over it when the host is made: telemetry/settings.ts). */
  telemetry?: ResolvedTelemetry;
  /** Defaults and ceilings, merged over DEFAULT_POLICY_DEFAULTS. */
  defaults: PolicyDefaults;
  cancelGraceMs: number;
  /** Call id rules (only what the file sets; the registry defaults the rest). */
  callIds: { maxLength?: number; rememberedBytes?: number };
  retry: RetryOptions;
  /** Pool and output options (only what the file sets; the sandbox defaults the rest). `cacheDir` is absolute. */
  sandbox: SandboxOptions;
  /** `host.output_limits.max_result_depth`, when set (the registry's default otherwise). */
  maxResultDepth?: number;
  /** `host.guest_limits.client_request_bytes`, when set (the registry's default otherwise). */
  clientRequestBytes?: number;
  /** `host.guest_limits.surface_items`, when set (the registry's default otherwise). */
  surfaceItems?: number;
  /** `host.guest_limits.surface_listing_wait_ms`, when set (the registry's default otherwise). */
  surfaceListingWaitMs?: number;
  /** State limits (only what the file sets; the registry defaults the rest). */
  stateLimits: Partial<StateLimits>;
  /** Schema limits (`guest_limits.schema_*`, `args_depth`, `validation_steps`: only what the file sets). */
  schemaLimits: Partial<SchemaLimits>;
  /** Whether PRIVILEGED and FULL_ACCESS calls are approved (an embedder's approve hook overrides it). */
  approval: 'never' | 'always' | 'ask';
  /** `stderr`, or the absolute path of the audit log file. */
  auditLog: 'stderr' | { file: string };
  /** Components to load, in order. */
  tools: ToolLoad[];
  httpTools: HttpToolSpec[];
  mcpServers: McpServerSpec[];
  servers: ServerSettings;
  /** Expose load/unload as MCP admin tools. */
  adminTools: boolean;
  /** Directories `toolhost_load` may load local files from (absolute; `admin.load_dirs`, default none). */
  adminLoadDirs: string[];
  /** A fleet on Redis (absent: everything in process). */
  cluster?: ClusterSettings;
  /** Remote components (paths absolute; only what the file sets). */
  distribution: DistributionOptions;
}

/** Where the fleet's store is: one Redis or a Redis Cluster, never both. */
export type ClusterStore = { redis: string; redisCluster?: undefined } | { redis?: undefined; redisCluster: { nodes: string[] } };

/** The `cluster` section, camelCased (defaults are the fleet layer's). */
export type ClusterSettings = ClusterStore & ClusterOptions;

/** The `cluster` section's settings besides the store. */
export interface ClusterOptions {
  keyPrefix?: string;
  leaseMs?: number;
  commandTimeoutMs?: number;
  state?: { ttlSeconds?: number; maxValueBytes?: number; maxKeys?: number; maxBytesPerConversation?: number; maxTotalBytes?: number; maxBytesPerPrincipal?: number; waitReplicas?: number };
  limits?: { perTool?: Record<string, number>; perTenant?: Record<string, number> };
  /** MCP sessions in Redis (their TTL is the MCP server's session idle time). */
  sessions?: { maxSessions?: number; maxPerPrincipal?: number };
}

/** `telemetry:` as the file says it (camelCase; only what is set). */
export interface ResolvedTelemetry {
  enabled?: boolean;
  endpoint?: string;
  tracesEndpoint?: string;
  protocol?: 'http/protobuf' | 'http/json';
  headers?: Record<string, string>;
  serviceName?: string;
  sampler?: 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
  samplerArg?: number;
  maxQueueSpans?: number;
  record?: { argumentSizes?: boolean; principal?: 'none' | 'hashed' | 'plain'; resourceUris?: boolean };
}
