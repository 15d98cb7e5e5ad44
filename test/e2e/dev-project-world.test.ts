/**
 * `toolhost dev` runs the tool in its project's world (issue 41, items 1 and 2): in a TypeScript project
 * `toolhost init` made, the project's toolhost.yaml grants the tool a read-only worktree and elicitation; an MCP
 * client started on `toolhost dev --mcp stdio --worktree DIR` reads a worktree file through the tool and answers its
 * elicitation; a refused `sample()` the tool does not catch reaches the client as PERMISSION_DENIED; a type error
 * is refused with tsc's message and the last good build keeps serving. (Before: no `--config`/`--worktree`, the
 * toolhost.yaml ignored, NO_WORKTREE, elicitation never granted, `TOOL_ERROR: Error: [object Object]`, and a type
 * error rebuilt and reloaded.) One componentize-js build (tens of seconds on a loaded machine).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath } from '../cli-runner.js';
import { initLinkedProject } from '../init-project.js';

const TOOL = `import { elicit, sample } from 'toolhost:tool/host@0.2.0';
import { parseArgs, readText } from 'toolhost/guest';
import { defineMcpComponent } from 'toolhost/guest/mcp';

export const tool = defineMcpComponent('notes', [
  {
    name: 'read_note',
    description: 'Reads a note from the worktree and asks the user who reads it.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    run(argsText: string) {
      const { path } = parseArgs<{ path: string }>(argsText);
      const text = readText(path);
      const asked = elicit('Who reads it?', JSON.stringify({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }));
      const reader: string = asked.action === 'accept' ? String(JSON.parse(asked.content ?? '{}').name) : asked.action;
      return { text, reader };
    },
  },
  {
    name: 'ask_model',
    description: 'Asks the model; the grant does not allow sampling, and the tool does not catch the refusal.',
    inputSchema: { type: 'object' },
    run() {
      const answer = sample({ messages: [{ role: 'user', content: { tag: 'text', val: 'hi' } }], systemPrompt: undefined, maxTokens: 10, temperature: undefined, stopSequences: [], modelPreferences: undefined });
      return { model: answer.model };
    },
  },
]);
`;

async function until(check: () => boolean, what: () => string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(50);
  }
}

describe('toolhost dev in a project init made', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-dev-world-'));
  let client: Client | undefined;
  afterAll(async () => {
    await client?.close().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  });

  it('serves the worktree tool under its toolhost.yaml grant: a worktree read, an elicitation, PERMISSION_DENIED for a refused sample(), a type error refused', async () => {
    const dir = await initLinkedProject(join(scratch, 'notes'), 'ts');
    writeFileSync(join(dir, 'src', 'index.ts'), TOOL);
    // The template's test is for the template's tool.
    rmSync(join(dir, 'test'), { recursive: true, force: true });
    writeFileSync(join(dir, 'toolhost.yaml'), 'tools:\n  - path: dist/notes.wasm\n    grant: { privilege: DEFAULT, elicitation: { max_requests: 2 } }\n    default_policy: { privilege_level: DEFAULT }\n');
    const work = join(scratch, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'note.txt'), 'a note\n');

    const transport = new StdioClientTransport({ command: process.execPath, args: [cliPath, 'dev', dir, '--mcp', 'stdio', '--worktree', work], env: { ...cliEnv(), TOOLHOST_LOG: 'warn' }, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    client = new Client({ name: 'dev-world-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    // The first build (type-check, bundle, componentize) runs before dev answers: minutes on a loaded 2-core machine.
    await client.connect(transport, { timeout: 600_000 }).catch((error: unknown) => {
      throw new Error(`toolhost dev did not start: ${String(error)}\n${stderr}`);
    });
    expect(stderr).toMatch(/the tool runs under .*toolhost\.yaml: privilege DEFAULT, elicitation/);
    expect(stderr).toMatch(/type-checked in [\d.]+ s, built .*notes\.wasm/);
    // What the first build cost on this machine (docs/authoring.md quotes it).
    console.info(stderr.split('\n').find((line) => /type-checked in/.test(line)));

    const read = (await client.callTool({ name: 'read_note', arguments: { path: 'note.txt' } }, undefined, { timeout: 120_000 })) as CallToolResult;
    expect(read.isError, JSON.stringify(read)).toBeFalsy();
    expect(read.structuredContent).toEqual({ text: 'a note\n', reader: 'Ada' });
    expect(asked).toEqual(['Who reads it?']);

    const sampled = (await client.callTool({ name: 'ask_model', arguments: {} }, undefined, { timeout: 120_000 })) as CallToolResult;
    expect(sampled.isError).toBe(true);
    const said = JSON.stringify(sampled);
    expect(said).toContain('PERMISSION_DENIED');
    expect(said).toContain('grant.sampling');
    expect(said).not.toMatch(/object Object|UNCAUGHT_EXCEPTION/);

    // A type error: refused with tsc's message; the last good build keeps serving.
    const source = readFileSync(join(dir, 'src', 'index.ts'), 'utf8');
    writeFileSync(join(dir, 'src', 'index.ts'), `${source}\nexport const answer: number = 'forty-two';\n`);
    await until(() => /rebuild failed \(changed src\/index\.ts\)/.test(stderr), () => `the type error to be reported:\n${stderr}`, 600_000);
    expect(stderr).toMatch(/type errors \(tsc --noEmit -p tsconfig\.json\):\s*src\/index\.ts\(\d+,\d+\): error TS2322/);
    expect(stderr).not.toMatch(/rebuilt .*reloaded/);
    const still = (await client.callTool({ name: 'read_note', arguments: { path: 'note.txt' } }, undefined, { timeout: 120_000 })) as CallToolResult;
    expect(still.structuredContent).toEqual({ text: 'a note\n', reader: 'Ada' });
  }, 1_500_000);
});
