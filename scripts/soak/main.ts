/**
 * `npm run soak`: N mixed calls (honest, hostile, cancelled, timed out, over
 * budget, bad input) through the library and both servers of one host at
 * once, then the report: calls lost and duplicated terminals (both must be
 * 0), the host's RSS, heap, handles and file descriptors at start, middle,
 * end and peak. Loopback only; bounded in time by --max-seconds.
 *
 *   npm run soak                                   100,000 calls
 *   npm run soak -- --calls 3000 --max-seconds 50  the short one .ci/run runs
 *   npm run soak -- --json                         the report as JSON on stdout
 *
 * The host runs in a process of its own (host.ts, forked with --expose-gc):
 * it serves MCP and gRPC, runs the library calls it is told to make, and
 * keeps the ledger of accepted calls and terminal events. This process drives
 * the MCP (SDK client) and gRPC (grpc-js) calls, counts one answer per
 * request, samples the host and writes the report. Exit 1 when a call was
 * lost or ended twice, a request got no answer or two, an honest call failed,
 * or the host died.
 */
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GrpcDriver } from './grpc-driver.js';
import type { LedgerTotals } from './ledger.js';
import { McpDriver } from './mcp-driver.js';
import { ClientTally, NO_ANSWER, type CallOutcome } from './outcome.js';
import { plannedCall, type PlannedCall } from './plan.js';
import type { FromHost, HostArgs, HostSample, ToHost } from './protocol.js';
import { formatReport, verdict, type PeakFigures, type SoakReport } from './report.js';
import { soakConfig } from './soak-config.js';

