/**
 * `toolhost call --worktree DIR` on a tool granted no worktree (issue 29): the call used to run and silently see
 * nothing at /worktree. The CLI now says on stderr that the worktree is ignored and how to grant one; a tool whose
 * grant allows a worktree (from toolhost.yaml) reads it without any such warning.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { example, hasCGuests } from '../helpers.js';

describe.concurrent('toolhost call --worktree', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-cli-wt-'));
  writeFileSync(join(scratch, 'note.txt'), 'hello');
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('says the worktree is ignored when the tool is granted none', async () => {
    const run = await runCli(['call', 'word_count', '--load', example('text'), '--worktree', scratch, '--args', '{"text":"a b"}']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/--worktree is ignored: word_count is granted no worktree \(privilege MINIMAL\)/);
    expect(run.stderr).toMatch(/grant: \{ privilege: DEFAULT \}/);
  });

  it.runIf(hasCGuests)('says nothing when the config grants the tool a worktree, and the tool reads it', async () => {
    const config = join(scratch, 'toolhost.yaml');
    writeFileSync(config, `tools:\n  - path: ${JSON.stringify(example('files'))}\n    grant: { privilege: DEFAULT }\n    default_policy: { privilege_level: DEFAULT }\n`);
    const run = await runCli(['call', 'read_file', '--config', config, '--worktree', scratch, '--args', '{"path":"note.txt"}']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/--worktree is ignored/);
    expect(JSON.parse(run.stdout)).toMatchObject({ content: 'hello' });
  });
});
