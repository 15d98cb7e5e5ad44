#!/usr/bin/env node
/**
 * The `toolhost` command. A contract scripts rely on:
 * - stdout carries only results (JSON); logs go to stderr;
 * - exit 0 on success, 1 when a call or load fails (with `{"error":{code,message}}` on stderr),
 *   2 on a usage error.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { Host } from '../compose/host.js';
import { toErrorData, type ToolErrorData } from '../base/errors.js';
import { isTerminal } from '../core/events.js';
import type { AuditEntry, AuditLog } from '../policy/audit.js';
import { MemoryAuditLog } from '../policy/memory-audit-log.js';
import type { BenchCommandOptions } from './bench.js';
import type { ServeOptions } from './serve.js';
import { UsageError } from './usage-error.js';
import { tuneGarbageCollection } from '../base/gc-tuning.js';
import { checkRedisUrl, clusterNodes } from './redis-flags.js';
import { addPublishCommand, addTrustOptions, collect, interruptible, trustOf, unverifiedComponents, type TrustFlags } from './distribution.js';
import { addPullCommands } from './pull.js';
import { addGcCommand } from './gc.js';
import { progressHook, stopProgress } from './progress-hook.js';
import { callOutput } from './call-output.js';
import { checkWorktree, parseBytes, parseJsonOption, parsePort } from './option-values.js';


/** The one `{"error": ...}` object on stderr; the call's audit entries (a denial's, say) ride in it as `audit`. */
function printError(data: ToolErrorData, audit: readonly AuditEntry[] = []): void {
  const error: Record<string, unknown> = { code: data.code, message: data.message };
  if (data.details !== undefined) error.details = data.details;
  if (data.callId !== undefined) error.callId = data.callId;
  if (audit.length > 0) error.audit = audit;
  process.stderr.write(`${JSON.stringify({ error })}\n`);
}

/**
 * The host for `list` and `call`: the one `serve` would build for the same
 * `--config` and `--load` (see `loadHostConfig`). Config warnings go to
 * stderr. One call needs one worker thread, unless the config says otherwise;
 * and (`forTool`) only what can serve its tool.
 */
async function open(loads: string[], configPath: string | undefined, trust: TrustFlags, audit?: AuditLog, forTool?: string): Promise<Host> {
  // The host's modules load here, not at start: `--help` and usage errors never pay for them.
  const { createHost, loadHostConfig } = await import('../compose/host.js');
  const options = { load: loads, ...(configPath === undefined ? {} : { configPath }), trust: trustOf(trust) };
  const { config, warnings } = await loadHostConfig(options);
  for (const warning of warnings) process.stderr.write(`toolhost: ${warning}\n`);
  // An audit log on stderr (the default) is collected instead, so a failed call's stderr stays one error object.
  const overrides = audit !== undefined && config.auditLog === 'stderr' ? { overrides: { audit } } : {};
  // Ctrl-C while remote components load ends the loads (CANCELLED) rather than waiting on a registry.
  return interruptible((signal) => createHost({ ...config, sandbox: { threads: 1, ...config.sandbox } }, { ...options, ...overrides, signal, ...(forTool === undefined ? {} : { forTool }) }));
}

async function list(options: { load: string[]; json?: boolean; config?: string } & TrustFlags): Promise<number> {
  const [host, { metadataLines }] = await Promise.all([open(options.load, options.config, options), import('./inspect.js')]);
  try {
    const definitions = host.registry.definitions();
    const unverified = await unverifiedComponents(host, options.load);
    for (const source of unverified.values()) process.stderr.write(`toolhost: warning: ${source} is loaded WITHOUT signature verification (--insecure-skip-verify / verify.skip)\n`);
    if (definitions.length === 0) process.stderr.write('toolhost: no tools: the config names none (and no --load PATH was given)\n');
    if (options.json) {
      process.stdout.write(`${JSON.stringify(definitions, null, 2)}\n`);
    } else {
      for (const tool of definitions) {
        const flags = [tool.executionMode, tool.idempotent ? 'idempotent' : '', tool.streaming ? 'streaming' : ''].filter(Boolean).join(', ');
        const warning = tool.source === undefined ? undefined : unverified.get(tool.source);
        process.stdout.write(`${tool.name}  (${flags}${tool.source ? `; from ${tool.source}` : ''})\n  ${tool.description}\n${metadataLines(tool).map((line) => `  ${line}\n`).join('')}  input: ${JSON.stringify(tool.inputSchema)}\n`);
        if (warning !== undefined) process.stdout.write(`  WARNING: UNVERIFIED: loaded from ${warning} without checking its signature (--insecure-skip-verify / verify.skip)\n`);
      }
    }
    return 0;
  } finally {
    await host.close();
  }
}

