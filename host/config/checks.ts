/**
 * What the schema cannot say about a config file, checked with the host's own
 * parsers so the file and the runtime agree: labels (case-insensitive),
 * default policies (`parseExecutionPolicy`), egress allowlists
 * (`parseEgressAllowlist`), limits against the ceilings, default policies
 * within their grant, paths that must exist, writable worktrees off the
 * host-owned paths (policy/host-owned-paths.ts), URLs, input schemas,
 * duplicate names and ports. Each problem is reported at its YAML node.
 *
 * Some findings are warnings, not errors: the file works, but probably not
 * as its author meant (a grant that needs approval when approval is `never`).
 */
import { isRemoteSource, parseSource } from '../distribution/source.js';
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ToolhostError } from '../base/errors.js';
import { SchemaCompiler } from '../core/schema.js';
import { parseEgressAllowlist } from '../net/allowlist.js';
import { parseExecutionPolicy, resolveBudgets, type ExecutionPolicy, type PolicyDefaults } from '../policy/execution-policy.js';
import { NETWORK_LABELS, PRIVILEGE_LABELS, labelRank, parseLabel } from '../policy/labels.js';
import type { ConfigProblem } from './errors.js';
import { DEFAULT_GRPC, DEFAULT_MCP_HTTP, resolvePolicyDefaults, resolveRetry, schemaLimitsOf } from './resolve.js';
import type { ConfigPath, ConfigSource } from './source.js';
import type { ConfigFile, GrantEntry, PolicyEntry } from './types.js';
import { describeOverlap, overlapWith, processOwnedPaths } from '../policy/host-owned-paths.js';
import { configOwnedPaths, type ConfiguredOwnedPath } from './owned-paths.js';
import { describeNesting, nestedWorktrees, type GrantedWorktree } from '../policy/worktree-nesting.js';

/** What the checks found. */
export interface CheckResult {
  errors: ConfigProblem[];
  warnings: ConfigProblem[];
}

