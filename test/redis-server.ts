/**
 * A real redis-server for tests: loopback only, an ephemeral port (a free
 * port is found by binding port 0 first; a clash is retried), no persistence,
 * stopped by pid. `stop()` then `start()` again is a Redis restart on the same
 * port (empty: nothing is saved).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export const hasRedis = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  port = 0;
  #child: ChildProcess | undefined;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Start (on a new free port the first time, on the same port after a stop). */
  async start(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (this.port === 0 || attempt > 0) this.port = await freePort();
      if (await this.#launch()) return;
    }
    throw new Error('could not start redis-server on a free port');
  }

  #launch(): Promise<boolean> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    return new Promise((resolve) => {
      let output = '';
      const timer = setTimeout(() => finish(false), 5000);
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data');
        if (!ok) child.kill('SIGKILL');
        resolve(ok);
      };
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) finish(true);
      });
      child.once('exit', () => finish(false));
    });
  }

  /** Stop it (SIGKILL: an outage, not a shutdown) and wait until it is gone. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** Poll `check` every 20 ms until it holds (bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'a condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
