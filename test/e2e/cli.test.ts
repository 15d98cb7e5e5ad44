/**
 * The `toolhost` command as a black box: every test spawns the built CLI
 * (dist/host/cli/main.js) and checks its stdout, stderr and exit code. The
 * processes are independent, so the tests run concurrently.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, runCli, type CliRun } from '../cli-runner.js';
import { example, fixture, hasCGuests, root } from '../helpers.js';

interface CliError {
  code: string;
  message: string;
  details?: unknown;
  callId?: string;
}

/** The `{"error":{...}}` line the CLI prints on stderr when a call or load fails. */
function errorOf(run: CliRun): CliError {
  const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
  const last = lines.at(-1);
  expect(last, `stderr has no error line: ${run.stderr}`).toBeDefined();
  const parsed = JSON.parse(last as string) as { error?: CliError };
  expect(parsed.error, `stderr's last line is not {"error":...}: ${last}`).toBeTypeOf('object');
  const error = parsed.error as CliError;
  expect(error.code).toBeTypeOf('string');
  expect(error.message).toBeTypeOf('string');
  return error;
}

/** Expect a failed call: exit 1, nothing on stdout, the error JSON on stderr. */
function expectCallFailure(run: CliRun, code: string): CliError {
  expect(run.killed).toBe(false);
  expect(run.code, run.stderr).toBe(1);
  expect(run.stdout).toBe('');
  const error = errorOf(run);
  expect(error.code, error.message).toBe(code);
  return error;
}

/** Expect a usage error: exit 2 and nothing on stdout. */
function expectUsageError(run: CliRun): void {
  expect(run.killed).toBe(false);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
}

function expectSuccess(run: CliRun): void {
  expect(run.killed).toBe(false);
  expect(run.code, run.stderr).toBe(0);
}

/** stdout holding one JSON value followed by a newline. */
function jsonOut(run: CliRun): unknown {
  expect(run.stdout.endsWith('\n')).toBe(true);
  return JSON.parse(run.stdout) as unknown;
}

/** stdout as one JSON value per line (the `--events` output). */
function jsonLines(run: CliRun): Array<Record<string, unknown>> {
  expect(run.stdout.endsWith('\n')).toBe(true);
  return run.stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

interface Definition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  executionMode: string;
  source?: string;
}

const JS_EXAMPLE_TOOLS = ['http_get', 'js_echo', 'json_pointer', 'json_query', 'regex_search', 'word_count'];
const C_EXAMPLE_TOOLS = ['echo', 'list_dir', 'read_file', 'sha256', 'swatch_tone'];
const EXAMPLE_TOOLS = [...JS_EXAMPLE_TOOLS, ...(hasCGuests ? C_EXAMPLE_TOOLS : [])].sort();
const NOISY_TOOLS = ['exit', 'global_counter', 'print'];
const COUNTER_TOOLS = ['context', 'counter', 'events', 'fail', 'loop', 'spin', 'state', 'trap'];

const jsonQueryArgs = JSON.stringify({ document: { store: { book: [{ title: 'A' }, { title: 'B' }] } }, path: '$.store.book[*].title' });

let tempDir: string;

beforeAll(() => {
  if (!existsSync(cliPath)) throw new Error(`the CLI is not built (${cliPath} is missing): run \`npx tsc -p .\` first`);
  if (!existsSync(fixture('noisy'))) throw new Error(`the noisy fixture is not built: ${fixture('noisy')}`);
  tempDir = mkdtempSync(join(tmpdir(), 'toolhost-cli-test-'));
});

afterAll(() => {
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
});

