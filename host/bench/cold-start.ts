/**
 * Cold start: the first call of a new process, with an empty transpile cache
 * (`miss`) and then again with the cache the first process left (`hit`). Each
 * start is a child process running cold-start-child.js; the cache directory
 * is a temporary one, removed afterwards.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ColdStart } from './row.js';
import { round3 } from './statistics.js';

function childScript(): string {
  const compiled = fileURLToPath(new URL('./cold-start-child.js', import.meta.url));
  if (existsSync(compiled)) return compiled;
  const built = fileURLToPath(new URL('../../dist/host/bench/cold-start-child.js', import.meta.url));
  if (existsSync(built)) return built;
  throw new Error(`the cold-start script is not built (${compiled}): run npm run build:host`);
}

interface ChildReport {
  cache: 'hit' | 'miss';
  importMs: number;
  loadMs: number;
  firstCallMs: number;
  ok: boolean;
  error?: string;
}

function runChild(script: string, args: string[], cacheDir: string): Promise<{ processMs: number; report: ChildReport }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, TOOLHOST_CACHE_DIR: cacheDir };
    delete env.TOOLHOST_LOG;
    const started = performance.now();
    const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const processMs = performance.now() - started;
      const line = stdout.trim().split('\n').at(-1) ?? '';
      try {
        resolve({ processMs, report: JSON.parse(line) as ChildReport });
      } catch {
        reject(new Error(`the cold-start process exited with ${String(code)}: ${(stderr.trim() || stdout.trim()).split('\n').slice(-3).join(' | ')}`));
      }
    });
  });
}

/** Two starts of a process that loads `component` and calls `tool` once: empty cache, then warm cache. */
export async function measureColdStart(component: string, tool: string, args: unknown): Promise<ColdStart[]> {
  const script = childScript();
  const cacheDir = await mkdtemp(join(tmpdir(), 'toolhost-bench-cache-'));
  const starts: ColdStart[] = [];
  try {
    for (let run = 0; run < 2; run += 1) {
      const { processMs, report } = await runChild(script, [component, tool, JSON.stringify(args)], cacheDir);
      starts.push({
        component: basename(component),
        tool,
        cache: report.cache,
        processMs: round3(processMs),
        importMs: round3(report.importMs),
        loadMs: round3(report.loadMs),
        firstCallMs: round3(report.firstCallMs),
        ok: report.ok,
        ...(report.error === undefined ? {} : { error: report.error }),
      });
    }
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
  return starts;
}