/** The parts of a config entry that carry a grant and a default policy. */
interface GrantHolder {
  grant?: GrantEntry;
  default_policy?: PolicyEntry;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Check a config file that passed the schema.
 *
 * @param config the file's data (schema-valid)
 * @param source the parsed file (for positions)
 * @param baseDir what relative paths are resolved against
 * @param file the config file (absolute), when the config is one: a host-owned path
 */
export function checkConfig(config: ConfigFile, source: ConfigSource, baseDir: string, file?: string): CheckResult {
  const errors: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const error = (path: ConfigPath, message: string, anchor: 'value' | 'key' = 'value'): void => {
    errors.push(source.problem(path, message, anchor));
  };
  const warn = (path: ConfigPath, message: string): void => {
    warnings.push(source.problem(path, message));
  };

  // Host defaults: labels first (the rest of the checks need them).
  const host = config.host ?? {};
  checkLabel(NETWORK_LABELS, host.defaults?.network_policy, ['host', 'defaults', 'network_policy'], 'network label', error);
  checkLabel(PRIVILEGE_LABELS, host.defaults?.privilege_level, ['host', 'defaults', 'privilege_level'], 'privilege level', error);
  if (errors.length > 0) return { errors, warnings };
  const defaults = resolvePolicyDefaults(host);
  const pairs = [
    ['wall_ms', 'wall_ms', defaults.wallMs, defaults.maxWallMs, 'ms'],
    ['cpu_ms', 'cpu_ms', defaults.cpuMs, defaults.maxCpuMs, 'ms'],
    ['memory_mb', 'memory_mb', defaults.memoryMb, defaults.maxMemoryMb, 'MiB'],
  ] as const;
  for (const [field, ceilingField, value, ceiling, unit] of pairs) {
    if (value === undefined || value <= ceiling) continue;
    const where: ConfigPath = host.defaults?.[field] !== undefined ? ['host', 'defaults', field] : ['host', 'ceilings', ceilingField];
    error(where, `must stay within the ceiling: the default ${field} is ${value} ${unit}, the ceiling ${ceiling} ${unit} (host.ceilings.${ceilingField})`);
  }
  const retry = resolveRetry(host);
  if (retry.capMs < retry.baseMs) {
    error(host.retry?.cap_ms !== undefined ? ['host', 'retry', 'cap_ms'] : ['host', 'retry', 'base_ms'], `must keep base_ms <= cap_ms (base_ms is ${retry.baseMs}, cap_ms ${retry.capMs})`);
  }

  const approval = host.approval ?? 'never';
  const checkHolder = (base: ConfigPath, holder: GrantHolder): void => {
    checkGrantHolder(base, holder, { defaults, approval, baseDir, error, warn });
  };

  // A worktree a grant lets guests write must not overlap what the host reads
  // code or configuration from (policy/host-owned-paths.ts): the config file,
  // the cache, the audit log, components, MCP servers, the host's own package.
  const owned = [...processOwnedPaths(), ...configOwnedPaths(config, baseDir, file)];
  const holders: Array<[ConfigPath, GrantHolder]> = [
    ...(config.tools ?? []).map((entry, i): [ConfigPath, GrantHolder] => [['tools', i], entry]),
    ...(config.http_tools ?? []).map((entry, i): [ConfigPath, GrantHolder] => [['http_tools', i], entry]),
    ...(config.mcp_servers ?? []).map((entry, i): [ConfigPath, GrantHolder] => [['mcp_servers', i], entry]),
  ];
  for (const [base, holder] of holders) {
    if (holder.grant?.worktree === undefined) continue;
    const privilege = parseLabel(PRIVILEGE_LABELS, holder.grant.privilege ?? 'MINIMAL');
    if (privilege === undefined || labelRank(PRIVILEGE_LABELS, privilege) < labelRank(PRIVILEGE_LABELS, 'ELEVATED')) continue; // read-only at most
    const overlap = overlapWith(resolve(baseDir, holder.grant.worktree), owned);
    if (overlap === undefined) continue;
    const at = (overlap.owned as ConfiguredOwnedPath).at;
    const named = base.join('[').replace(/\[(\d+)$/, '[$1]');
    error(at ?? [...base, 'grant', 'worktree'], `overlaps the writable worktree granted to ${named} (privilege ${privilege}): ${describeOverlap(overlap)}; a guest must never be able to write what the host reads code or configuration from: move one of them, or lower the grant's privilege to DEFAULT (read-only)`);
  }

  // No worktree inside another entry's writable one (policy/worktree-nesting.ts): its root could be moved.
  const granted: Array<GrantedWorktree<ConfigPath>> = holders
    .filter(([, holder]) => holder.grant?.worktree !== undefined)
    .map(([base, holder]) => ({
      name: base.join('[').replace(/\[(\d+)$/, '[$1]'),
      worktree: resolve(baseDir, holder.grant!.worktree!),
      ...(holder.grant!.privilege === undefined ? {} : { privilege: holder.grant!.privilege }),
      where: [...base, 'grant', 'worktree'],
    }));
  for (const nested of nestedWorktrees(granted)) error(nested.inner.where!, describeNesting(nested));

  // Components.
  const seenPaths = new Map<string, number>();
  (config.tools ?? []).forEach((entry, i) => {
    if (isRemoteSource(entry.path)) {
      // A remote source is fetched and verified at load; here it only has to parse.
      try {
        parseSource(entry.path);
      } catch (problem) {
        error(['tools', i, 'path'], (problem as Error).message);
      }
      checkHolder(['tools', i], entry);
      return;
    }
    const absolute = resolve(baseDir, entry.path);
    const kind = fileKind(absolute);
    if (kind === undefined) error(['tools', i, 'path'], `does not exist: ${absolute}${isAbsolute(entry.path) ? '' : ` (relative paths are resolved against ${baseDir})`}`);
    const first = seenPaths.get(absolute);
    if (first !== undefined) error(['tools', i, 'path'], `loads ${absolute} again (already loaded by tools[${first}]): its tools would collide`);
    else seenPaths.set(absolute, i);
    checkHolder(['tools', i], entry);
  });

  // Native HTTP tools.
  const httpNames = new Map<string, number>();
  const compiler = new SchemaCompiler(schemaLimitsOf(config.host?.guest_limits));
  (config.http_tools ?? []).forEach((entry, i) => {
    const first = httpNames.get(entry.name);
    if (first !== undefined) error(['http_tools', i, 'name'], `duplicates the name "${entry.name}" (already used by http_tools[${first}])`);
    else httpNames.set(entry.name, i);
    checkUrl(entry.url, ['http_tools', i, 'url'], error);
    try {
      compiler.compile(entry.name, entry.input_schema);
    } catch (thrown) {
      error(['http_tools', i, 'input_schema'], `must be a JSON Schema that compiles: ${messageOf(thrown)}`);
    }
    checkHolder(['http_tools', i], entry);
  });

  // Imported MCP servers.
  const serverNames = new Map<string, number>();
  (config.mcp_servers ?? []).forEach((entry, i) => {
    const first = serverNames.get(entry.name);
    if (first !== undefined) error(['mcp_servers', i, 'name'], `duplicates the name "${entry.name}" (already used by mcp_servers[${first}]); each server's tools are namespaced by its name`);
    else serverNames.set(entry.name, i);
    if (entry.url !== undefined) {
      checkUrl(entry.url, ['mcp_servers', i, 'url'], error);
    } else {
      if (entry.command.includes('/')) {
        const absolute = resolve(baseDir, entry.command);
        if (fileKind(absolute) !== 'file') error(['mcp_servers', i, 'command'], `is not a file: ${absolute} (a command with a / is a path relative to the config file's directory; a bare name is looked up on PATH)`);
      }
      if (entry.cwd !== undefined) {
        const absolute = resolve(baseDir, entry.cwd);
        if (fileKind(absolute) !== 'directory') error(['mcp_servers', i, 'cwd'], `is not a directory: ${absolute}`);
      }
    }
    checkHolder(['mcp_servers', i], entry);
  });

  // Servers.
  const mcpHttp = config.servers?.mcp?.http;
  const grpc = config.servers?.grpc;
  const mcpEnabled = mcpHttp?.enabled ?? DEFAULT_MCP_HTTP.enabled;
  const grpcEnabled = grpc?.enabled ?? DEFAULT_GRPC.enabled;
  const mcpAddress = { host: mcpHttp?.host ?? DEFAULT_MCP_HTTP.host, port: mcpHttp?.port ?? DEFAULT_MCP_HTTP.port };
  const grpcAddress = { host: grpc?.host ?? DEFAULT_GRPC.host, port: grpc?.port ?? DEFAULT_GRPC.port };
  if (mcpEnabled && grpcEnabled && mcpAddress.port !== 0 && mcpAddress.port === grpcAddress.port && mcpAddress.host === grpcAddress.host) {
    error(grpc?.port !== undefined ? ['servers', 'grpc', 'port'] : ['servers', 'mcp', 'http', 'port'], `must differ from the other server's: MCP and gRPC would both listen on ${mcpAddress.host}:${mcpAddress.port}`);
  }
  // Named tokens: one principal each; "bearer" is the shared token's when there is one.
  const shared = mcpHttp?.bearer_token_env ?? grpc?.bearer_token_env;
  const principals = new Map<string, number>();
  (config.servers?.auth?.tokens ?? []).forEach((entry, i) => {
    const first = principals.get(entry.principal);
    if (first !== undefined) error(['servers', 'auth', 'tokens', i, 'principal'], `duplicates the principal "${entry.principal}" (already named by servers.auth.tokens[${first}])`);
    else if (entry.principal === 'bearer' && shared !== undefined) error(['servers', 'auth', 'tokens', i, 'principal'], 'is the shared bearer token\'s principal (bearer_token_env): choose another name');
    else principals.set(entry.principal, i);
  });
  // OAuth scopes: each maps to labels of the vocabularies.
  for (const [scope, labels] of Object.entries(config.servers?.auth?.oauth?.scope_labels ?? {})) {
    const at = ['servers', 'auth', 'oauth', 'scope_labels', scope];
    checkLabel(NETWORK_LABELS, labels.network, [...at, 'network'], 'network label', error);
    checkLabel(PRIVILEGE_LABELS, labels.privilege, [...at, 'privilege'], 'privilege level', error);
  }
  const hasTokens = shared !== undefined || principals.size > 0 || config.servers?.auth?.oauth !== undefined;
  // Admin tools load and run code: on a network server only for an authenticated caller (tools/admin-access.ts).
  if (config.admin_tools === true) {
    const common = principals.size > 0 || config.servers?.auth?.oauth !== undefined;
    const open = [
      ...(mcpEnabled && !common && mcpHttp?.bearer_token_env === undefined ? [`MCP over HTTP (${mcpAddress.host}:${mcpAddress.port})`] : []),
      ...(grpcEnabled && !common && (grpc?.bearer_token_env ?? mcpHttp?.bearer_token_env) === undefined ? [`gRPC (${grpcAddress.host}:${grpcAddress.port})`] : []),
    ];
    if (open.length > 0) {
      error(['admin_tools'], `needs authenticated callers on a network server, and ${open.join(' and ')} would serve toolhost_load to anyone who connects: set servers.auth.tokens, bearer_token_env or servers.auth.oauth, or turn the network servers off (servers.mcp.http.enabled: false, servers.grpc.enabled: false) to use the admin tools over stdio and the CLI only`);
    }
  }
  (config.admin?.load_dirs ?? []).forEach((dir, i) => {
    const absolute = resolve(baseDir, dir);
    if (fileKind(absolute) !== 'directory') error(['admin', 'load_dirs', i], `is not a directory: ${absolute}`);
  });
  if (config.admin?.load_dirs !== undefined && config.admin_tools !== true) warn(['admin', 'load_dirs'], 'has no effect: admin_tools is not true');
  if (mcpEnabled && !LOOPBACK_HOSTS.has(mcpAddress.host) && !hasTokens) {
    warn(['servers', 'mcp', 'http', 'host'], `serves MCP on ${mcpAddress.host}, beyond this machine, without a bearer token (set bearer_token_env, servers.auth.tokens or servers.auth.oauth)`);
  }

  return { errors, warnings };
}

interface HolderContext {
  defaults: PolicyDefaults;
  approval: 'never' | 'always' | 'ask';
  baseDir: string;
  error: (path: ConfigPath, message: string, anchor?: 'value' | 'key') => void;
  warn: (path: ConfigPath, message: string) => void;
}

/** A grant and a default policy: each valid, within the ceilings, the policy within the grant. */
function checkGrantHolder(base: ConfigPath, holder: GrantHolder, context: HolderContext): void {
  const { defaults, approval, baseDir, error, warn } = context;
  const grant = holder.grant ?? {};
  const g: ConfigPath = [...base, 'grant'];
  const network = checkLabel(NETWORK_LABELS, grant.network, [...g, 'network'], 'network label', error) ?? 'DENY_ALL';
  const privilege = checkLabel(PRIVILEGE_LABELS, grant.privilege, [...g, 'privilege'], 'privilege level', error) ?? 'MINIMAL';

  (grant.egress_allow ?? []).forEach((entry, i) => {
    try {
      parseEgressAllowlist([entry]);
    } catch (thrown) {
      const prefix = `invalid egress allowlist entry ${JSON.stringify(entry)}: `;
      const message = messageOf(thrown);
      const reason = message.startsWith(prefix) ? message.slice(prefix.length) : message;
      error([...g, 'egress_allow', i], `is not a valid allowlist entry (expected host, *.domain, host:port, an IP address or a CIDR): ${reason}`);
    }
  });
  if (grant.memory_mb !== undefined && grant.memory_mb > defaults.maxMemoryMb) {
    error([...g, 'memory_mb'], `must stay within the ceiling: ${grant.memory_mb} MiB is above host.ceilings.memory_mb (${defaults.maxMemoryMb} MiB)`);
  }
  const allowed = new Set(grant.env_allow ?? []);
  for (const key of Object.keys(grant.env ?? {})) {
    if (!allowed.has(key)) error([...g, 'env', key], `sets "${key}", which is not in env_allow: a tool only ever sees allowlisted variables`, 'key');
  }
  if (grant.worktree !== undefined) {
    const absolute = resolve(baseDir, grant.worktree);
    if (fileKind(absolute) !== 'directory') error([...g, 'worktree'], `is not a directory: ${absolute}`);
  }
  if (approval === 'never' && network === 'FULL_ACCESS') {
    warn([...g, 'network'], 'allows FULL_ACCESS, which needs approval, and host.approval is never: such calls will be refused (unless the embedding application passes an approve hook)');
  }
  if (approval === 'never' && privilege === 'PRIVILEGED') {
    warn([...g, 'privilege'], 'allows PRIVILEGED, which needs approval, and host.approval is never: such calls will be refused (unless the embedding application passes an approve hook)');
  }
  if (allowed.size > 0 && labelRank(PRIVILEGE_LABELS, privilege) < labelRank(PRIVILEGE_LABELS, 'ELEVATED')) {
    warn([...g, 'env_allow'], `has no effect: only ELEVATED and PRIVILEGED calls see environment variables, and this grant's privilege is ${privilege}`);
  }

  // The default policy: field by field (so each problem is at its own node), then as a whole.
  const entry = holder.default_policy;
  const p: ConfigPath = [...base, 'default_policy'];
  let policy: ExecutionPolicy = {};
  if (entry !== undefined) {
    let valid = true;
    for (const [field, value] of Object.entries(entry)) {
      try {
        parseExecutionPolicy({ [field]: value });
      } catch (thrown) {
        valid = false;
        error([...p, field], `is invalid: ${messageOf(thrown).replace(/^policy: /, '')}`);
      }
    }
    if (!valid) return;
    policy = parseExecutionPolicy(entry);
    try {
      resolveBudgets(policy, defaults);
    } catch (thrown) {
      const field = thrown instanceof ToolhostError ? (thrown.details as { field?: string } | undefined)?.field : undefined;
      const where = field !== undefined && field in entry ? [...p, field] : p;
      error(where, `must stay within the host's ceilings: ${messageOf(thrown).replace(/^policy: /, '')}`);
    }
    if (policy.networkPolicy !== undefined && labelRank(NETWORK_LABELS, policy.networkPolicy) > labelRank(NETWORK_LABELS, network)) {
      error([...p, 'network_policy'], `must stay within the grant: ${policy.networkPolicy} is above the grant's network ${network}, so every call would be refused`);
    }
    if (policy.privilegeLevel !== undefined && labelRank(PRIVILEGE_LABELS, policy.privilegeLevel) > labelRank(PRIVILEGE_LABELS, privilege)) {
      error([...p, 'privilege_level'], `must stay within the grant: ${policy.privilegeLevel} is above the grant's privilege ${privilege}, so every call would be refused`);
    }
  }
  // Calls that state nothing get the host's default labels: warn when those exceed the grant.
  if (policy.networkPolicy === undefined && labelRank(NETWORK_LABELS, defaults.networkPolicy) > labelRank(NETWORK_LABELS, network)) {
    warn(base, `gets the host's default network_policy ${defaults.networkPolicy}, above its grant (${network}): calls that do not ask for less will be refused; set default_policy.network_policy`);
  }
  if (policy.privilegeLevel === undefined && labelRank(PRIVILEGE_LABELS, defaults.privilegeLevel) > labelRank(PRIVILEGE_LABELS, privilege)) {
    warn(base, `gets the host's default privilege_level ${defaults.privilegeLevel}, above its grant (${privilege}): calls that do not ask for less will be refused; set default_policy.privilege_level`);
  }
}

function checkLabel<L extends string>(
  vocabulary: readonly L[],
  value: string | undefined,
  path: ConfigPath,
  what: string,
  error: (path: ConfigPath, message: string) => void,
): L | undefined {
  if (value === undefined) return undefined;
  const label = parseLabel(vocabulary, value);
  if (label === undefined) error(path, `must be a ${what}: one of ${vocabulary.join(', ')}, in any case (got ${JSON.stringify(value)})`);
  return label;
}

function checkUrl(text: string, path: ConfigPath, error: (path: ConfigPath, message: string) => void): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    error(path, `must be an absolute http:// or https:// URL (got ${JSON.stringify(text)})`);
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') error(path, `must be an http:// or https:// URL (got ${JSON.stringify(text)})`);
}

function fileKind(path: string): 'file' | 'directory' | 'other' | undefined {
  try {
    const info = statSync(path);
    return info.isFile() ? 'file' : info.isDirectory() ? 'directory' : 'other';
  } catch {
    return undefined;
  }
}

function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}
