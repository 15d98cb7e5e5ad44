/**
 * Ctrl-C (SIGINT) or SIGTERM while the CLI loads a remote component from a server that never answers ends the
 * load at once with CANCELLED and a non-zero exit, instead of the process being killed mid-way or waiting on the
 * server: `toolhost pull` (the lock is not written) and `toolhost serve --load` (a shutdown during start).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath } from '../cli-runner.js';
import { example } from '../helpers.js';
import { digestOf } from '../oci-registry.js';

const digest = digestOf(new Uint8Array(readFileSync(example('ctools')))).slice(7);

describe('the CLI ends a stalled remote load on SIGINT and SIGTERM', () => {
  let server: Server;
  let base = '';
  const arrived = new Set<string>();
  beforeAll(() => new Promise<void>((resolve) => {
    server = createServer((request) => {
      arrived.add(request.url ?? '');
    });
    server.listen(0, '127.0.0.1', () => {
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      resolve();
    });
  }));
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  /** Run the CLI, send `signal` once the server has the request for `path`, and report how it ended. */
  async function interrupt(args: string[], path: string, signal: NodeJS.Signals, cwd: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; msAfterSignal: number }> {
    const child = spawn(process.execPath, [cliPath, ...args], { cwd, env: { ...cliEnv(), TOOLHOST_LOG: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, sig) => resolve({ code, signal: sig })));
    await expect.poll(() => arrived.has(path), { timeout: 45_000, interval: 50 }).toBe(true);
    const sentAt = performance.now();
    child.kill(signal);
    const ended = await exited;
    clearTimeout(killer);
    return { ...ended, stderr, msAfterSignal: performance.now() - sentAt };
  }

  it('toolhost pull: SIGINT ends the fetch with CANCELLED and leaves no lock', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'toolhost-interrupt-'));
    const run = await interrupt(['pull', `${base}/pull/c.wasm#sha256=${digest}`], '/pull/c.wasm', 'SIGINT', cwd);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/CANCELLED/);
    expect(run.msAfterSignal).toBeLessThan(10_000);
    expect(existsSync(join(cwd, 'toolhost.lock'))).toBe(false);
  }, 90_000);

  it('toolhost serve --load: SIGTERM during start ends the load with CANCELLED', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'toolhost-interrupt-'));
    const run = await interrupt(['serve', '--mcp', 'http', '--port', '0', '--no-grpc', '--load', `${base}/serve/c.wasm#sha256=${digest}`], '/serve/c.wasm', 'SIGTERM', cwd);
    expect(run.signal).toBeNull();
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/CANCELLED/);
    expect(run.msAfterSignal).toBeLessThan(10_000);
  }, 90_000);
});
