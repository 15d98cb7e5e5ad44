/**
 * `toolhost list`, `call` and `serve` open one host (compose/host.ts), so for
 * the same config they show the same tools. Regression tests for the bugs of
 * three hosts assembled three ways: `list`/`call --config` ignored http_tools,
 * mcp_servers and admin tools; a config without `tools:` made `list` claim the
 * examples were not built; `serve --mcp none --no-grpc` exited 13 silently.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, cliPath, runCli } from '../cli-runner.js';
import { example, hasCGuests, root } from '../helpers.js';

const remoteServer = join(root, 'test', 'fixtures', 'mcp', 'remote-server.mjs');

function writeConfig(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-parity-'));
  const file = join(dir, 'toolhost.yaml');
  writeFileSync(file, body);
  return file;
}

/** Tool names as `list --json` prints them. */
async function listed(config: string): Promise<string[]> {
  const run = await runCli(['list', '--json', '--config', config]);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as Array<{ name: string }>).map((tool) => tool.name).sort();
}

/**
 * Tool names as `serve --mcp stdio` answers tools/list. Where guest code runs does not change which
 * tools are served: its workers stay in this process (no sandbox process to start, ~0.25 s of CPU).
 */
async function served(config: string): Promise<string[]> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [cliPath, 'serve', '--mcp', 'stdio', '--containment', 'thread', '--config', config], cwd: root, env: cliEnv(), stderr: 'pipe' });
  const client = new Client({ name: 'parity-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    return tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

describe.concurrent('one config, one set of tools', () => {
  let http: Server;
  let config = '';

  beforeAll(async () => {
    // The HTTP tool's endpoint: three NDJSON lines, then the end of the body.
    http = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/x-ndjson' });
      response.end('{"n":1}\n{"n":2}\n{"n":3}\n');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    config = writeConfig(`
${hasCGuests ? `tools:\n  - path: ${example('ctools')}\n` : ''}
http_tools:
  - name: local_stream
    description: Streams NDJSON from a local server.
    url: http://127.0.0.1:${port}/stream
    method: GET
    input_schema: { type: object }
    grant: { network: EGRESS_RESTRICTED, egress_allow: ["127.0.0.1:${port}"] }
    default_policy: { network_policy: EGRESS_RESTRICTED }
mcp_servers:
  - name: remote
    command: ${process.execPath}
    args: [${remoteServer}]
admin_tools: true
servers: { mcp: { http: { enabled: false } }, grpc: { enabled: false } }
`);
  });
  afterAll(async () => {
    await new Promise((resolve) => http.close(resolve));
  });

  it('list, serve and call see the HTTP tools, the imported MCP tools and the admin tools', async () => {
    const [fromList, fromServe] = await Promise.all([listed(config), served(config)]);
    expect(fromList).toEqual(fromServe);
    expect(fromList).toEqual(expect.arrayContaining(['local_stream', 'remote.divide', 'toolhost_load', 'toolhost_unload']));
    if (hasCGuests) expect(fromList).toEqual(expect.arrayContaining(['sha256', 'echo']));

    const [stream, divide] = await Promise.all([
      runCli(['call', 'local_stream', '--args', '{}', '--config', config]),
      runCli(['call', 'remote.divide', '--args', '{"a":6,"b":3}', '--config', config]),
    ]);
    expect(stream.code, stream.stderr).toBe(0);
    expect(JSON.parse(stream.stdout)).toMatchObject({ status: 200 });
    expect(divide.code, divide.stderr).toBe(0);
    expect(JSON.parse(divide.stdout)).toEqual({ quotient: 2 });
  });

  it('a config without tools: lists what it does name, and never blames the example tools', async () => {
    const onlyAdmin = writeConfig('admin_tools: true\nservers: { mcp: { http: { enabled: false } }, grpc: { enabled: false } }\n');
    const empty = writeConfig('host: { log_level: warn }\n');
    const [run, fromServe, none] = await Promise.all([
      runCli(['list', '--json', '--config', onlyAdmin]),
      served(onlyAdmin),
      runCli(['list', '--config', empty]),
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as Array<{ name: string }>).map((tool) => tool.name).sort()).toEqual(['toolhost_load', 'toolhost_unload']);
    expect(run.stderr).not.toContain('not built');
    expect(fromServe).toEqual(['toolhost_load', 'toolhost_unload']);

    expect(none.code).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('no tools');
    expect(none.stderr).not.toContain('not built');
  });
});

describe.concurrent('toolhost serve with nothing to serve', () => {
  it('--mcp none --no-grpc is a usage error (exit 2) that says why', async () => {
    const run = await runCli(['serve', '--mcp', 'none', '--no-grpc']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr.split('\n')[0]!)).toMatchObject({ error: { code: 'INVALID_INPUT', message: expect.stringContaining('nothing to serve') } });
  });

  it('admin tools over a server the command line turns on without tokens: a usage error naming admin_tools (issue 35, T13)', async () => {
    const config = writeConfig('admin_tools: true\nservers:\n  mcp: { http: { enabled: false } }\n  grpc: { enabled: false }\n');
    const run = await runCli(['serve', '--mcp', 'http', '--port', '0', '--no-grpc', '--config', config]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('admin_tools needs authenticated callers on a network server');
  });

  it('so is a config that turns both servers off', async () => {
    const config = writeConfig('servers:\n  mcp: { http: { enabled: false } }\n  grpc: { enabled: false }\n');
    const run = await runCli(['serve', '--config', config]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('nothing to serve');
  });
});
