/**
 * A real Redis Cluster for tests: six Debian `redis-server` processes on
 * loopback ephemeral ports (three masters, three replicas), each with its own
 * config file and directory (its `nodes.conf` survives a kill, so a killed
 * node restarted rejoins the cluster, as a replica of whoever took its slots),
 * joined by `redis-cli --cluster create ... --cluster-replicas 1
 * --cluster-yes`. A low `cluster-node-timeout` keeps a failover to a few
 * seconds. Every process is stopped by its pid; no persistence beyond
 * `nodes.conf`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasRedisCluster = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0
  && spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status === 0;

/** Ports that are free now, all distinct (each node also listens on port + 10000 for the cluster bus). */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: chosen } = server.address() as { port: number };
        server.close(() => resolve(chosen));
      });
    });
    // The bus port (port + 10000) must exist too.
    if (port + 10_000 < 65_536) ports.add(port);
  }
  return [...ports];
}

export class ClusterNode {
  readonly port: number;
  readonly dir: string;
  #child: ChildProcess | undefined;

  constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'redis.conf'), [
      `port ${port}`,
      'bind 127.0.0.1',
      'protected-mode yes',
      `dir ${dir}`,
      'cluster-enabled yes',
      'cluster-config-file nodes.conf',
      'cluster-node-timeout 1000',
      // A replica may take over however stale it is (nothing here is kept across a restart anyway).
      'cluster-replica-validity-factor 0',
      'save ""',
      'appendonly no',
      'daemonize no',
      'loglevel warning',
    ].join('\n') + '\n');
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  async start(): Promise<void> {
    const child = spawn('redis-server', [join(this.dir, 'redis.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    await until(() => cli(this.port, ['PING']).trim() === 'PONG' || child.exitCode !== null, 10_000, `redis-server on ${this.port}`);
    if (child.exitCode !== null) throw new Error(`redis-server on port ${this.port} exited with ${child.exitCode}`);
  }

  /** SIGKILL (a crash, not a shutdown), and wait until it is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** `redis-cli -p PORT ARGS` (synchronous: tests only). */
  cli(args: string[]): string {
    return cli(this.port, args);
  }

  role(): string {
    return /^role:(\w+)/m.exec(this.cli(['INFO', 'replication']))?.[1] ?? 'unknown';
  }
}

function cli(port: number, args: string[]): string {
  const run = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 });
  return run.stdout ?? '';
}

export class RedisCluster {
  readonly nodes: ClusterNode[] = [];
  #root = '';

  /** The nodes as `redis://` URLs (what `--redis-cluster` takes). */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** Start six nodes and join them: three masters with one replica each. */
  async start(): Promise<void> {
    this.#root = mkdtempSync(join(tmpdir(), 'toolhost-redis-cluster-'));
    const ports = await freePorts(6);
    for (const [i, port] of ports.entries()) this.nodes.push(new ClusterNode(port, join(this.#root, `node-${i}`)));
    await Promise.all(this.nodes.map((node) => node.start()));
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...this.nodes.map((node) => node.address), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await this.settled();
  }

  /**
   * Wait until every running node says the cluster is ok, and every running
   * replica's link to its master is up (so WAIT can be acknowledged).
   */
  async settled(timeoutMs = 30_000): Promise<void> {
    await until(() => this.nodes.filter((node) => node.running).every((node) => {
      if (!/cluster_state:ok/.test(node.cli(['CLUSTER', 'INFO']))) return false;
      const replication = node.cli(['INFO', 'replication']);
      return !/role:slave/.test(replication) || /master_link_status:up/.test(replication);
    }), timeoutMs, 'the cluster to be ok');
  }

  /** The running masters. */
  masters(): ClusterNode[] {
    return this.nodes.filter((node) => node.running && node.role() === 'master');
  }

  /** The node serving `key`'s slot as master. */
  masterOf(key: string): ClusterNode {
    const slot = Number(this.nodes.find((node) => node.running)!.cli(['CLUSTER', 'KEYSLOT', key]).trim());
    for (const node of this.masters()) {
      const mine = node.cli(['CLUSTER', 'NODES']).split('\n').find((line) => line.includes('myself'));
      if (!mine) continue;
      for (const range of mine.split(' ').slice(8)) {
        const [from, to] = range.split('-').map(Number);
        if (from !== undefined && slot >= from && slot <= (to ?? from)) return node;
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    if (this.#root) rmSync(this.#root, { recursive: true, force: true });
  }
}

/** Poll `check` every 50 ms until it holds (bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'a condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
