/** Runs the built `toolhost` CLI as a child process, for black-box tests. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { root, sharedCacheDir } from './helpers.js';

export const cliPath = join(root, 'dist', 'host', 'cli', 'main.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit. */
  ms: number;
  /** Whether the test had to kill the process. */
  killed: boolean;
}

/** The environment the CLI runs with in tests: the shared transpile cache, no TOOLHOST_LOG. */
export function cliEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && key !== 'TOOLHOST_LOG') env[key] = value;
  env.TOOLHOST_CACHE_DIR = sharedCacheDir;
  return env;
}

/** Run the CLI to completion (killing it after `limitMs`, which fails the run's checks); `extra` adds to its env and cwd. */
export function runCli(args: string[], limitMs = 90_000, extra: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliRun> {
  const env = { ...cliEnv(), ...extra.env };
  return new Promise((resolve, reject) => {
    const startedAt = performance.now();
    const child = spawn(process.execPath, [cliPath, ...args], { cwd: extra.cwd ?? root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, limitMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - startedAt, killed });
    });
  });
}