describe.concurrent('toolhost list', () => {
  it('lists the example tools with their input schemas as text', async () => {
    const run = await runCli(['list']);
    expectSuccess(run);
    const lines = run.stdout.split('\n');
    for (const name of EXAMPLE_TOOLS) {
      expect(lines.some((line) => line.startsWith(`${name}  (`)), `no line for ${name} in:\n${run.stdout}`).toBe(true);
    }
    const inputs = lines.filter((line) => line.startsWith('  input: '));
    expect(inputs).toHaveLength(EXAMPLE_TOOLS.length);
    for (const line of inputs) {
      expect((JSON.parse(line.slice('  input: '.length)) as { type?: string }).type).toBe('object');
    }
  });

  it('prints the example tools\' definitions as a JSON array with --json', async () => {
    const run = await runCli(['list', '--json']);
    expectSuccess(run);
    const definitions = jsonOut(run) as Definition[];
    expect(Array.isArray(definitions)).toBe(true);
    expect(definitions.map((tool) => tool.name).sort()).toEqual(EXAMPLE_TOOLS);
    for (const tool of definitions) {
      expect(tool.description).toBeTypeOf('string');
      expect(tool.description.length).toBeGreaterThan(0);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.executionMode).toBe('sandboxed');
    }
    const jsonQuery = definitions.find((tool) => tool.name === 'json_query');
    expect(jsonQuery?.inputSchema.required).toEqual(['document', 'path']);
  });

  it('lists only the tools of a component file given with --load', async () => {
    const run = await runCli(['list', '--json', '--load', fixture('noisy')]);
    expectSuccess(run);
    const definitions = jsonOut(run) as Definition[];
    expect(definitions.map((tool) => tool.name)).toEqual(expect.arrayContaining(NOISY_TOOLS));
    for (const tool of definitions) expect(tool.source).toBe('noisy');
  });

  it('lists the tools of every component in a directory given with --load', async () => {
    // A directory of its own, so fixtures other tests add do not change the answer.
    const dir = mkdtempSync(join(tempDir, 'components-'));
    copyFileSync(fixture('noisy'), join(dir, 'noisy.wasm'));
    if (hasCGuests) copyFileSync(fixture('counter'), join(dir, 'counter.wasm'));
    writeFileSync(join(dir, 'notes.txt'), 'not a component, and not named .wasm\n');
    const run = await runCli(['list', '--json', '--load', dir]);
    expectSuccess(run);
    const definitions = jsonOut(run) as Definition[];
    const bySource = (source: string): string[] => definitions.filter((tool) => tool.source === source).map((tool) => tool.name);
    // The fixtures gain tools as tests need them: check the ones this file knows about.
    expect(bySource('noisy')).toEqual(expect.arrayContaining(NOISY_TOOLS));
    if (hasCGuests) expect(bySource('counter')).toEqual(expect.arrayContaining(COUNTER_TOOLS));
    expect(bySource('noisy').length + bySource('counter').length).toBe(definitions.length);
    expect(new Set(definitions.map((tool) => tool.name)).size).toBe(definitions.length);
  });

  it('registers the union of repeated --load options', async () => {
    const run = await runCli(['list', '--load', fixture('noisy'), '--load', example('json')]);
    expectSuccess(run);
    const names = run.stdout
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith(' '))
      .map((line) => line.split(' ')[0])
      .sort();
    expect(names).toEqual(expect.arrayContaining([...NOISY_TOOLS, 'json_pointer', 'json_query']));
    // --load replaces the default example tools.
    expect(names).not.toContain('word_count');
    expect(names.filter((name) => name?.startsWith('json_'))).toHaveLength(2);
  });
});