interface CallCommandOptions extends TrustFlags {
  args: string;
  config?: string;
  load: string[];
  policy?: string;
  conversation?: string;
  session?: string;
  agent?: string;
  worktree?: string;
  events?: boolean;
}

async function call(name: string, options: CallCommandOptions): Promise<number> {
  const args = parseJsonOption(options.args, '--args');
  const policy = options.policy === undefined ? undefined : parseJsonOption(options.policy, '--policy');
  if (policy !== undefined && (typeof policy !== 'object' || policy === null || Array.isArray(policy))) {
    throw new UsageError('--policy must be a JSON object (an ExecutionPolicy)');
  }
  if (options.worktree !== undefined) checkWorktree(options.worktree);
  const audit = new MemoryAuditLog();
  // Only what can serve `name` is loaded (the answer is the same as with every tool: see compose/tool-scope.ts).
  const host = await open(options.load, options.config, options, audit, name);
  if (options.worktree !== undefined) warnUnseenWorktree(host.registry.get(host.registry.resolveName(name) ?? name));
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const stream = host.registry.stream(name, args, {
      signal: controller.signal,
      ...(policy === undefined ? {} : { policy: policy as Record<string, unknown> }),
      ...(options.conversation === undefined ? {} : { conversationId: options.conversation }),
      ...(options.session === undefined ? {} : { sessionId: options.session }),
      ...(options.agent === undefined ? {} : { agentName: options.agent }),
      ...(options.worktree === undefined ? {} : { workingDir: resolve(options.worktree) }),
    });
    for await (const event of stream) {
      if (options.events) process.stdout.write(`${JSON.stringify(event)}\n`);
      if (!isTerminal(event)) continue;
      if (event.type === 'result') {
        if (!options.events) process.stdout.write(`${JSON.stringify(callOutput(event.data, event.result))}\n`);
        // The audit trail of an allowed call (ELEVATED and up) still reaches stderr, one JSON line each.
        for (const entry of audit.entries) process.stderr.write(`${JSON.stringify({ audit: entry })}\n`);
        return 0;
      }
      const error: ToolErrorData = { code: event.code, message: event.message, callId: event.callId };
      if (event.details !== undefined) error.details = event.details;
      printError(error, audit.entries);
      return 1;
    }
    printError({ code: 'INTERNAL', message: 'the call ended without a terminal event' });
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await host.close();
  }
}

/**
 * `--worktree DIR` reaches a guest only under a privilege that mounts it (DEFAULT and up), within the tool's grant:
 * a tool granted MINIMAL never sees it, so say so on stderr rather than let the call silently see nothing.
 */
function warnUnseenWorktree(tool: { name: string; grant?: { privilege?: string } } | undefined): void {
  if (tool === undefined || String(tool.grant?.privilege ?? 'MINIMAL').toUpperCase() !== 'MINIMAL') return;
  process.stderr.write(`toolhost: --worktree is ignored: ${tool.name} is granted no worktree (privilege MINIMAL). Grant one in toolhost.yaml (tools: - path: ... grant: { privilege: DEFAULT } default_policy: { privilege_level: DEFAULT }) and pass --config\n`);
}

async function inspect(path: string, options: { json?: boolean; config?: string } & TrustFlags): Promise<number> {
  const { inspectComponent } = await import('./inspect.js');
  const report = await inspectComponent(path, options);
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const remote = report.remote === undefined ? '' : `# manifest ${report.remote.manifestDigest ?? '-'}, signer ${report.remote.signedBy}\n`;
    process.stdout.write(`# ${report.path}\n# sha256 ${report.id}\n${remote}\n${report.wit.trimEnd()}\n\n# tools\n${JSON.stringify(report.tools, null, 2)}\n`);
  }
  return 0;
}

