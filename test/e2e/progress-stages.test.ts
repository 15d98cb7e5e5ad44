/**
 * Stages on a terminal for the work that is not a transfer: the first load of
 * a componentize-js component (`list --load`, a cold transpile cache) says it
 * is transpiling and how long it took; `toolhost build` says what it is doing
 * (compiling, checking). With stdout and stderr piped (control) nothing of it
 * is printed. Issue 41: a first load transpiled for seconds unannounced, a build
 * was silent for 30 s.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { example } from '../helpers.js';

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
const hasClang = spawnSync('clang', ['--version'], { stdio: 'ignore' }).status === 0;

function onTerminal(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', [process.execPath, cliPath, ...args].map(quote).join(' '), '/dev/null'], { cwd, env: { ...cliEnv(), TOOLHOST_LOG: 'error', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 290_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.replace(/\r/g, '') });
    });
  });
}

describe.skipIf(!hasScript)('stages of long local work on a terminal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-stages-'));

  it('announces a first load\'s transpile and how long it took; a piped run prints none of it', async () => {
    const cold = mkdtempSync(join(dir, 'cache-'));
    const run = await onTerminal(['list', '--load', example('text')], dir, { TOOLHOST_CACHE_DIR: cold });
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/✓ .*text\.wasm transpiling \(first load; cached after\): done in [\d.]+ s/);
    const piped = await runCli(['list', '--load', example('text')], 150_000, { cwd: dir, env: { TOOLHOST_CACHE_DIR: mkdtempSync(join(dir, 'cache-')), TOOLHOST_LOG: 'error' } });
    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe('');
    expect(piped.stdout).not.toMatch(/transpiling|✓/);
  }, 600_000);

  it.skipIf(!hasClang)('says what toolhost build is doing', async () => {
    const project = join(dir, 'ctool');
    expect((await runCli(['init', project, '--lang', 'c'], 60_000, { cwd: dir })).code).toBe(0);
    const run = await onTerminal(['build', project], dir);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/✓ ctool\.wasm checking \(transpile, describe\(\) in a worker\): done in [\d.]+ s/);
    expect(run.output).toMatch(/built .*ctool\.wasm/);
  }, 600_000);
});