/** dist/scripts/soak/ → the package root. */
const root = fileURLToPath(new URL('../../../', import.meta.url));

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '48' },
    'max-seconds': { type: 'string', default: '1800' },
    seed: { type: 'string', default: '1' },
    'mcp-sessions': { type: 'string', default: '8' },
    'grpc-channels': { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const positive = (name: string, text: string | undefined): number => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer (got ${text})`);
  return value;
};
const options = {
  calls: positive('calls', values.calls),
  concurrency: positive('concurrency', values.concurrency),
  maxSeconds: positive('max-seconds', values['max-seconds']),
  seed: positive('seed', values.seed),
  mcpSessions: positive('mcp-sessions', values['mcp-sessions']),
  grpcChannels: positive('grpc-channels', values['grpc-channels']),
};
const say = (line: string): void => {
  process.stderr.write(`soak: ${line}\n`);
};

/** Build what the soak calls from source (each step is skipped when up to date) and write its config. */
function prepare(dir: string): string {
  for (const extra of [[], ['--fixtures']]) {
    const built = spawnSync(process.execPath, [join(root, 'scripts', 'build-guests.mjs'), ...extra], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (built.status !== 0) throw new Error(`building the guests failed (node scripts/build-guests.mjs ${extra.join(' ')})`);
  }
  // The table-growing component and the segment smuggler are WAT assembled by the tests' own builders (TypeScript, run through tsx).
  const grower = join(dir, 'grower.wasm');
  const segments = join(dir, 'segment-smuggler.wasm');
  const fixture = (name: string): string => JSON.stringify(join(root, 'test', 'fixtures', 'wat', name));
  const script = `import { writeFileSync } from 'node:fs'; import { growerComponent } from ${fixture('grower.ts')}; import { segmentSmugglerComponent } from ${fixture('segment-smuggler.ts')};
writeFileSync(${JSON.stringify(grower)}, await growerComponent({ holders: 1 }));
writeFileSync(${JSON.stringify(segments)}, await segmentSmugglerComponent());`;
  const made = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (made.status !== 0) throw new Error('assembling the WAT fixtures (test/fixtures/wat/) failed');
  const config = join(dir, 'toolhost.yaml');
  writeFileSync(config, soakConfig(root, [grower, segments], join(dir, 'audit.jsonl')));
  return config;
}

async function run(): Promise<SoakReport> {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-soak-'));
  say(`building guests and the config in ${dir}`);
  const configPath = prepare(dir);
  const hostArgs: HostArgs = { configPath, calls: options.calls, seed: options.seed };
  const child = fork(join(root, 'dist', 'scripts', 'soak', 'host.js'), [JSON.stringify(hostArgs)], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, TOOLHOST_LOG: process.env.TOOLHOST_LOG ?? 'silent', TOOLHOST_CACHE_DIR: process.env.TOOLHOST_CACHE_DIR ?? join(root, 'node_modules', '.cache', 'toolhost-soak') },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let hostDied: string | undefined;
  let stopping = false;
  const pendingCalls = new Map<number, (outcome: CallOutcome) => void>();
  const waiting = new Map<string, Array<(message: FromHost) => void>>();
  const next = <T extends FromHost['type']>(type: T): Promise<Extract<FromHost, { type: T }>> => new Promise((resolve, reject) => {
    if (hostDied !== undefined) {
      reject(new Error(hostDied));
      return;
    }
    const list = waiting.get(type) ?? [];
    list.push(resolve as (message: FromHost) => void);
    waiting.set(type, list);
  });
  const ask = (message: ToHost): void => {
    if (hostDied === undefined && child.connected) child.send(message);
  };
  child.on('message', (raw) => {
    const message = raw as FromHost;
    if (message.type === 'outcome') {
      const resolve = pendingCalls.get(message.outcome.n);
      pendingCalls.delete(message.outcome.n);
      resolve?.(message.outcome);
      return;
    }
    if (message.type === 'failed') hostDied = `the host failed to start: ${message.message}`;
    const list = waiting.get(message.type);
    list?.shift()?.(message);
  });
  const deathWatch = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      if (!stopping) hostDied ??= `exit code ${code}, signal ${signal}`;
      for (const [n, resolveCall] of pendingCalls) resolveCall({ n, channel: 'library', kind: plannedCall(n, options.seed).kind.name, code: NO_ANSWER, answers: 0, ms: 0 });
      pendingCalls.clear();
      for (const list of waiting.values()) list.length = 0;
      resolve();
    });
  });

  const startFailed = Promise.race([next('failed').then((failed) => failed.message), deathWatch.then(() => hostDied)]).then((why) => Promise.reject(new Error(`the soak host did not start: ${why}`)));
  startFailed.catch(() => undefined);
  const ready = await Promise.race([next('ready'), startFailed]);
  say(`host pid ${ready.pid}: ${ready.tools} tools; MCP ${ready.mcpUrl}, gRPC ${ready.grpcAddress}`);
  const mcp = await McpDriver.connect(ready.mcpUrl, options.mcpSessions);
  const grpc = GrpcDriver.connect(ready.grpcAddress, options.grpcChannels);

  const sample = async (label: string, gc: boolean): Promise<HostSample | undefined> => {
    ask({ type: 'sample', label, gc });
    return hostDied === undefined ? await Promise.race([next('sample').then((message) => message.sample), deathWatch.then(() => undefined)]) : undefined;
  };
  const peak: PeakFigures = { rssBytes: 0, heapUsedBytes: 0, handles: 0, fds: 0, inFlight: 0 };
  const timeline: HostSample[] = [];
  const track = (figures: HostSample | undefined): void => {
    if (figures === undefined) return;
    peak.rssBytes = Math.max(peak.rssBytes, figures.rssBytes);
    peak.heapUsedBytes = Math.max(peak.heapUsedBytes, figures.heapUsedBytes);
    peak.handles = Math.max(peak.handles, figures.handles);
    peak.fds = Math.max(peak.fds, figures.fds);
    peak.inFlight = Math.max(peak.inFlight, figures.inFlight);
  };
  const start = await sample('start', true);
  track(start);

  const tally = new ClientTally();
  const startedAt = performance.now();
  const deadline = startedAt + options.maxSeconds * 1000;
  let nextCall = 0;
  let answered = 0;
  let stoppedByDeadline = false;
  let middle: HostSample | undefined;
  let middleAsked = false;
  const dispatch = (call: PlannedCall): Promise<CallOutcome> => {
    if (call.channel === 'mcp') return mcp.call(call);
    if (call.channel === 'grpc') return grpc.call(call);
    if (hostDied !== undefined) return Promise.resolve({ n: call.n, channel: 'library', kind: call.kind.name, code: NO_ANSWER, answers: 0, ms: 0 });
    return new Promise((resolve) => {
      pendingCalls.set(call.n, resolve);
      ask({ type: 'call', n: call.n });
    });
  };
  const periodic = setInterval(() => {
    void sample('periodic', false).then((figures) => {
      if (figures === undefined) return;
      track(figures);
      timeline.push(figures);
    });
  }, 1000);
  let lastProgress = performance.now();
  const loop = async (): Promise<void> => {
    for (;;) {
      if (hostDied !== undefined) return;
      if (performance.now() >= deadline) {
        stoppedByDeadline = nextCall < options.calls;
        return;
      }
      if (nextCall >= options.calls) return;
      const call = plannedCall(nextCall, options.seed);
      nextCall += 1;
      tally.issued();
      const outcome = await dispatch(call);
      tally.record(outcome);
      answered += 1;
      // The middle: half the calls answered, or half the time allowed gone (when the deadline will stop it first).
      if (!middleAsked && (answered >= Math.floor(options.calls / 2) || performance.now() - startedAt >= (options.maxSeconds * 1000) / 2)) {
        middleAsked = true;
        void sample('middle', true).then((figures) => {
          middle = figures;
          track(figures);
        });
      }
      if (performance.now() - lastProgress > 10_000) {
        lastProgress = performance.now();
        const seconds = (lastProgress - startedAt) / 1000;
        const last = timeline.at(-1);
        say(`${answered}/${options.calls} answered in ${seconds.toFixed(0)} s (${Math.round(answered / seconds)}/s)${last === undefined ? '' : `, host RSS ${(last.rssBytes / 1048576).toFixed(0)} MiB, ${last.inFlight} in flight`}`);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  const seconds = (performance.now() - startedAt) / 1000;
  clearInterval(periodic);
  say(`issued ${nextCall}, answered ${answered} in ${seconds.toFixed(1)} s; draining`);

  // Calls a client gave up on (cancelled) may still be winding down on the host: wait for them (bounded).
  let ledger: LedgerTotals | undefined;
  let inFlightAtEnd = 0;
  const drainUntil = performance.now() + 30_000;
  while (hostDied === undefined) {
    ask({ type: 'ledger' });
    const answer = await Promise.race([next('ledger'), deathWatch.then(() => undefined)]);
    if (answer === undefined) break;
    ledger = answer.totals;
    inFlightAtEnd = answer.inFlight;
    if ((answer.inFlight === 0 && answer.totals.open === 0) || performance.now() > drainUntil) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (middle === undefined && !middleAsked) middle = await sample('middle', true);
  const end = await sample('end', true);
  track(end);

  await mcp.close();
  grpc.close();
  // The servers see the clients' sockets close a moment later.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const closed = await sample('closed', true);
  stopping = true;
  ask({ type: 'stop' });
  const stopped = await Promise.race([deathWatch, new Promise((resolve) => setTimeout(resolve, 15_000))]);
  void stopped;
  if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });

  const partial: Omit<SoakReport, 'failures'> = {
    options,
    machine: { cpus: cpus().length, node: process.version, loadAverage: loadavg() },
    issued: nextCall,
    stoppedByDeadline,
    seconds,
    hostDied,
    ledger,
    inFlightAtEnd,
    client: tally.totals(),
    samples: { ...(start === undefined ? {} : { start }), ...(middle === undefined ? {} : { middle }), ...(end === undefined ? {} : { end }), ...(closed === undefined ? {} : { closed }), peak },
    timeline,
  };
  return { ...partial, failures: verdict(partial) };
}

const report = await run();
const text = formatReport(report);
if (values.out !== undefined) writeFileSync(values.out, `${text}\n`);
if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
else process.stdout.write(`${text}\n`);
process.exit(report.failures.length === 0 ? 0 : 1);
