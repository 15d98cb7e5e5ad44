/**
 * `toolhost pull` / `update` of a large component (componentize-js, ~12 MB)
 * from a real registry: on a terminal (a pseudo-terminal from util-linux
 * `script`) stderr draws a progress bar with byte counts and a rate, and
 * stdout is a summary for a person (`update`: old → new digest); with stdout
 * piped, or with `--json` on a terminal, stdout is the JSON report scripts
 * read, exactly as before, and nothing else is printed. Issue 41: 10 s of
 * nothing at 1.5 MB/s, JSON only.
 */
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { example } from '../helpers.js';
import { OciRegistry, Pusher, hasRegistry } from '../oci-registry.js';

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/** Run the CLI on a pseudo-terminal (stdout and stderr both the terminal); what it printed, CRs dropped. */
function onTerminal(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', [process.execPath, cliPath, ...args].map(quote).join(' '), '/dev/null'], { cwd, env: { ...cliEnv(), TOOLHOST_LOG: 'error', COLUMNS: '160' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.replace(/\r/g, '') });
    });
  });
}

interface PullReport { lock: string; changed: string[]; components: Record<string, { pinned: string; manifestDigest: string }> }

describe.skipIf(!hasRegistry || !hasScript)('pull and update show progress on a terminal, and keep their JSON elsewhere', () => {
  const registry = new OciRegistry();
  const project = mkdtempSync(join(tmpdir(), 'toolhost-pullprogress-'));
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const big = new Uint8Array(readFileSync(example('text')));
  let source = '';
  let push: Pusher;

  beforeAll(async () => {
    await registry.start();
    push = new Pusher(registry.host, 'tools/big');
    source = `oci://${registry.host}/tools/big:v1`;
    writeFileSync(join(project, 'trusted.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    const first = await push.component('v1', big);
    await push.cosignSign(first, privateKey);
  }, 60_000);
  afterAll(() => registry.close());
  const configIn = (dir: string): void => writeFileSync(join(dir, 'toolhost.yaml'), `tools:\n  - path: ${source}\ndistribution:\n  store_dir: ./store\n  verify:\n    keys: [${join(project, 'trusted.pub')}]\n`);

  it('draws a byte bar with a rate on a terminal, then a summary for a person', async () => {
    const dir = mkdtempSync(join(project, 'tty-'));
    configIn(dir);
    const run = await onTerminal(['pull'], dir);
    expect(run.code, run.output).toBe(0);
    // The line the bar leaves (while it moves, it shows bytes of the total and a rate: how often it is redrawn
    // depends on how fast the transfer is): the full bar, the size, the time, the rate.
    expect(run.output).toMatch(/✓ .*tools\/big:v1 \[=+\] 11\.\d MiB in [\d.]+ s \([\d.]+ (B|KiB|MiB)\/s\)/);
    expect(run.output).toMatch(/pulled 1 component \(1 changed\); lock: .*toolhost\.lock/);
    expect(run.output).toMatch(/new: sha256:[0-9a-f]{12}… \(11\.\d MiB, signed by sha256:[0-9a-f]{12}…\)/);
    expect(run.output).not.toMatch(/"components"/);
  }, 180_000);

  it('prints exactly the JSON report with --json on a terminal: no bar, no summary', async () => {
    const dir = mkdtempSync(join(project, 'json-'));
    configIn(dir);
    const run = await onTerminal(['pull', '--json'], dir);
    expect(run.code, run.output).toBe(0);
    const report = JSON.parse(run.output) as PullReport;
    expect(report.changed).toEqual([source]);
    expect(Object.keys(report)).toEqual(['lock', 'changed', 'components']);
  }, 180_000);

  it('prints the same JSON report when stdout is piped, with nothing on stderr (control: as before)', async () => {
    const dir = mkdtempSync(join(project, 'pipe-'));
    configIn(dir);
    const run = await runCli(['pull'], 120_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as PullReport;
    expect(report).toEqual({ lock: join(dir, 'toolhost.lock'), changed: [source], components: { [source]: expect.objectContaining({ pinned: expect.stringMatching(/@sha256:/) }) } });
  }, 180_000);

  it('update on a terminal shows the old → new digest of a moved tag', async () => {
    const dir = mkdtempSync(join(project, 'update-'));
    configIn(dir);
    const pulled = await runCli(['pull', '--json'], 120_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });
    const old = (JSON.parse(pulled.stdout) as PullReport).components[source]!.manifestDigest;
    const moved = await push.component('v1', new Uint8Array(readFileSync(example('ctools'))));
    await push.cosignSign(moved, privateKey);
    try {
      const run = await onTerminal(['update'], dir);
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain(`changed: ${old.slice(0, 19)}… → ${moved.slice(0, 19)}…`);
      expect(run.output).toMatch(/updated 1 component \(1 changed\)/);
    } finally {
      const back = await push.component('v1', big);
      await push.cosignSign(back, privateKey);
    }
  }, 180_000);
});
