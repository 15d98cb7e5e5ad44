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
 *   node scripts/bench-fleet.mjs --hosts 2 --seconds 5 --concurrency 32 --cluster
 *
 * `--cluster`: a 6-node Redis Cluster on loopback (3 masters, 3 replicas, made
 * with `redis-cli --cluster create`) instead of one redis-server, the hosts
 * joined with `--redis-cluster`; the state writes then wait for one replica
 * (cluster.state.wait_replicas' default), and the driver also measures
 * acknowledged writes alone.
 *
 * Needs: npm run build (dist/ and test/fixtures/dist/counter.wasm), redis-server (and redis-cli for --cluster) on PATH.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { hosts: { type: 'string', default: '1' }, seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '32' }, cluster: { type: 'boolean', default: false } } });
const clustered = values.cluster;
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

let storeArgs;
let storeTarget;
if (clustered) {
  const root6 = mkdtempSync(join(tmpdir(), 'toolhost-bench-cluster-'));
  const ports = [];
  while (ports.length < 6) {
    const port = await freePort();
    if (port + 10_000 < 65_536 && !ports.includes(port)) ports.push(port);
  }
  for (const [i, port] of ports.entries()) {
    const nodeDir = join(root6, `node-${i}`);
    mkdirSync(nodeDir);
    writeFileSync(join(nodeDir, 'redis.conf'), `port ${port}\nbind 127.0.0.1\ndir ${nodeDir}\ncluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\nsave ""\nappendonly no\n`);
    const node = spawn('redis-server', [join(nodeDir, 'redis.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(node);
    await waitFor(node, /Ready to accept connections/);
  }
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8' });
  if (create.status !== 0) throw new Error(`redis-cli --cluster create: ${create.stdout}${create.stderr}`);
  // Every node sees the cluster ok and every replica's link is up.
  for (let settled = false; !settled;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    settled = ports.every((port) => {
      const info = spawnSync('redis-cli', ['-p', String(port), 'CLUSTER', 'INFO'], { encoding: 'utf8' }).stdout;
      const replication = spawnSync('redis-cli', ['-p', String(port), 'INFO', 'replication'], { encoding: 'utf8' }).stdout;
      return /cluster_state:ok/.test(info) && (!/role:slave/.test(replication) || /master_link_status:up/.test(replication));
    });
  }
  const urls = ports.map((port) => `redis://127.0.0.1:${port}`);
  storeArgs = ['--redis-cluster', urls.join(',')];
  storeTarget = { redisCluster: { nodes: urls } };
} else {
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(redis);
  await waitFor(redis, /Ready to accept connections/);
  storeArgs = ['--redis', `redis://127.0.0.1:${redisPort}`];
  storeTarget = { redis: `redis://127.0.0.1:${redisPort}` };
}

const dir = mkdtempSync(join(tmpdir(), 'toolhost-bench-fleet-'));
const config = join(dir, 'toolhost.yaml');
writeFileSync(config, `tools:\n  - path: ${join(root, 'test', 'fixtures', 'dist', 'counter.wasm')}\nhost:\n  pool: { threads: 1 }\n`);
const addresses = [];
for (let i = 0; i < hosts; i += 1) {
  const child = spawn(process.execPath, [join(root, 'dist', 'host', 'cli', 'main.js'), 'serve', '--config', config, ...storeArgs, '--mcp', 'none', '--grpc-port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TOOLHOST_LOG: 'error' } });
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
const figure = { store: clustered ? 'cluster (3 masters, 3 replicas)' : 'one redis-server', hosts, concurrency, seconds: elapsed, calls: latencies.length, callsPerSecond: Math.round(latencies.length / elapsed), p50ms: pct(50), p99ms: pct(99) };

// The state read alone: RedisStateStore.get (what a host does per get-state), same concurrency, from this process.
const { openRedisLink, RedisStateStore } = await import(join(root, 'dist', 'host', 'fleet', 'index.js'));
const { silentLogger } = await import(join(root, 'dist', 'host', 'base', 'logger.js'));
const link = openRedisLink(storeTarget, silentLogger);
link.start();
await link.ready(10_000);
const store = new RedisStateStore(link);
async function measure(op) {
  const times = [];
  const end = Date.now() + 2000;
  await Promise.all(conversations.map(async (conversation) => {
    let i = 0;
    while (Date.now() < end) {
      const t = process.hrtime.bigint();
      await op(conversation, i++);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }));
  times.sort((x, y) => x - y);
  return { perSecond: Math.round(times.length / 2), p99ms: times[Math.floor(0.99 * times.length)].toFixed(3) };
}
const reads = await measure((conversation) => store.get(conversation, 'k'));
figure.stateReadsPerSecond = reads.perSecond;
figure.stateReadP99ms = reads.p99ms;
// Writes alone (RedisStateStore.set: the write script, and on a cluster WAIT for one replica).
const writes = await measure((conversation, i) => store.set(conversation, `w${i % 8}`, '"x"'));
figure.waitReplicas = store.waitReplicas;
figure.stateWritesPerSecond = writes.perSecond;
figure.stateWriteP99ms = writes.p99ms;
await link.close();
console.log(JSON.stringify(figure));
for (const client of clients) client.close();
stopAll();
