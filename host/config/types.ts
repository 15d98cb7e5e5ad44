/**
 * The shape of `toolhost.yaml` as written (snake_case), once it passed the
 * published schema. `toolhost.schema.json` is the source of truth: these types
 * restate it for TypeScript, so keep the two in step.
 */
import type { JsonSchema } from '../core/tool.js';
import type { DurationInput } from '../policy/execution-policy.js';

/** The whole file. Every key is optional. */
export interface ConfigFile {
  host?: HostSection;
  tools?: ToolEntry[];
  http_tools?: HttpToolEntry[];
  mcp_servers?: McpServerEntry[];
  servers?: ServersSection;
  admin_tools?: boolean;
  admin?: { load_dirs?: string[] };
  cluster?: ClusterSection;
  distribution?: DistributionSection;
  telemetry?: TelemetrySection;
}

/** OpenTelemetry traces (the OTEL_* environment wins over every key). */
export interface TelemetrySection {
  enabled?: boolean;
  endpoint?: string;
  traces_endpoint?: string;
  protocol?: 'http/protobuf' | 'http/json';
  headers?: Record<string, string>;
  service_name?: string;
  sampler?: 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
  sampler_arg?: number;
  max_queue_spans?: number;
  record?: { argument_sizes?: boolean; principal?: 'none' | 'hashed' | 'plain'; resource_uris?: boolean };
}

/** Whose signatures a remote component must carry. */
export interface VerifyEntry {
  keys?: string[];
  trusted_root?: string;
  identities?: Array<{ issuer: string; subject?: string; subject_regexp?: string }>;
  reference_aliases?: Record<string, string>;
  require_attestations?: Array<{ predicate_type: string; builder_id?: string }>;
  skip?: boolean;
}

/** Remote components: store, registries, credentials, trust, caps. */
export interface DistributionSection {
  store_dir?: string;
  insecure_registries?: string[];
  registries?: string[];
  auth?: Record<string, { username: string; password_env: string }>;
  token_realms?: Record<string, string[]>;
  verify?: VerifyEntry;
  max_manifest_bytes?: number;
  max_component_bytes?: number;
  max_signature_layers?: number;
  max_signature_bytes?: number;
  credential_helper_timeout_ms?: number;
  credential_helper_max_bytes?: number;
  load_timeout_ms?: number;
}

/** A fleet of hosts on one Redis (`redis`) or one Redis Cluster (`redis_cluster`); exactly one of the two. */
export interface ClusterSection {
  redis?: string;
  redis_cluster?: { nodes: string[] };
  key_prefix?: string;
  lease_ms?: number;
  command_timeout_ms?: number;
  state?: { ttl_seconds?: number; max_value_bytes?: number; max_keys?: number; max_bytes_per_conversation?: number; max_total_bytes?: number; max_bytes_per_principal?: number; wait_replicas?: number };
  limits?: { per_tool?: Record<string, number>; per_tenant?: Record<string, number> };
  sessions?: { max_sessions?: number; max_per_principal?: number };
}

/** The host's own log levels (`TOOLHOST_LOG` overrides the file's). */
export type ConfigLogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface HostSection {
  log_level?: ConfigLogLevel;
  defaults?: {
    wall_ms?: number;
    cpu_ms?: number;
    memory_mb?: number;
    network_policy?: string;
    privilege_level?: string;
  };
  ceilings?: {
    wall_ms?: number;
    cpu_ms?: number;
    memory_mb?: number;
    max_retries?: number;
  };
  cancel_grace_ms?: number;
  call_ids?: { max_length?: number; remembered_bytes?: number };
  retry?: { base_ms?: number; cap_ms?: number };
  pool?: {
    threads?: number;
    max_queue?: number;
    max_queue_per_principal?: number;
    max_heap_mb?: number;
    cache_dir?: string;
    idle_timeout_ms?: number;
    wait_behind?: { average_ms?: number; within_ms?: number };
    spin_us?: number;
    containment?: 'process' | 'thread';
    heartbeat_ms?: number;
    kept_instances_mb?: number;
    memory_budget_mb?: number;
    idle_release_ms?: number;
    client_waits?: number;
    client_waits_per_principal?: number;
  };
  output_limits?: {
    stdio_bytes?: number;
    max_events?: number;
    max_event_bytes?: number;
    max_result_bytes?: number;
    max_result_depth?: number;
  };
  guest_limits?: {
    state_value_bytes?: number;
    state_keys_per_conversation?: number;
    state_bytes_per_conversation?: number;
    state_conversations?: number;
    state_total_bytes?: number;
    host_calls_per_call?: number;
    handles_per_call?: number;
    table_elements?: number;
    describe_ms?: number;
    spare_ms?: number;
    schema_nodes?: number;
    schema_depth?: number;
    schema_fanout?: number;
    schema_enum_values?: number;
    schema_pattern_chars?: number;
    schema_pattern_program?: number;
    args_depth?: number;
    validation_steps?: number;
    schema_lane_ms?: number;
    client_request_bytes?: number;
    surface_items?: number;
    surface_listing_wait_ms?: number;
  };
  approval?: 'never' | 'always' | 'ask';
  /** `stderr` or a file path. */
  audit_log?: string;
}