/** The package's version (package.json sits two levels above dist/host/cli/ and host/cli/). */
function ownVersion(): string {
  for (const up of ['../../../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'toolhost' && manifest.version) return manifest.version;
    } catch {
      // try the next one
    }
  }
  return 'unknown';
}

const LANGUAGES = ['ts', 'js', 'c'];
const LOAD_HELP = 'a component file or a directory of them, or oci://… / https://…#sha256=… (repeatable); added to the tools of the config (./toolhost.yaml or --config) when there is one, else used instead of the example tools';

function program(): Command {
  const root = new Command('toolhost')
    .description('Run WebAssembly component tools and native tools behind one call path.')
    .version(ownVersion(), '-V, --version', 'print toolhost\'s version')
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });

  root
    .command('list')
    .description('list the tools with their schemas')
    .option('--load <path>', LOAD_HELP, collect, [])
    .option('--json', 'print the definitions as JSON')
    .option('--config <path>', 'the config file (default: ./toolhost.yaml if present, else embedded defaults)');
  addTrustOptions(root.commands.at(-1)!)
    .action(async (options: { load: string[]; json?: boolean; config?: string } & TrustFlags) => {
      process.exitCode = await list(options);
    });

  root
    .command('call')
    .description('call a tool and print its result as JSON')
    .argument('<name>', 'the tool to call')
    .option('--args <json>', 'the arguments, as JSON', '{}')
    .option('--load <path>', LOAD_HELP, collect, [])
    .option('--config <path>', 'the config file (default: ./toolhost.yaml if present, else embedded defaults)')
    .option('--policy <json>', 'an ExecutionPolicy as JSON (proto field names, e.g. {"timeout":"1.5s","budget_cpu_ms":100})')
    .option('--conversation <id>', 'the conversation id (scopes the tools\' state)')
    .option('--worktree <dir>', 'the worktree bound to the call (seen by the guest at /worktree, per its privilege)')
    .addOption(new Option('--session <id>', 'the session id').hideHelp())
    .addOption(new Option('--agent <name>', 'the calling agent\'s name').hideHelp())
    .option('--events', 'print every event as a JSON line (start, progress, delta, log, result, error); without it, the result: the tool\'s JSON, or {content, structuredContent} when it returned content items');
  addTrustOptions(root.commands.at(-1)!)
    .action(async (name: string, options: CallCommandOptions) => {
      process.exitCode = await call(name, options);
    });

  root
    .command('serve')
    .description('serve the tools over MCP (Streamable HTTP or stdio) and gRPC until SIGINT/SIGTERM')
    .option('--config <path>', 'the config file (default: ./toolhost.yaml if present, else embedded defaults)')
    .addOption(new Option('--mcp <transport>', 'MCP transport').choices(['http', 'stdio', 'none']))
    .option('--port <port>', 'MCP HTTP port (0: any free port)', parsePort)
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--load <path>', 'extra components, on top of the config\'s (repeatable)', collect, [])
    .option('--worktree <dir>', 'the worktree bound to every call')
    .option('--grpc', 'serve the gRPC ToolService (default: on, except with --mcp stdio)')
    .option('--no-grpc', 'do not serve gRPC')
    .option('--grpc-port <port>', 'gRPC port (default 50063)', parsePort)
    .option('--redis <url>', 'join a fleet of hosts on this Redis (redis://host:port): shared state, cancel from any host, fleet-wide caps')
    .option('--redis-cluster <urls>', 'join a fleet of hosts on this Redis Cluster (seed nodes: redis://h:p,redis://h:p); instead of --redis')
    .option('--grpc-max-receive-bytes <bytes>', 'largest gRPC request accepted (default: servers.grpc.max_receive_message_bytes, 4 MiB)', parseBytes)
    .option('--grpc-max-send-bytes <bytes>', 'largest gRPC message sent (default: servers.grpc.max_send_message_bytes, 4 MiB)', parseBytes)
    .addOption(new Option('--containment <where>', 'where the sandbox workers run: process (a supervised child process, restarted if a fatal error ends it) or thread (the host process); default: host.pool.containment, else process').choices(['process', 'thread']));
  addTrustOptions(root.commands.at(-1)!)
    .action(async (options: Omit<ServeOptions, 'load' | 'redisCluster'> & { load: string[]; redisCluster?: string }) => {
      if (options.redis !== undefined) checkRedisUrl(options.redis);
      const redisCluster = clusterNodes(options);
      if (options.worktree !== undefined) checkWorktree(options.worktree);
      // The servers (MCP SDK, grpc-js) load only when something is served.
      const { serve } = await import('./serve.js');
      process.exitCode = await serve({ ...options, redisCluster });
    });

  addPublishCommand(root);
  addPullCommands(root);
  addGcCommand(root);
  progressHook(root);

  root
    .command('fleet')
    .description('list the hosts of a fleet on Redis: their load and the calls they run')
    .option('--redis <url>', 'the fleet\'s Redis (default: the config\'s cluster.redis)')
    .option('--redis-cluster <urls>', 'the fleet\'s Redis Cluster, seed nodes redis://h:p,redis://h:p (default: the config\'s cluster.redis_cluster)')
    .option('--config <path>', 'the config file (default: ./toolhost.yaml if present)')
    .option('--json', 'print the hosts as JSON')
    .action(async (options: { redis?: string; redisCluster?: string; config?: string; json?: boolean }) => {
      if (options.redis !== undefined) checkRedisUrl(options.redis);
      const redisCluster = clusterNodes(options);
      const { fleet } = await import('./fleet.js');
      process.exitCode = await fleet({ ...options, redisCluster });
    });

  root
    .command('inspect')
    .description('print a component\'s WIT world and the tools it describes (title, annotations, icons); a remote source is fetched and verified as a load would')
    .argument('<path>', 'the component file, or oci://… / https://…#sha256=…')
    .option('--json', 'print a JSON report')
    .option('--config <path>', 'the config file (its distribution trust, store and lock)');
  addTrustOptions(root.commands.at(-1)!)
    .action(async (path: string, options: { json?: boolean; config?: string } & TrustFlags) => {
      process.exitCode = await inspect(path, options);
    });

  root
    .command('bench')
    .description('measure a tool\'s per-call overhead against a bare piscina round trip (the floor), under each isolation mode; without TOOL, the standard suite on the example tools (with Extism as a peer, budget precision, cold starts and the targets)')
    .argument('[tool]', 'the tool to measure (default: the standard suite)')
    .option('--args <json>', 'the tool\'s arguments, as JSON (default {})')
    .option('--load <path>', 'a component file or a directory of them holding TOOL (repeatable; default: the config\'s tools)', collect, [])
    .option('--config <path>', 'the config file (default: ./toolhost.yaml if present, else embedded defaults)')
    .option('--calls <n>', 'calls per row, after a warm-up (default 2000)')
    .option('--js-calls <n>', 'standard suite: calls per row for the componentize-js tool (default 200)')
    .option('--concurrency <list>', 'calls in flight, one row each (default 1,8)')
    .option('--isolation <list>', 'isolation modes to measure: call, worker, conversation (default all three)')
    .option('--threads <n>', 'worker threads of the host and the floor (default: the machine\'s cores)')
    .option('--json', 'print the results as JSON instead of the table')
    .option('--report <file.html>', 'also write a self-contained HTML page with charts')
    .option('--budget-samples <n>', 'standard suite: spinning calls per 50 and 200 ms budget (default 20)')
    .option('--growth-calls <n>', 'calls of the no-growth check in the default isolation, with the RSS of kept instances (default 100000 in the standard suite, none for a TOOL; 0 leaves it out)')
    .option('--paired-rounds <n>', 'rounds of the paired phase: the floor and the rows the targets read (with a TOOL, its rows) open at once and measured in alternating blocks; the targets read it (default 5; 0 leaves it out)')
    .option('--no-budgets', 'standard suite: leave out the budget-precision rows')
    .option('--no-cold-start', 'leave out the cold starts (new processes, with and without the transpile cache)')
    .option('--no-peers', 'standard suite: leave out the Extism rows')
    .option('--quiet', 'no progress lines on stderr')
    .option('--trace', 'trace every call (OpenTelemetry, 100 % sampled) to an OTLP/HTTP sink on loopback, to measure what tracing costs (also TOOLHOST_BENCH_TRACE=1)')
    .option('--scale <n>', 'instead: N distinct components (half C, half componentize-js) on one host, against the goals S1-S4 of sizing (idle cost, ready time and RSS, cold first calls, a working set over the memory budget); --calls sets the working set\'s calls')
    .option('--distinct', 'with --scale N: N distinct JS tools (each its own componentize-js build of its own source, kept by source hash in the bench\'s directory) and N/4 C tools, against the goals D1-D5 (ready time and RSS, per-tool RSS, first and second calls, JS against the floor, disk); exits 1 when a goal is missed')
    .addHelpText('after', `
Examples:
  toolhost bench                                   the standard suite, with the targets (what npm run bench runs)
  toolhost bench --scale 500 --report scale.html   500 components on one host (the first run transpiles them: minutes)
  toolhost bench --scale 20 --distinct             20 distinct JS tools (+5 C) built as authors build them (the first run: minutes)
  toolhost bench mytool --load my.wasm --args '{"text":"hi"}' --report bench.html
  toolhost bench sha256 --args '{"text":"abc"}' --isolation call,worker --concurrency 1,4,16 --json`)
    .action(async (tool: string | undefined, options: BenchCommandOptions) => {
      // The measurement engine loads only when a benchmark runs.
      const { bench } = await import('./bench.js');
      process.exitCode = await bench(tool, options);
    });

  root
    .command('init')
    .description('start a tool project in DIR (a new or empty directory) that builds and passes its own test')
    .argument('<dir>', 'the project directory')
    .addOption(new Option('--lang <lang>', 'the guest language').choices(LANGUAGES).default('ts'))
    .option('--name <name>', 'the component\'s name (default: the directory\'s name); the tool is named after it')
    .option('--toolhost <spec>', 'the toolhost dependency to write into package.json (default: this toolhost)')
    .action(async (dir: string, options: { lang: 'ts' | 'js' | 'c'; name?: string; toolhost?: string }) => {
      const { init } = await import('./author.js');
      process.exitCode = await init(dir, options);
    });

  root
    .command('build')
    .description('build the tool project in DIR into one component, check it against the tool world and print its tools')
    .argument('[dir]', 'the project directory', '.')
    .option('--out <file>', 'where to write the component (default: DIR/dist/<name>.wasm)')
    .option('--json', 'print a JSON report')
    .action(async (dir: string, options: { out?: string; json?: boolean }) => {
      const { build } = await import('./author.js');
      process.exitCode = await build(dir, options);
    });

  root
    .command('dev')
    .description('build the tool project in DIR (type-checking TypeScript first), serve it over MCP under its toolhost.yaml and rebuild and reload it on every change')
    .argument('[dir]', 'the project directory', '.')
    .addOption(new Option('--mcp <transport>', 'MCP transport').choices(['stdio', 'http']).default('stdio'))
    .option('--port <port>', 'MCP HTTP port (default 3000; 0: any free port)', parsePort)
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--config <file>', 'the host config the tool runs under: its tools entry for the built component gives the grant (default: DIR/toolhost.yaml when present)')
    .option('--worktree <dir>', 'the worktree of every call (over the grant\'s own)')
    .action(async (dir: string, options: { mcp: 'stdio' | 'http'; port?: number; host?: string; config?: string; worktree?: string }) => {
      const { dev } = await import('./dev.js');
      process.exitCode = await dev(dir, options);
    });

  root
    .command('doctor')
    .description('check Node, the C and JS guest toolchains, the cache and the example tools; say how to fix what is missing')
    .option('--json', 'print a JSON report')
    .action(async (options: { json?: boolean }) => {
      const { doctor } = await import('./doctor.js');
      process.exitCode = await doctor(options);
    });

  return root;
}

async function main(argv: string[]): Promise<void> {
  tuneGarbageCollection();
  try {
    await program().parseAsync(argv).finally(stopProgress);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every other parse problem is a usage error.
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    if (error instanceof Error && error.name === 'BuildError') {
      // The author's commands (init, build) say what went wrong in prose: the message is the whole story.
      process.stderr.write(`toolhost: ${error.message}\n`);
      process.exitCode = 1;
      return;
    }
    if (error instanceof UsageError) {
      printError({ code: 'INVALID_INPUT', message: error.message });
      process.stderr.write('usage: toolhost --help\n');
      process.exitCode = 2;
      return;
    }
    printError(toErrorData(error));
    process.exitCode = 1;
  }
}

await main(process.argv);
