/**
 * The config file, toolhost.yaml: the example file and the embedded defaults
 * load; every kind of mistake is reported at its file, line and column;
 * relative paths resolve against the config file's directory; labels are
 * case-insensitive; the resolved values build a working registry.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_GRPC,
  DEFAULT_MCP_HTTP,
  embeddedConfig,
  findConfig,
  loadConfig,
} from '../host/config/index.js';
import { registryOptions } from '../host/compose/registry.js';
import { EXAMPLE_LOAD_OPTIONS } from '../host/config/examples.js';
import { DEFAULT_POLICY_DEFAULTS } from '../host/policy/execution-policy.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { ToolhostError, createRegistry, silentLogger } from '../host/index.js';
import { example, examplesDir, hasCGuests, root, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-config-'));
let counter = 0;

/** A fresh directory holding `toolhost.yaml` with `lines`, plus a component-looking file and a worktree. */
function writeConfig(lines: string[], name = 'toolhost.yaml'): { dir: string; file: string } {
  counter += 1;
  const dir = join(scratch, `case-${counter}`);
  mkdirSync(join(dir, 'components'), { recursive: true });
  mkdirSync(join(dir, 'work'), { recursive: true });
  writeFileSync(join(dir, 'components', 'tool.wasm'), '');
  const file = join(dir, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return { dir, file };
}

/** Load `lines` and return the ConfigError it must fail with. */
async function configError(lines: string[]): Promise<{ error: ConfigError; file: string }> {
  const { file } = writeConfig(lines);
  const error = await loadConfig(file).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, 'the config should have been refused').toBeInstanceOf(ConfigError);
  return { error: error as ConfigError, file };
}

describe('the example file and the embedded defaults', () => {
  it.skipIf(!hasCGuests)('toolhost.example.yaml validates and resolves, with a warning-free report', async () => {
    const loaded = await loadConfig(join(root, 'toolhost.example.yaml'));
    expect(loaded.warnings).toEqual([]);
    expect(loaded.file).toBe(join(root, 'toolhost.example.yaml'));
    const { resolved } = loaded;
    expect(resolved.tools.map((load) => relative(root, load.path))).toEqual([
      'guest-tools/dist/text.wasm',
      'guest-tools/dist/json.wasm',
      'guest-tools/dist/ctools.wasm',
      'guest-tools/dist/files.wasm',
      'guest-tools/dist/net.wasm',
      'guest-tools/dist/media.wasm',
    ]);
    const files = resolved.tools[3];
    expect(files?.options.grant).toEqual({ privilege: 'DEFAULT', state: { access: 'none' } });
    expect(files?.options.defaultPolicy).toMatchObject({ privilege_level: 'DEFAULT', worktree_required: true });
    expect(files?.origin).toEqual({ file: join(root, 'toolhost.example.yaml'), line: expect.any(Number) as number, column: 5 });
    expect(resolved.tools[4]?.options.grant).toEqual({ network: 'EGRESS_UNRESTRICTED', egressAllow: ['example.com', '*.example.org', 'localhost:8080'] });
    expect(resolved.servers).toEqual({
      tokens: [],
      mcp: {
        progressFlushMs: 1000,
        http: {
          enabled: true,
          host: '127.0.0.1',
          port: 3000,
          allowedHosts: ['localhost', '127.0.0.1'],
          maxSessions: 1000,
          maxSessionsPerClient: 256,
          sessionIdleMs: 600_000,
          maxBodyBytes: 4 * 1024 * 1024,
          maxConnectionsPerClient: 256,
          maxConnectionsPerNetwork: 1024, networkPrefixV4: 24, networkPrefixV6: 48, firstByteTimeoutMs: 5000,
          headersTimeoutMs: 10_000,
          maxSubscriptions: 1024,
          maxParkedCalls: 16,
          resumeEvents: 1000,
          resumeBytes: 262_144,
          resumeRetryMs: 1000,
        },
      },
      grpc: {
        enabled: true, host: '127.0.0.1', port: 50063, maxReceiveMessageBytes: 4 * 1024 * 1024, maxSendMessageBytes: 4 * 1024 * 1024, health: true, reflection: true,
        maxConnectionsPerClient: 256, maxConnectionsPerNetwork: 1024, networkPrefixV4: 24, networkPrefixV6: 48, firstByteTimeoutMs: 5000, idleTimeoutMs: 300_000,
      },
    });
    expect(resolved.defaults).toEqual(DEFAULT_POLICY_DEFAULTS);
    expect(resolved.adminTools).toBe(false);
  });

  it('the embedded defaults load the example tools with the grants of host/config/examples.ts', async () => {
    const loaded = await loadConfig(undefined, { env: {} });
    expect(loaded.file).toBeUndefined();
    expect(loaded.config).toEqual({});
    expect(loaded.warnings).toEqual([]);
    const { resolved } = loaded;
    const byName = new Map(resolved.tools.map((load) => [relative(examplesDir, load.path), load.options]));
    expect([...byName.keys()]).toEqual(readdirWasm(examplesDir));
    if (byName.has('files.wasm')) expect(byName.get('files.wasm')).toEqual(EXAMPLE_LOAD_OPTIONS.files);
    expect(byName.get('net.wasm')).toEqual(EXAMPLE_LOAD_OPTIONS.net);
    expect(byName.get('json.wasm')).toEqual({});
    // Copies, not the shared objects.
    expect(byName.get('net.wasm')).not.toBe(EXAMPLE_LOAD_OPTIONS.net);
    expect(resolved.servers.mcp.http).toEqual({ ...DEFAULT_MCP_HTTP });
    expect(resolved.servers.grpc).toEqual({ ...DEFAULT_GRPC });
    expect(resolved.defaults).toEqual(DEFAULT_POLICY_DEFAULTS);
    expect(resolved).toMatchObject({ logLevel: 'warn', approval: 'never', auditLog: 'stderr', cancelGraceMs: 500, retry: { baseMs: 100, capMs: 2000 }, adminTools: false });
    expect(resolved.httpTools).toEqual([]);
    expect(resolved.mcpServers).toEqual([]);
  });

  it('the embedded defaults say so when the example tools are not built', () => {
    const empty = mkdtempSync(join(scratch, 'no-examples-'));
    const none = embeddedConfig({ env: {}, examplesDir: empty });
    expect(none.resolved.tools).toEqual([]);
    expect(none.warnings).toEqual([expect.stringContaining('the example tools are not built')]);
  });

  it('an empty file means every default and no components', async () => {
    const { file } = writeConfig(['# nothing but a comment']);
    const loaded = await loadConfig(file, { env: {} });
    expect(loaded.config).toEqual({});
    expect(loaded.resolved.tools).toEqual([]);
    expect(loaded.resolved.defaults).toEqual(DEFAULT_POLICY_DEFAULTS);
    expect(loaded.resolved.servers.grpc).toEqual({ ...DEFAULT_GRPC });
  });
});

