#!/usr/bin/env node
/**
 * Fleet figure for docs/deployment.md: calls/s and latency percentiles of
 * calls that read conversation state (the counter fixture's `state get`, a C
 * guest, over gRPC), with N `toolhost serve --redis` hosts on this machine
 * against one redis-server. The driver spreads `--concurrency` calls in flight
 * round-robin over the hosts for `--seconds`, after a warm-up.
 *
 *   node scripts/bench-fleet.mjs --hosts 1 --seconds 5 --concurrency 32
 *   node scripts/bench-fleet.mjs --hosts 3 --seconds 5 --concurrency 32
 *
 * Needs: npm run build (dist/ and test/fixtures/dist/counter.wasm), redis-server on PATH.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { hosts: { type: 'string', default: '1' }, seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '32' } } });
const hosts = Number(values.hosts);
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);

const freePort = () => new Promise((resolve, reject) => {
  const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const waitFor = (child, pattern) => new Promise((resolve, reject) => {
  let output = '';
  const timer = setTimeout(() => reject(new Error(`timed out: ${output}`)), 60_000);
  const onData = (chunk) => {
    output += chunk.toString();
    const match = pattern.exec(output);
    if (match) {
      clearTimeout(timer);
      resolve(match);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.once('exit', () => reject(new Error(`exited: ${output}`)));
});

const children = [];
const stopAll = () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
};
process.on('exit', stopAll);

const redisPort = await freePort();
const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
children.push(redis);
await waitFor(redis, /Ready to accept connections/);
const redisUrl = `redis://127.0.0.1:${redisPort}`;

const dir = mkdtempSync(join(tmpdir(), 'toolhost-bench-fleet-'));
const config = join(dir, 'toolhost.yaml');
writeFileSync(config, `tools:\n  - path: ${join(root, 'test', 'fixtures', 'dist', 'counter.wasm')}\nhost:\n  pool: { threads: 1 }\n`);
const addresses = [];
for (let i = 0; i < hosts; i += 1) {
  const child = spawn(process.execPath, [join(root, 'dist', 'host', 'cli', 'main.js'), 'serve', '--config', config, '--redis', redisUrl, '--mcp', 'none', '--grpc-port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TOOLHOST_LOG: 'error' } });
  children.push(child);
  addresses.push((await waitFor(child, /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/))[1]);
}

const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = grpc.loadPackageDefinition(definition).sw4rm.tool.ToolService;
const clients = addresses.map((address) => new ToolService(address, grpc.credentials.createInsecure()));
const call = (client, args, conversation) => new Promise((resolve, reject) => {
  const metadata = new grpc.Metadata();
  metadata.set('toolhost-conversation-id', conversation);
  client.Call({ tool_name: 'state', args: Buffer.from(JSON.stringify(args)) }, metadata, (error, frame) => (error ? reject(error) : resolve(frame)));
});

// One conversation per driver slot, written once through host 0, read through every host.
const conversations = Array.from({ length: concurrency }, (_, i) => `bench-${i}`);
for (const conversation of conversations) await call(clients[0], { op: 'set', key: 'k', value: JSON.stringify({ n: conversation }) }, conversation);
const check = JSON.parse((await call(clients[clients.length - 1], { op: 'get', key: 'k' }, conversations[0])).data.toString());
if (!String(check.value).includes('bench-0')) throw new Error(`state not shared: ${JSON.stringify(check)}`);

async function run(durationMs, record) {
  const end = Date.now() + durationMs;
  let next = 0;
  await Promise.all(conversations.map(async (conversation) => {
    while (Date.now() < end) {
      const client = clients[next++ % clients.length];
      const started = process.hrtime.bigint();
      await call(client, { op: 'get', key: 'k' }, conversation);
      record?.(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }));
}
await run(1000);
const latencies = [];
const started = Date.now();
await run(seconds * 1000, (ms) => latencies.push(ms));
const elapsed = (Date.now() - started) / 1000;
latencies.sort((x, y) => x - y);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(2);
const figure = { hosts, concurrency, seconds: elapsed, calls: latencies.length, callsPerSecond: Math.round(latencies.length / elapsed), p50ms: pct(50), p99ms: pct(99) };

// The state read alone: RedisStateStore.get (what a host does per get-state), same concurrency, from this process.
const { RedisLink, RedisStateStore } = await import(join(root, 'dist', 'host', 'fleet', 'index.js'));
const { silentLogger } = await import(join(root, 'dist', 'host', 'base', 'logger.js'));
const link = new RedisLink({ url: redisUrl }, silentLogger);
link.start();
await link.ready();
const store = new RedisStateStore(link);
const reads = [];
const readEnd = Date.now() + 2000;
await Promise.all(conversations.map(async (conversation) => {
  while (Date.now() < readEnd) {
    const t = process.hrtime.bigint();
    await store.get(conversation, 'k');
    reads.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
}));
reads.sort((x, y) => x - y);
figure.stateReadsPerSecond = Math.round(reads.length / 2);
figure.stateReadP99ms = reads[Math.floor(0.99 * reads.length)].toFixed(3);
await link.close();
console.log(JSON.stringify(figure));
for (const client of clients) client.close();
stopAll();