/** A grant as written (labels in any case). */
export interface GrantEntry {
  network?: string;
  egress_allow?: string[];
  propagate_trace?: boolean;
  privilege?: string;
  env_allow?: string[];
  env?: Record<string, string>;
  memory_mb?: number;
  worktree?: string;
  sampling?: { max_requests?: number; max_tokens?: number };
  elicitation?: { max_requests?: number };
  roots?: { max_requests?: number };
  state?: { access?: 'none' | 'read' | 'write'; share?: string };
}

/** An ExecutionPolicy as written (sw4rm field names; labels in any case). */
export interface PolicyEntry {
  timeout?: DurationInput;
  max_retries?: number;
  backoff?: 'exponential';
  worktree_required?: boolean;
  network_policy?: string;
  privilege_level?: string;
  budget_cpu_ms?: number;
  budget_wall_ms?: number;
  memory_mb?: number;
}

export interface ToolEntry {
  path: string;
  verify?: VerifyEntry;
  isolation?: 'call' | 'conversation' | 'worker';
  grant?: GrantEntry;
  default_policy?: PolicyEntry;
}

export interface HttpToolEntry {
  name: string;
  description: string;
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  timeout_ms?: number;
  propagate_trace?: boolean;
  input_schema: Exclude<JsonSchema, boolean>;
  grant?: GrantEntry;
  default_policy?: PolicyEntry;
}

interface McpServerCommon {
  name: string;
  timeout_ms?: number;
  protocol?: 'auto' | '2025-11-25' | '2026-07-28';
  grant?: GrantEntry;
  default_policy?: PolicyEntry;
}

export interface McpStdioServerEntry extends McpServerCommon {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: never;
}

export interface McpHttpServerEntry extends McpServerCommon {
  url: string;
  headers?: Record<string, string>;
  bearer_token_env?: string;
  command?: never;
}

export type McpServerEntry = McpStdioServerEntry | McpHttpServerEntry;

/** `servers.auth.oauth`: OAuth 2.1 access tokens (JWTs) for MCP HTTP and gRPC. */
export interface OAuthSection {
  issuer: string;
  jwks_uri?: string;
  audience: string;
  principal_claim?: string;
  tenant_claim?: string;
  scope_labels?: Record<string, { network?: string; privilege?: string }>;
  resource_name?: string;
  metrics_scope?: string;
  admin_scope?: string;
  max_jwks_bytes?: number;
  accept_plain_jwt?: boolean;
  introspection?: {
    endpoint: string;
    client_id: string;
    client_secret_env: string;
    cache_ms?: number;
    negative_cache_ms?: number;
    max_in_flight?: number;
    max_waiting?: number;
    address_rate?: number;
    address_burst?: number;
    max_addresses?: number;
  };
}

export interface ServersSection {
  auth?: { tokens?: Array<{ principal: string; token_env: string }>; oauth?: OAuthSection };
  metrics?: { max_label_values?: number };
  mcp?: {
    progress_flush_ms?: number;
    http?: {
      enabled?: boolean;
      host?: string;
      port?: number;
      allowed_hosts?: string[];
      bearer_token_env?: string;
      allowed_origins?: string[];
      max_sessions?: number;
      max_sessions_per_client?: number;
      session_idle_ms?: number;
      max_body_bytes?: number;
      max_connections?: number;
      max_connections_per_client?: number;
      max_connections_per_network?: number;
      network_prefix_v4?: number;
      network_prefix_v6?: number;
      first_byte_timeout_ms?: number;
      headers_timeout_ms?: number;
      max_subscriptions?: number;
      max_parked_calls?: number;
      resume_events?: number;
      resume_bytes?: number;
      resume_retry_ms?: number;
    };
  };
  grpc?: {
    enabled?: boolean;
    host?: string;
    port?: number;
    max_receive_message_bytes?: number;
    max_send_message_bytes?: number;
    bearer_token_env?: string;
    health?: boolean;
    reflection?: boolean;
    max_connections?: number;
    max_connections_per_client?: number;
    max_connections_per_network?: number;
    network_prefix_v4?: number;
    network_prefix_v6?: number;
    first_byte_timeout_ms?: number;
    idle_timeout_ms?: number;
  };
}