describe.concurrent('toolhost call', () => {
  describe.runIf(hasCGuests)('with the C example tools', () => {
    it('prints sha256 of "abc" as the standard test vector', async () => {
      const run = await runCli(['call', 'sha256', '--args', '{"text":"abc"}']);
      expectSuccess(run);
      expect(run.stdout).toBe('{"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}\n');
      expect(run.stderr).toBe('');
    });

    it('prints echo\'s arguments back unchanged', async () => {
      const args = { a: [1, 2, { b: 'c' }], unicode: 'é✓' };
      // One component is enough here (the sha256 test above calls through the embedded defaults).
      const run = await runCli(['call', 'echo', '--args', JSON.stringify(args), '--load', example('ctools')]);
      expectSuccess(run);
      expect(jsonOut(run)).toEqual(args);
    });
  });

  it('prints json_query\'s result as one JSON line without the C guests', async () => {
    const run = await runCli(['call', 'json_query', '--args', jsonQueryArgs, '--load', example('json')]);
    expectSuccess(run);
    expect(run.stdout.split('\n')).toHaveLength(2);
    expect(jsonOut(run)).toEqual({ matches: ['A', 'B'], count: 2 });
    expect(run.stderr).toBe('');
  });

  it.runIf(hasCGuests)('prints every event as one JSON line with --events', async () => {
    const run = await runCli(['call', 'events', '--args', '{}', '--load', fixture('counter'), '--events']);
    expectSuccess(run);
    const events = jsonLines(run);
    const types = events.map((event) => event.type);
    expect(types).toEqual(['start', 'progress', 'delta', 'delta', 'log', 'progress', 'result']);
    const callId = events[0]?.callId;
    expect(callId).toBeTypeOf('string');
    for (const event of events) expect(event.callId).toBe(callId);
    expect(events[0]).toMatchObject({ toolId: 'events', metadata: { executionMode: 'sandboxed' } });
    expect(events.filter((event) => event.type === 'delta').map((event) => event.data)).toEqual([{ i: 0 }, { i: 1 }]);
    expect(events[4]).toMatchObject({ level: 'info', message: 'events: two deltas sent', source: 'guest' });
    expect(events.at(-1)).toMatchObject({ data: { done: true } });
  });

  it.runIf(hasCGuests)('passes --conversation to the call, whose state lives only as long as the process', async () => {
    const conversation = `cli-test-${process.pid}`;
    const state = (args: unknown): Promise<CliRun> => runCli(['call', 'state', '--args', JSON.stringify(args), '--load', fixture('counter'), '--conversation', conversation, '--events']);
    const set = await state({ op: 'set', key: 'k', value: '"v"' });
    expectSuccess(set);
    expect(jsonLines(set)[0]).toMatchObject({ type: 'start', metadata: { conversationId: conversation } });
    expect(jsonLines(set).at(-1)).toMatchObject({ type: 'result', data: { ok: true } });
    // A new process starts with empty conversation state: what the first one set is gone.
    const get = await state({ op: 'get', key: 'k' });
    expectSuccess(get);
    expect(jsonLines(get).at(-1)).toMatchObject({ type: 'result', data: { value: null } });
  });

  it('exits 1 with TOOL_NOT_FOUND on stderr for an unknown tool', async () => {
    const run = await runCli(['call', 'no_such_tool', '--args', '{}']);
    const error = expectCallFailure(run, 'TOOL_NOT_FOUND');
    expect(error.message).toContain('no_such_tool');
  });

  it.runIf(hasCGuests)('exits 1 with INVALID_INPUT on stderr for arguments that fail the schema', async () => {
    const run = await runCli(['call', 'sha256', '--args', '{"text":42}', '--load', example('ctools')]);
    const error = expectCallFailure(run, 'INVALID_INPUT');
    expect(error.message).toContain('sha256');
    expect(error.details).toMatchObject({ errors: [expect.objectContaining({ path: '/text' })] });
  });

  it.runIf(hasCGuests)('exits 1 with TOOL_ERROR and the tool\'s own code in details', async () => {
    const run = await runCli(['call', 'fail', '--args', '{}', '--load', fixture('counter')]);
    const error = expectCallFailure(run, 'TOOL_ERROR');
    expect(error.details).toMatchObject({ code: 'MY_CODE', details: { why: 'asked' } });
    expect(error.callId).toBeTypeOf('string');
  });

  it('exits 1 with COMPONENT_INVALID when --load names a file that is not a component', async () => {
    const garbage = join(tempDir, 'garbage.wasm');
    writeFileSync(garbage, 'this is not webassembly\n');
    const run = await runCli(['call', 'anything', '--args', '{}', '--load', garbage]);
    const error = expectCallFailure(run, 'COMPONENT_INVALID');
    expect(error.message).toContain('garbage.wasm');
  });

  it('exits 1 with COMPONENT_INVALID when --load names a missing path', async () => {
    const missing = join(tempDir, 'does-not-exist.wasm');
    const run = await runCli(['call', 'anything', '--args', '{}', '--load', missing]);
    const error = expectCallFailure(run, 'COMPONENT_INVALID');
    expect(error.message).toContain('does-not-exist.wasm');
  });

  it.runIf(hasCGuests)('keeps stderr one error object when the policy refuses a call, with the denial\'s audit entry in it', async () => {
    const run = await runCli(['call', 'sha256', '--args', '{"text":"x"}', '--load', example('ctools'), '--policy', '{"network_policy":"FULL_ACCESS"}']);
    expectCallFailure(run, 'PERMISSION_DENIED');
    const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(1);
    const { error } = JSON.parse(lines[0]!) as { error: { audit?: Array<Record<string, unknown>> } };
    expect(error.audit).toEqual([expect.objectContaining({ tool: 'sha256', decision: 'denied', code: 'PERMISSION_DENIED', network: 'FULL_ACCESS' })]);
  });

  it('calls with {} when --args is missing: a tool that needs arguments refuses them with INVALID_INPUT (issue 41)', async () => {
    const run = await runCli(['call', 'json_query']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr.trim().split('\n').at(-1)!)).toMatchObject({ error: { code: 'INVALID_INPUT' } });
  });

  it('exits 2 when --args is not JSON', async () => {
    const run = await runCli(['call', 'json_query', '--args', '{not json']);
    expectUsageError(run);
    expect(run.stderr).toContain('--args');
  });

  it('exits 2 on an unknown option', async () => {
    const run = await runCli(['call', 'json_query', '--args', '{}', '--no-such-option']);
    expectUsageError(run);
    expect(run.stderr).toContain('--no-such-option');
  });

  it('exits 2 when --policy is not JSON', async () => {
    const run = await runCli(['call', 'json_query', '--args', jsonQueryArgs, '--policy', 'timeout=5s']);
    expectUsageError(run);
    expect(run.stderr).toContain('--policy');
  });

  it.runIf(hasCGuests)('accepts a --policy with a duration string, a network label and memory_mb', async () => {
    const policy = JSON.stringify({ timeout: '5s', network_policy: 'deny_all', memory_mb: 64 });
    const run = await runCli(['call', 'echo', '--args', jsonQueryArgs, '--load', example('ctools'), '--policy', policy]);
    expectSuccess(run);
    expect(jsonOut(run)).toEqual(JSON.parse(jsonQueryArgs));
  });

  it.runIf(hasCGuests)('accepts a --policy timeout in the proto Duration object form', async () => {
    // Generous: the budget also covers the new process's first worker start and component load (1.5 s ran out on a loaded CI machine).
    const policy = JSON.stringify({ timeout: { seconds: 30, nanos: 500_000_000 } });
    const run = await runCli(['call', 'echo', '--args', jsonQueryArgs, '--load', example('ctools'), '--policy', policy]);
    expectSuccess(run);
    expect(jsonOut(run)).toEqual(JSON.parse(jsonQueryArgs));
  });

  it.runIf(hasCGuests)('exits 1 with INVALID_INPUT for a --policy with an unknown label', async () => {
    const policy = JSON.stringify({ network_policy: 'bogus_label' });
    const run = await runCli(['call', 'echo', '--args', jsonQueryArgs, '--load', example('ctools'), '--policy', policy]);
    const error = expectCallFailure(run, 'INVALID_INPUT');
    expect(error.message).toContain('bogus_label');
  });

  it.runIf(hasCGuests)('ends a runaway guest at its --policy timeout with TOOL_TIMEOUT and exits', async () => {
    const run = await runCli(['call', 'loop', '--args', '{}', '--load', fixture('counter'), '--policy', '{"timeout":"0.2s"}'], 30_000);
    const error = expectCallFailure(run, 'TOOL_TIMEOUT');
    expect(error.message).toContain('200 ms');
    // Loading the component takes well under a second; the loop must not keep the process alive.
    expect(run.ms).toBeLessThan(15_000);
  });
});

