/**
 * `npm start` runs the server as npm's own child (the script execs it), so
 * killing npm (SIGTERM, what a process manager or `kill` sends) stops the
 * server too. Issue 41: the script ran under `sh -c`, npm's signal reached the
 * shell, and the server was left running as an orphan.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliEnv } from '../cli-runner.js';
import { root } from '../helpers.js';

/** The pids of the descendants of `pid` (from /proc). */
function descendants(pid: number): number[] {
  const run = spawnSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  const children = new Map<number, number[]>();
  for (const line of run.stdout.trim().split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const found: number[] = [];
  const walk = (at: number): void => {
    for (const child of children.get(at) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

const alive = (pid: number): boolean => {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return false;
  }
};

describe('npm start', () => {
  it('leaves no server running when npm is killed', async () => {
    const npm = spawn('npm', ['start', '--', '--mcp', 'http', '--port', '0', '--no-grpc', '--containment', 'thread'], { cwd: root, env: { ...cliEnv(), TOOLHOST_LOG: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    npm.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const deadline = Date.now() + 120_000;
    while (!/serving \d+ tools/.test(output) && Date.now() < deadline && npm.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(output).toMatch(/serving \d+ tools/);
    const tree = descendants(npm.pid!);
    expect(tree.length).toBeGreaterThan(0);
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    npm.kill('SIGTERM');
    await exited;
    // The server stops within its drain (generously bounded), not never.
    const until = Date.now() + 30_000;
    while (tree.some(alive) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
    const left = tree.filter(alive);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    expect(left).toEqual([]);
  }, 180_000);
});
