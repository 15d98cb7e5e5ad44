/**
 * A guest's stdout and stderr never reach the CLI's own streams (the library side, and what the guest writes:
 * test/stdio-capture.test.ts): `toolhost call` in processes of its own, as a black box.
 */
import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../cli-runner.js';
import { fixture } from '../helpers.js';
import { expectedPrintLines, expectNoGuestOutput, stdioLogs } from '../stdio-expect.js';

const noisy = fixture('noisy');

describe.concurrent('guest stdio through the CLI', () => {
  beforeAll(() => {
    if (!existsSync(cliPath)) throw new Error(`the CLI is not built (${cliPath} is missing): run \`npx tsc -p .\` first`);
  });

  it('prints only the result on stdout and none of the guest\'s output on either stream', async () => {
    const run = await runCli(['call', 'print', '--args', '{"lines":50}', '--load', noisy]);
    expect(run.killed).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('{"printed":50}\n');
    expectNoGuestOutput(run.stdout);
    expectNoGuestOutput(run.stderr);
  });

  it('delivers each guest line once, whole and in order, as a log event with --events', async () => {
    const run = await runCli(['call', 'print', '--args', '{"lines":50}', '--load', noisy, '--events']);
    expect(run.killed).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    expectNoGuestOutput(run.stderr);
    const events = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events[0]?.type).toBe('start');
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { printed: 50 } });
    expect(events.filter((event) => event.type === 'result' || event.type === 'error')).toHaveLength(1);
    const logs = stdioLogs(events);
    for (const log of logs) expect(log.message).not.toBe('');
    expect(logs.map(({ source, message }) => ({ source, message }))).toEqual(expectedPrintLines(50));
  });

  it('keeps the output of a guest that crashes out of the CLI\'s streams too', async () => {
    const run = await runCli(['call', 'exit', '--args', '{"code":3}', '--load', noisy]);
    expect(run.killed).toBe(false);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expectNoGuestOutput(run.stderr);
    const lines = run.stderr.trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1) as string)).toMatchObject({ error: { code: 'TOOL_CRASHED' } });
  });
});
