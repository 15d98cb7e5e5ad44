/**
 * `toolhost serve` as a black box: the real CLI, spawned, driven by the
 * official MCP SDK client over stdio and over Streamable HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { example, examplesDir, fixture, hasCGuests, root } from '../helpers.js';

function writeConfig(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-serve-'));
  const file = join(dir, 'toolhost.yaml');
  writeFileSync(file, body);
  return file;
}

describe.runIf(hasCGuests)('toolhost serve --mcp stdio', () => {
  let client: Client;
  const changes: number[] = [];

  beforeAll(async () => {
    const config = writeConfig(`
tools:
  - path: ${example('text')}
  - path: ${example('json')}
  - path: ${fixture('counter')}
admin_tools: true
admin:
  load_dirs: [${examplesDir}]
servers:
  mcp: { http: { enabled: false } }
  grpc: { enabled: false }
`);
    const transport = new StdioClientTransport({ command: process.execPath, args: [cliPath, 'serve', '--mcp', 'stdio', '--config', config], cwd: root, env: cliEnv(), stderr: 'pipe' });
    client = new Client({ name: 'serve-cli-test', version: '1.0.0' });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes.push(Date.now());
    });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
  });

  it('lists the configured tools, with schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['word_count', 'json_query', 'counter', 'toolhost_load', 'toolhost_unload']));
    expect(tools.find((tool) => tool.name === 'json_query')?.inputSchema).toMatchObject({ type: 'object', required: ['document', 'path'] });
  });

  it('calls a tool and sends progress notifications while it runs', async () => {
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = (await client.callTool(
      { name: 'word_count', arguments: { text: 'a b c '.repeat(3000) } },
      undefined,
      { onprogress: (update) => progress.push({ progress: update.progress, ...(update.message === undefined ? {} : { message: update.message }) }) },
    )) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ words: 9000 });
    expect(progress.length).toBeGreaterThan(1);
  });

  it('answers a failure as a result with isError and the error code', async () => {
    // json_query declares an output schema, so the error rides in _meta (clients check structuredContent against it).
    const result = (await client.callTool({ name: 'json_query', arguments: { document: {}, path: 'no-dollar' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('TOOL_ERROR');
    expect(result._meta?.['toolhost/error']).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'INVALID_PATH' } });
    // A tool without one carries it in structuredContent.
    const failed = (await client.callTool({ name: 'fail', arguments: {} })) as CallToolResult;
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({ error: { code: 'TOOL_ERROR', details: { code: 'MY_CODE' } } });
  });

  it('cancels a call mid-way when the client cancels the request', async () => {
    const controller = new AbortController();
    const pending = client.callTool({ name: 'stream_then_wait', arguments: {} }, undefined, { signal: controller.signal, onprogress: () => controller.abort() });
    await expect(pending).rejects.toThrow();
    // The server stopped the guest (it only stops when cancelled) and keeps serving.
    const after = (await client.callTool({ name: 'counter', arguments: {} })) as CallToolResult;
    expect(after.structuredContent).toEqual({ count: 1 });
  });

  it('sends tools/list_changed after a component is loaded at runtime', async () => {
    const before = changes.length;
    const loaded = (await client.callTool({ name: 'toolhost_load', arguments: { path: example('ctools') } })) as CallToolResult;
    expect(loaded.isError).toBeFalsy();
    await expect.poll(() => changes.length, { timeout: 5000 }).toBeGreaterThan(before);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['sha256', 'echo']));
    const unloaded = (await client.callTool({ name: 'toolhost_unload', arguments: { component: 'ctools' } })) as CallToolResult;
    expect(unloaded.structuredContent).toMatchObject({ removed: expect.arrayContaining(['sha256', 'echo']) });
  });
});

describe('toolhost serve --mcp http', () => {
  let child: ChildProcess;
  let url = '';
  let output = '';

  beforeAll(async () => {
    child = spawn(process.execPath, [cliPath, 'serve', '--mcp', 'http', '--port', '0', '--no-grpc'], { cwd: root, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/http:\/\/127\.0\.0\.1:\d+\/mcp/.test(output)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`toolhost serve did not start: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    url = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(output)![0];
  });
  afterAll(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('serves the example tools on embedded defaults and answers tools/list and tools/call', async () => {
    const client = new Client({ name: 'serve-http-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['word_count', 'json_query', 'http_get']));
      const result = (await client.callTool({ name: 'json_pointer', arguments: { document: { a: [1, 2] }, pointer: '/a/1' } })) as CallToolResult;
      expect(result.structuredContent).toEqual({ found: true, value: 2 });
    } finally {
      await client.close();
    }
  });

  it('answers /healthz and /metrics beside /mcp', async () => {
    const base = url.replace(/\/mcp$/, '');
    const health = (await (await fetch(`${base}/healthz`)).json()) as { status: string };
    expect(health.status).toBe('ok');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('toolhost_calls_total');
    expect(metrics).toContain('toolhost_pool_queue_depth');
    expect(metrics).toContain('toolhost_pool_worker_spins_total');
    expect(metrics).toContain('toolhost_pool_instances_made_ahead_total');
  });

  it('runs its sandbox in a process of its own by default, and keeps serving when that process is killed', async () => {
    const base = url.replace(/\/mcp$/, '');
    const health = async () => (await (await fetch(`${base}/healthz`)).json()) as { pool: { containment: string; process?: { pid?: number; restarts: number } } };
    const before = await health();
    expect(before.pool).toMatchObject({ containment: 'process', process: { pid: expect.any(Number), restarts: 0 } });
    expect(before.pool.process?.pid).not.toBe(child.pid);
    process.kill(before.pool.process!.pid!, 'SIGKILL');
    // A call sent before the host sees the death ends TOOL_CRASHED (at most once); wait for the restart.
    await vi.waitFor(async () => expect((await health()).pool.process?.restarts).toBe(1), { timeout: 10_000, interval: 50 });
    const client = new Client({ name: 'serve-http-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const result = (await client.callTool({ name: 'json_pointer', arguments: { document: { a: [1, 2] }, pointer: '/a/0' } })) as CallToolResult;
      expect(result).toMatchObject({ structuredContent: { found: true, value: 1 } });
    } finally {
      await client.close();
    }
    expect((await health()).pool.process?.restarts).toBe(1);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^toolhost_sandbox_process_restarts_total 1$/m);
  });

  it('drains and exits 0 on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('toolhost serve on a port already in use', () => {
  it('exits 1 with INVALID_INPUT naming the address and the setting, for MCP HTTP and for gRPC', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    // No components: what is loaded does not matter here, and loading and compiling the examples cost ~1 s of CPU a process.
    const config = writeConfig('http_tools:\n  - { name: probe, description: A tool that is never called., url: "http://127.0.0.1:9/", input_schema: { type: object } }\n');
    try {
      const [mcp, grpc] = await Promise.all([
        runCli(['serve', '--port', String(port), '--no-grpc', '--config', config]),
        runCli(['serve', '--mcp', 'none', '--grpc-port', String(port), '--config', config]),
      ]);
      for (const [run, setting] of [[mcp, '--port'], [grpc, '--grpc-port']] as const) {
        expect(run.code, run.stderr).toBe(1);
        const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
        expect(lines).toHaveLength(1);
        const { error } = JSON.parse(lines[0]!) as { error: { code: string; message: string; details: { address: string } } };
        expect(error.code).toBe('INVALID_INPUT');
        expect(error.details.address).toBe(`127.0.0.1:${port}`);
        expect(error.message).toContain(setting);
      }
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('toolhost serve with a broken config', () => {
  it('exits 1 with an error naming the file, line and column', async () => {
    const config = writeConfig(`host:
  log_level: warn
tools:
  - path: ${example('json')}
    grant:
      network: SOMETIMES
`);
    const run = await runCli(['serve', '--config', config]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.yaml:6:\d+:/);
    expect(run.stderr).toContain('SOMETIMES');
  });
});