describe('findConfig', () => {
  it('--config wins, then ./toolhost.yaml, then the embedded defaults', () => {
    const { dir, file } = writeConfig(['admin_tools: true']);
    expect(findConfig(dir, 'other.yaml')).toBe(join(dir, 'other.yaml'));
    expect(findConfig(dir)).toBe(file);
    expect(findConfig(join(dir, 'work'))).toBeUndefined();
  });

  it('a --config file that does not exist is an error naming the file', async () => {
    const missing = join(scratch, 'missing.yaml');
    const error = await loadConfig(findConfig(scratch, missing)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(`${missing}: cannot read the config file (ENOENT)`);
    expect((error as ConfigError).details).toEqual({ file: missing });
  });
});

describe('mistakes are reported at their file, line and column', () => {
  const cases: Array<{ what: string; lines: string[]; line: number; column: number; path: string; says: string[] }> = [
    {
      what: 'a wrong enum value lists the allowed values',
      lines: ['tools:', '  - path: components/tool.wasm', '    isolation: fast'],
      line: 3, column: 16, path: 'tools[0].isolation',
      says: ['must be one of call, conversation, worker', '(got "fast")'],
    },
    {
      what: 'an unknown key is named, with the keys allowed there',
      lines: ['host:', '  log_level: info', '  colour: blue'],
      line: 3, column: 3, path: 'host.colour',
      says: ['host.colour is an unknown key', 'expected one of: log_level, defaults, ceilings'],
    },
    {
      what: 'an unknown top-level key',
      lines: ['tool:', '  - path: components/tool.wasm'],
      line: 1, column: 1, path: 'tool',
      says: ['tool is an unknown key', 'tools'],
    },
    {
      what: 'a missing required key points at the mapping that lacks it',
      lines: ['tools:', '  - path: components/tool.wasm', '  - isolation: call', '    grant: {}'],
      line: 3, column: 5, path: 'tools[1]',
      says: ['is missing the required key "path"'],
    },
    {
      what: 'a wrong type says what was expected and what was found',
      lines: ['host:', '  pool:', '    threads: many'],
      line: 3, column: 14, path: 'host.pool.threads',
      says: ['must be a whole number (got "many")'],
    },
    {
      what: 'a value out of range',
      lines: ['servers:', '  grpc:', '    port: 70000'],
      line: 3, column: 11, path: 'servers.grpc.port',
      says: ['must be at most 65535 (got 70000)'],
    },
    {
      what: 'a bad duration',
      lines: ['tools:', '  - path: components/tool.wasm', '    default_policy:', '      timeout: 5m'],
      line: 4, column: 16, path: 'tools[0].default_policy.timeout',
      says: ['must be a protobuf Duration such as "5s"', '(got "5m")'],
    },
    {
      what: 'a bad label in a grant',
      lines: ['tools:', '  - path: components/tool.wasm', '    grant:', '      network: egress_sometimes'],
      line: 4, column: 16, path: 'tools[0].grant.network',
      says: ['must be a network label', 'DENY_ALL, EGRESS_RESTRICTED, EGRESS_UNRESTRICTED, FULL_ACCESS', '"egress_sometimes"'],
    },
    {
      what: 'a bad label in the host defaults',
      lines: ['host:', '  defaults:', '    privilege_level: root'],
      line: 3, column: 22, path: 'host.defaults.privilege_level',
      says: ['must be a privilege level', 'MINIMAL, DEFAULT, ELEVATED, PRIVILEGED'],
    },
    {
      what: 'a bad label in a default policy',
      lines: ['tools:', '  - path: components/tool.wasm', '    default_policy: { network_policy: open }'],
      line: 3, column: 39, path: 'tools[0].default_policy.network_policy',
      says: ['unknown network_policy "open"'],
    },
    {
      what: 'a bad egress allowlist entry',
      lines: [
        'tools:',
        '  - path: components/tool.wasm',
        '    grant:',
        '      network: EGRESS_RESTRICTED',
        '      egress_allow:',
        '        - api.example.com',
        '        - https://example.com/path',
      ],
      line: 7, column: 11, path: 'tools[0].grant.egress_allow[1]',
      says: ['is not a valid allowlist entry', 'not a URL'],
    },
    {
      what: 'a grant above a ceiling',
      lines: ['host:', '  ceilings:', '    memory_mb: 512', 'tools:', '  - path: components/tool.wasm', '    grant:', '      memory_mb: 1024'],
      line: 7, column: 18, path: 'tools[0].grant.memory_mb',
      says: ['1024 MiB is above host.ceilings.memory_mb (512 MiB)'],
    },
    {
      what: 'a default policy above a ceiling',
      lines: ['host:', '  ceilings: { wall_ms: 60000 }', 'tools:', '  - path: components/tool.wasm', '    default_policy:', '      timeout: 90s'],
      line: 6, column: 16, path: 'tools[0].default_policy.timeout',
      says: ['timeout of 90000 ms is above the host\'s ceiling of 60000 ms'],
    },
    {
      what: 'a host default above its ceiling',
      lines: ['host:', '  defaults:', '    wall_ms: 900000'],
      line: 3, column: 14, path: 'host.defaults.wall_ms',
      says: ['the default wall_ms is 900000 ms, the ceiling 600000 ms'],
    },
    {
      what: 'a default policy above the grant',
      lines: ['tools:', '  - path: components/tool.wasm', '    grant: { privilege: DEFAULT }', '    default_policy: { privilege_level: ELEVATED }'],
      line: 4, column: 40, path: 'tools[0].default_policy.privilege_level',
      says: ['ELEVATED is above the grant\'s privilege DEFAULT'],
    },
    {
      what: 'an env value for a variable outside env_allow',
      lines: ['tools:', '  - path: components/tool.wasm', '    grant:', '      privilege: ELEVATED', '      env_allow: [HOME]', '      env:', '        TOKEN: secret'],
      line: 7, column: 9, path: 'tools[0].grant.env.TOKEN',
      says: ['not in env_allow'],
    },
    {
      what: 'a YAML syntax error',
      lines: ['host:', '  log_level: info', 'tools: [', '  - path: x'],
      line: 4, column: 3, path: '',
      says: ['YAML syntax error'],
    },
    {
      what: 'a duplicate key',
      lines: ['host:', '  log_level: info', '  log_level: warn'],
      line: 3, column: 3, path: '',
      says: ['YAML syntax error', 'unique'],
    },
    {
      what: 'a duplicate MCP server name',
      lines: ['mcp_servers:', '  - name: git', '    command: git-mcp', '  - name: git', '    url: https://mcp.example.com/mcp'],
      line: 4, column: 11, path: 'mcp_servers[1].name',
      says: ['duplicates the name "git"', 'mcp_servers[0]'],
    },
    {
      what: 'a duplicate HTTP tool name',
      lines: [
        'http_tools:',
        '  - { name: weather, description: d, url: "https://a.example/x", input_schema: { type: object } }',
        '  - { name: weather, description: d, url: "https://b.example/x", input_schema: { type: object } }',
      ],
      line: 3, column: 13, path: 'http_tools[1].name',
      says: ['duplicates the name "weather"'],
    },
    {
      what: 'the same component loaded twice',
      lines: ['tools:', '  - path: components/tool.wasm', '  - path: ./components/../components/tool.wasm'],
      line: 3, column: 11, path: 'tools[1].path',
      says: ['already loaded by tools[0]'],
    },
    {
      what: 'a component path that does not exist',
      lines: ['tools:', '  - path: components/missing.wasm'],
      line: 2, column: 11, path: 'tools[0].path',
      says: ['does not exist', 'components/missing.wasm', 'relative paths are resolved against'],
    },
    {
      what: 'an MCP server with neither command nor url',
      lines: ['mcp_servers:', '  - name: lonely', '    args: [x]'],
      line: 2, column: 5, path: 'mcp_servers[0]',
      says: ['missing the required key "command"', '"url"'],
    },
    {
      what: 'an MCP server with both command and url',
      lines: ['mcp_servers:', '  - name: both', '    url: https://mcp.example.com/mcp', '    command: node'],
      line: 4, column: 5, path: 'mcp_servers[0].command',
      says: ['unknown key', 'not both'],
    },
    {
      what: 'an HTTP tool whose input schema does not compile',
      lines: ['http_tools:', '  - name: bad', '    description: d', '    url: https://a.example/x', '    input_schema: { type: object, properties: { a: { type: nope } } }'],
      line: 5, column: 19, path: 'http_tools[0].input_schema',
      says: ['must be a JSON Schema that compiles'],
    },
    {
      what: 'an empty section where a mapping was expected',
      lines: ['tools:', '  - path: components/tool.wasm', '    grant:'],
      line: 3, column: 11, path: 'tools[0].grant',
      says: ['must be a mapping (got an empty value)'],
    },
    {
      what: 'both servers on one port',
      lines: ['servers:', '  mcp:', '    http: { port: 50063 }'],
      line: 3, column: 19, path: 'servers.mcp.http.port',
      says: ['127.0.0.1:50063'],
    },
    {
      what: 'two named tokens for one principal',
      lines: ['servers:', '  auth:', '    tokens:', '      - { principal: ci, token_env: A }', '      - { principal: ci, token_env: B }'],
      line: 5, column: 22, path: 'servers.auth.tokens[1].principal',
      says: ['duplicates the principal "ci"'],
    },
  ];

  it.each(cases)('$what', async ({ lines, line, column, path, says }) => {
    const { error, file } = await configError(lines);
    expect(error.message.startsWith(`${file}:${line}:${column}: `), error.message).toBe(true);
    if (path !== '') expect(error.message).toContain(`: ${path} `);
    for (const words of says) expect(error.message).toContain(words);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.details).toMatchObject({ file, line, column, path });
    expect(error.details.problems?.[0]).toBe(error.message);
  });

  it('every problem of a stage is listed, in document order', async () => {
    const { error, file } = await configError(['host:', '  approval: sometimes', 'tools:', '  - isolation: call', 'admin_tools: yes']);
    expect(error.details.problems).toEqual([
      `${file}:2:13: host.approval must be one of never, always, ask (got "sometimes")`,
      `${file}:4:5: tools[0] is missing the required key "path"`,
      `${file}:5:14: admin_tools must be true or false (got "yes")`,
    ]);
  });

  it('a ConfigError is a ToolhostError, and only a config error is a ConfigError', async () => {
    const { error } = await configError(['admin_tools: 1']);
    expect(error).toBeInstanceOf(ToolhostError);
    expect(error.name).toBe('ConfigError');
    expect(new ToolhostError('INVALID_INPUT', 'x')).not.toBeInstanceOf(ConfigError);
  });

  it('messages show the file relative to the working directory when it is below it', async () => {
    const { dir } = writeConfig(['admin_tools: 1']);
    const error = await loadConfig('toolhost.yaml', { cwd: dir }).catch((thrown: unknown) => thrown);
    expect((error as ConfigError).message).toMatch(/^toolhost\.yaml:1:14: admin_tools must be true or false/);
    expect((error as ConfigError).details.file).toBe(join(dir, 'toolhost.yaml'));
  });
});