describe.concurrent('toolhost inspect', () => {
  // A small component when there is one: reading the WIT of a componentize-js one (12 MB) and starting it costs more.
  const inspected = hasCGuests ? { file: fixture('counter'), tools: COUNTER_TOOLS } : { file: fixture('noisy'), tools: NOISY_TOOLS };

  it('prints the component\'s WIT world and its tools as text', async () => {
    const run = await runCli(['inspect', inspected.file]);
    expectSuccess(run);
    expect(run.stdout).toContain('export toolhost:tool/tool@0.1.0;');
    for (const name of inspected.tools) expect(run.stdout).toContain(`"name": "${name}"`);
  });

  it('prints the WIT world and the tool-info list as JSON with --json', async () => {
    const run = await runCli(['inspect', inspected.file, '--json']);
    expectSuccess(run);
    const report = jsonOut(run) as { id: string; wit: string; tools: Array<{ name: string; inputSchema: { type?: string } }> };
    expect(report.wit).toContain('toolhost:tool/tool@0.1.0');
    expect(report.id).toMatch(/^[0-9a-f]{64}$/);
    expect(report.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(inspected.tools));
    for (const tool of report.tools) expect(tool.inputSchema.type).toBe('object');
  });

  it('exits 1 with COMPONENT_INVALID for a file that is not a component', async () => {
    const garbage = join(tempDir, 'inspect-garbage.wasm');
    writeFileSync(garbage, Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]));
    const run = await runCli(['inspect', garbage]);
    expectCallFailure(run, 'COMPONENT_INVALID');
  });

  it('exits 2 without a path', async () => {
    expectUsageError(await runCli(['inspect']));
  });
});