describe('resolution', () => {
  it('relative paths resolve against the config file\'s directory, not the working directory', async () => {
    const { dir, file } = writeConfig([
      'host:',
      '  audit_log: logs/audit.jsonl',
      '  pool: { cache_dir: .cache }',
      'tools:',
      '  - path: components',
      '    grant: { worktree: ./work, privilege: DEFAULT }',
      'mcp_servers:',
      '  - name: local',
      '    command: ./components/tool.wasm',
      '    cwd: work',
      '  - name: onpath',
      '    command: node',
    ]);
    const { resolved } = await loadConfig(relative(process.cwd(), file), { cwd: process.cwd() });
    expect(resolved.baseDir).toBe(dir);
    expect(resolved.tools[0]?.path).toBe(join(dir, 'components'));
    expect(resolved.tools[0]?.options.grant?.worktree).toBe(join(dir, 'work'));
    expect(resolved.sandbox.cacheDir).toBe(join(dir, '.cache'));
    expect(resolved.auditLog).toEqual({ file: join(dir, 'logs', 'audit.jsonl') });
    expect(resolved.mcpServers[0]).toMatchObject({ transport: 'stdio', command: join(dir, 'components', 'tool.wasm'), cwd: join(dir, 'work') });
    expect(resolved.mcpServers[1]).toMatchObject({ transport: 'stdio', command: 'node', cwd: dir, args: [], env: {} });
  });

  it('labels are case-insensitive and come out upper-case', async () => {
    const { file } = writeConfig([
      'host:',
      '  defaults: { network_policy: Deny_All, privilege_level: minimal }',
      'tools:',
      '  - path: components/tool.wasm',
      '    grant: { network: egress_restricted, privilege: Elevated, egress_allow: [api.example.com] }',
      '    default_policy: { network_policy: egress_restricted, privilege_level: default }',
    ]);
    const { resolved, warnings } = await loadConfig(file);
    expect(warnings).toEqual([]);
    expect(resolved.defaults).toMatchObject({ networkPolicy: 'DENY_ALL', privilegeLevel: 'MINIMAL' });
    expect(resolved.tools[0]?.options.grant).toEqual({ network: 'EGRESS_RESTRICTED', privilege: 'ELEVATED', egressAllow: ['api.example.com'] });
    // The default policy goes to the registry as written; the registry parses it (case-insensitively).
    expect(resolved.tools[0]?.options.defaultPolicy).toEqual({ network_policy: 'egress_restricted', privilege_level: 'default' });
  });

  it('host settings become registry options in camelCase', async () => {
    const { file } = writeConfig([
      'host:',
      '  log_level: debug',
      '  defaults: { wall_ms: 5000, cpu_ms: 2000, memory_mb: 64 }',
      '  ceilings: { wall_ms: 60000, cpu_ms: 30000, memory_mb: 1024, max_retries: 2 }',
      '  cancel_grace_ms: 250',
      '  retry: { base_ms: 50, cap_ms: 400 }',
      '  pool: { threads: 2, max_queue: 10, max_heap_mb: 128, idle_timeout_ms: 1000, wait_behind: { average_ms: 0.5 }, spin_us: 40, containment: process, kept_instances_mb: 100 }',
      '  output_limits: { stdio_bytes: 1024, max_events: 50, max_event_bytes: 4096, max_result_bytes: 8192 }',
      '  guest_limits: { handles_per_call: 7, host_calls_per_call: 9, spare_ms: 300, state_conversations: 5, state_value_bytes: 100, state_total_bytes: 1048576 }',
      '  approval: always',
      'tools:',
      '  - path: components/tool.wasm',
      '    isolation: conversation',
      '    grant: { memory_mb: 32 }',
      'http_tools:',
      '  - name: weather',
      '    description: The weather.',
      '    url: https://weather.example.com/v1',
      '    method: POST',
      '    headers: { Accept: application/json }',
      '    timeout_ms: 3000',
      '    input_schema: { type: object, properties: { city: { type: string } } }',
      'mcp_servers:',
      '  - name: remote',
      '    url: https://mcp.example.com/mcp',
      '    bearer_token_env: REMOTE_TOKEN',
      '    timeout_ms: 9000',
      '    protocol: 2026-07-28',
      'servers:',
      '  mcp: { http: { enabled: false, port: 0, bearer_token_env: MCP_TOKEN, allowed_origins: [https://app.example], max_sessions: 10, max_sessions_per_client: 2, session_idle_ms: 5000, max_body_bytes: 2048, max_connections: 50, max_connections_per_client: 5, headers_timeout_ms: 2000 } }',
      '  grpc: { host: 0.0.0.0, port: 0, max_receive_message_bytes: 6291456, max_send_message_bytes: 2048, health: false, reflection: false, max_connections: 60, max_connections_per_client: 6, max_connections_per_network: 12, network_prefix_v4: 16, network_prefix_v6: 56, first_byte_timeout_ms: 900, idle_timeout_ms: 7000 }',
      '  auth: { tokens: [{ principal: ci-agent, token_env: CI_TOKEN }] }',
      'admin_tools: true',
    ]);
    const { resolved } = await loadConfig(file, { env: {} });
    expect(resolved.logLevel).toBe('debug');
    expect(resolved.defaults).toEqual({
      ...DEFAULT_POLICY_DEFAULTS,
      wallMs: 5000, cpuMs: 2000, memoryMb: 64, maxWallMs: 60000, maxCpuMs: 30000, maxMemoryMb: 1024, maxRetries: 2,
    });
    expect(resolved.cancelGraceMs).toBe(250);
    expect(resolved.retry).toEqual({ baseMs: 50, capMs: 400 });
    expect(resolved.sandbox).toEqual({
      threads: 2, maxQueue: 10, maxHeapMb: 128, idleTimeoutMs: 1000, waitBehind: { averageMs: 0.5 }, spinMicros: 40, spareTimeoutMs: 300, containment: 'process', keptInstanceMb: 100,
      outputLimits: { stdioBytes: 1024, maxEvents: 50, maxEventBytes: 4096, maxResultBytes: 8192, maxHostCalls: 9, maxHandles: 7 },
    });
    expect(resolved.stateLimits).toEqual({ maxConversations: 5, maxValueBytes: 100, maxTotalBytes: 1048576 });
    expect(resolved.approval).toBe('always');
    expect(resolved.tools[0]?.options).toEqual({ isolation: 'conversation', grant: { memoryMb: 32 } });
    expect(resolved.httpTools).toEqual([expect.objectContaining({
      name: 'weather', description: 'The weather.', url: 'https://weather.example.com/v1', method: 'POST',
      headers: { Accept: 'application/json' }, timeoutMs: 3000, grant: {},
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    })]);
    expect(resolved.mcpServers).toEqual([expect.objectContaining({
      transport: 'http', name: 'remote', url: 'https://mcp.example.com/mcp', headers: {}, bearerTokenEnv: 'REMOTE_TOKEN', timeoutMs: 9000, protocol: '2026-07-28', grant: {},
    })]);
    expect(resolved.servers).toEqual({
      tokens: [{ principal: 'ci-agent', tokenEnv: 'CI_TOKEN' }],
      mcp: {
        http: {
          enabled: false, host: '127.0.0.1', port: 0, bearerTokenEnv: 'MCP_TOKEN', allowedOrigins: ['https://app.example'],
          maxSessions: 10, maxSessionsPerClient: 2, sessionIdleMs: 5000, maxBodyBytes: 2048, maxConnections: 50, maxConnectionsPerClient: 5, maxConnectionsPerNetwork: 1024, networkPrefixV4: 24, networkPrefixV6: 48, firstByteTimeoutMs: 5000, headersTimeoutMs: 2000, maxSubscriptions: 1024, maxParkedCalls: 16, resumeEvents: 1000, resumeBytes: 262_144, resumeRetryMs: 1000,
        },
      },
      // gRPC takes the MCP server's token unless it names its own.
      grpc: {
        enabled: true, host: '0.0.0.0', port: 0, maxReceiveMessageBytes: 6291456, maxSendMessageBytes: 2048, bearerTokenEnv: 'MCP_TOKEN', health: false, reflection: false,
        maxConnections: 60, maxConnectionsPerClient: 6, maxConnectionsPerNetwork: 12, networkPrefixV4: 16, networkPrefixV6: 56, firstByteTimeoutMs: 900, idleTimeoutMs: 7000,
      },
    });
    expect(resolved.adminTools).toBe(true);
  });

  it('TOOLHOST_LOG overrides host.log_level', async () => {
    const { file } = writeConfig(['host: { log_level: error }']);
    expect((await loadConfig(file, { env: { TOOLHOST_LOG: 'trace' } })).resolved.logLevel).toBe('trace');
    expect((await loadConfig(file, { env: {} })).resolved.logLevel).toBe('error');
  });

  it('approval and the audit log become the registry\'s hook and log; an embedder\'s own win', async () => {
    const { dir, file } = writeConfig(['host:', '  approval: always', '  audit_log: audit/log.jsonl']);
    const { resolved } = await loadConfig(file, { env: {} });
    const options = registryOptions(resolved, { logger: silentLogger });
    expect(options.logger).toBe(silentLogger);
    const request = { callId: 'c', tool: 't', network: 'FULL_ACCESS', privilege: 'MINIMAL', reasons: [] } as const;
    expect(await options.approve?.({ ...request, reasons: [...request.reasons] })).toBe(true);
    options.audit?.record({ callId: 'c', tool: 't', decision: 'denied', code: 'PERMISSION_DENIED' });
    const line = readFileSync(join(dir, 'audit', 'log.jsonl'), 'utf8');
    expect(JSON.parse(line)).toMatchObject({ audit: true, callId: 'c', decision: 'denied' });

    const own = () => false;
    const audit = new MemoryAuditLog();
    const overridden = registryOptions(resolved, { approve: own, audit, logger: silentLogger });
    expect(overridden.approve).toBe(own);
    expect(overridden.audit).toBe(audit);
    expect(overridden.defaults).toEqual(resolved.defaults);
  });

  it('warns about what works but probably not as meant', async () => {
    const { file } = writeConfig([
      'tools:',
      '  - path: components/tool.wasm',
      '    grant: { privilege: PRIVILEGED, network: FULL_ACCESS }',
      'servers:',
      '  mcp: { http: { host: 0.0.0.0 } }',
    ]);
    const { warnings } = await loadConfig(file);
    expect(warnings).toEqual([
      expect.stringMatching(new RegExp(`^${escape(file)}:3:25: tools\\[0\\]\\.grant\\.privilege allows PRIVILEGED, which needs approval`)),
      expect.stringMatching(new RegExp(`^${escape(file)}:3:46: tools\\[0\\]\\.grant\\.network allows FULL_ACCESS`)),
      expect.stringMatching(new RegExp(`^${escape(file)}:5:24: servers\\.mcp\\.http\\.host serves MCP on 0\\.0\\.0\\.0.*without a bearer token`)),
    ]);
  });
});

describe('the resolved values run', () => {
  it.skipIf(!hasCGuests)('the example file\'s components load into a registry with their grants', async () => {
    const { resolved } = await loadConfig(join(root, 'toolhost.example.yaml'), { env: {} });
    const registry = createRegistry(registryOptions(resolved, {
      logger: silentLogger,
      audit: new MemoryAuditLog(),
      sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 2 },
    }));
    try {
      for (const load of resolved.tools) await registry.registerWasmTools(load.path, load.options);
      expect(registry.names()).toEqual(expect.arrayContaining(['sha256', 'json_query', 'word_count', 'list_dir', 'http_get']));
      const sha = await registry.execute('sha256', { text: 'abc' });
      expect(sha.isError).toBeFalsy();
      // files.wasm's default policy (worktree_required) came from the file.
      await expect(registry.execute('list_dir', {})).rejects.toMatchObject({ code: 'WORKTREE_NOT_BOUND' });
    } finally {
      await registry.close();
    }
    expect(existsSync(example('ctools'))).toBe(true);
  });
});

function readdirWasm(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.endsWith('.wasm')).sort();
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
