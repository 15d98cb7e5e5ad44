/**
 * Issue 11's "Done when", end to end: the guests that took the host down
 * ("Found" 1-4, 9, and a guest that keeps opening handles) run against `toolhost serve` itself (the built CLI,
 * spawned) over gRPC and MCP HTTP, all at once, while honest calls run beside
 * them. The host stays up, each hostile call ends with exactly one terminal
 * (a structured error, or a result showing that its growth was refused),
 * honest calls succeed, and a 16-memory component stays within its cap in total.
 *
 * One server serves every case (the suite has a time target); hostile calls
 * run concurrently, with limits small enough to trip early.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComponentCache, schemaCheckOf } from '../../host/sandbox/load/component-cache.js';
import { resolveSchemaLimits } from '../../host/core/schema-limits.js';
import { componentId } from '../../host/sandbox/load/component-file.js';
import { cliEnv, cliPath } from '../cli-runner.js';
import { growerComponent } from '../fixtures/wat/grower.js';
import { fixture, hasCGuests, root, sharedCacheDir } from '../helpers.js';

interface Frame { final: boolean; data: Buffer; summary: Buffer }
interface ToolServiceClient extends grpc.Client {
  CallStream(request: Record<string, unknown>, metadata: grpc.Metadata): grpc.ClientReadableStream<Frame>;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};

/** What a gRPC CallStream ended with: its terminal frames (exactly one expected) and the last frame's summary. */
interface Ended { finals: number; summary: { status: string; error?: { code: string; details?: Record<string, unknown> }; accounting?: Record<string, unknown> }; data: unknown }

const CATASTROPHIC = '{"type":"object","properties":{"s":{"type":"string","pattern":"^(a+)+$"}}}';

describe.runIf(hasCGuests)('toolhost serve under hostile guests, with honest calls beside them', () => {
  let child: ChildProcess;
  let output = '';
  let mcpUrl = '';
  let grpcClient: ToolServiceClient;
  let mcp: Client;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-hostile-'));
    const write = async (name: string, bytes: Promise<Uint8Array>): Promise<string> => {
      const file = join(dir, name);
      writeFileSync(file, await bytes);
      return file;
    };
    const spinnerBytes = await growerComponent({ holders: 1, spinWithoutEnv: true });
    const [grower, spinner, pattern, hoarder] = await Promise.all([
      write('grower16.wasm', growerComponent({ holders: 16 })),
      write('spinner.wasm', Promise.resolve(spinnerBytes)),
      write('pattern.wasm', growerComponent({ holders: 1, schema: CATASTROPHIC })),
      write('hoarder.wasm', growerComponent({ holders: 1, hoardPollables: 'keep' })),
    ]);
    // The spinner's describe() hangs too (no environment at load): seed the cache with its tools, as for a
    // component that was described before it started hanging (content-addressed, so the shared cache can hold it).
    const cache = new ComponentCache(sharedCacheDir);
    const entry = await cache.prepare(componentId(spinnerBytes), spinnerBytes, 'spinner');
    await cache.saveTools(entry, [{ name: 'spin_table', description: 'x', inputSchema: '{"type":"object"}', streaming: false, idempotent: false }], schemaCheckOf(resolveSchemaLimits()));
    const config = join(dir, 'toolhost.yaml');
    writeFileSync(config, `host:
  pool:
    threads: 2
    max_heap_mb: 64
  guest_limits:
    host_calls_per_call: 300
    handles_per_call: 5000
    state_value_bytes: 4096
    state_keys_per_conversation: 20
    state_bytes_per_conversation: 32768
    table_elements: 1000000
    spare_ms: 500
tools:
  - path: ${fixture('flood')}
  - path: ${fixture('http_flood')}
  - path: ${grower}
    grant: { memory_mb: 64 }
  - path: ${spinner}
    grant: { privilege: ELEVATED, env_allow: [ARM], env: { ARM: "1" } }
  - path: ${pattern}
  - path: ${hoarder}
`);
    child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--port', '0', '--grpc-port', '0'], { cwd: root, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 90_000;
    while (!/gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(output)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`toolhost serve did not start: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    mcpUrl = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(output)![0];
    const grpcAddress = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(output)![1]!;
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcAddress, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    mcp = new Client({ name: 'hostile-guests-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
  });
  afterAll(async () => {
    grpcClient?.close();
    await mcp?.close().catch(() => undefined);
    if (child && child.exitCode === null) child.kill('SIGKILL');
  });

  const overGrpc = (tool: string, args: unknown, policy?: Record<string, unknown>): Promise<Ended> => new Promise((resolve, reject) => {
    const frames: Frame[] = [];
    const stream = grpcClient.CallStream({ tool_name: tool, content_type: 'application/json', args: Buffer.from(JSON.stringify(args)), ...(policy ? { policy } : {}) }, new grpc.Metadata());
    stream.on('data', (frame: Frame) => frames.push(frame));
    stream.on('error', reject);
    stream.on('end', () => {
      const last = frames.at(-1);
      if (!last) return reject(new Error(`${tool}: no frames`));
      const text = last.data.toString('utf8');
      resolve({ finals: frames.filter((frame) => frame.final).length, summary: JSON.parse(last.summary.toString('utf8')) as Ended['summary'], data: text === '' ? undefined : JSON.parse(text) });
    });
  });
  const overMcp = async (tool: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>): Promise<CallToolResult> =>
    (await mcp.callTool({ name: tool, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;

  it('keeps serving: floods, growth, a catastrophic pattern and a spinning spare all end once; honest calls succeed', async () => {
    let hostileDone = false;
    const honest: CallToolResult[] = [];
    // Honest calls over MCP for as long as the hostile ones run (and at least a few).
    const honestLoop = (async () => {
      while (!hostileDone || honest.length < 4) honest.push(await overMcp('honest'));
    })();
    // The spinner: an armed call works, the spare made after it hangs (500 ms), the worker is replaced;
    // the second hang quarantines the component. Bounded attempts, each followed by an honest call.
    const spinnerLoop = (async () => {
      const armed = { 'toolhost/policy': { privilege_level: 'ELEVATED' } };
      const seen: CallToolResult[] = [];
      for (let attempt = 0; attempt < 10; attempt += 1) {
        const result = await overMcp('spin_table', {}, armed);
        seen.push(result);
        expect(await overMcp('honest')).toMatchObject({ structuredContent: { ok: true } });
        if (result.isError) break;
      }
      return seen;
    })();
    const [stateCalls, stateRefused, httpFlood, table, memory, handles, pattern, spinner] = await Promise.all([
      // "Found" 1: overwriting one key never hits a state limit, only the host-call limit.
      overGrpc('state_flood', { count: 1_000_000, bytes: 1000, distinct: 1 }),
      // State past its per-value limit: the guest's set-state is refused and it answers.
      overGrpc('state_flood', { count: 1_000_000, bytes: 5000, distinct: 0 }),
      // "Found" 2: a denied-HTTP flood under DENY_ALL.
      overGrpc('flood', { count: 1_000_000 }),
      // "Found" 3: a table grown in a loop, and 16 memories grown under memory_mb 64.
      overGrpc('grow_table', {}),
      overGrpc('grow_memory', {}, { memory_mb: 64 }),
      // Handles opened and kept (WASI pollables).
      overGrpc('hoarder.grow_memory', {}),
      // "Found" 9, for a guest's own schema: ^(a+)+$ against 40 a's and a "!".
      overMcp('pattern.grow_table', { s: `${'a'.repeat(40)}!` }),
      spinnerLoop,
    ]).finally(() => {
      hostileDone = true;
    });
    await honestLoop;

    for (const ended of [stateCalls, stateRefused, httpFlood, table, memory, handles]) expect(ended.finals).toBe(1);
    expect(handles.summary.error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'handles', max: 5000 } });
    expect(stateCalls.summary.error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'host-calls', max: 300 } });
    expect(stateRefused.data).toEqual({ set: 0, refused: expect.stringMatching(/^OUTPUT_LIMIT_EXCEEDED: .*\(state_value_bytes\)$/) });
    expect(httpFlood.summary.error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'host-calls' } });
    expect(httpFlood.summary.accounting).toMatchObject({ networkDeniedCount: 300 });
    // Refused inside the guest at the cap (clamped to what a 64 MiB worker heap holds), not grown until the host aborts.
    const tablePages = (table.data as { pages: number }).pages;
    expect(tablePages).toBeGreaterThan(0);
    expect(tablePages).toBeLessThan(1_000_000);
    // 16 holders at 1 page each and the main module (which may grow a page for its answer): 64 MiB in all.
    const memoryPages = (memory.data as { pages: number }).pages;
    expect(memoryPages).toBeGreaterThan(800);
    expect(memoryPages + 16 + 2).toBeLessThanOrEqual(1024);
    expect(pattern).toMatchObject({ isError: true, structuredContent: { error: { code: 'INVALID_INPUT' } } });
    expect(JSON.stringify(pattern.content)).toContain('must match pattern');
    // The spinner served its armed calls until it was quarantined.
    expect(spinner.at(-1)).toMatchObject({ isError: true, structuredContent: { error: { code: 'COMPONENT_INVALID', details: { reason: 'quarantined' } } } });
    for (const early of spinner.slice(0, -1)) expect(early.structuredContent).toEqual({ pages: tablePages });

    expect(honest.length).toBeGreaterThanOrEqual(4);
    for (const result of honest) expect(result.structuredContent).toEqual({ ok: true });
    expect(child.exitCode).toBeNull();
    const health = (await (await fetch(mcpUrl.replace(/\/mcp$/, '/healthz'))).json()) as { status: string };
    expect(health.status).toBe('ok');
    // Each limit hit is counted on /metrics.
    const metrics = await (await fetch(mcpUrl.replace(/\/mcp$/, '/metrics'))).text();
    expect(metrics).toContain('toolhost_limit_hits_total{tool="state_flood",limit="host_calls_per_call"} 1');
    expect(metrics).toContain('toolhost_limit_hits_total{tool="state_flood",limit="state_value_bytes"} 1');
    expect(metrics).toContain('toolhost_limit_hits_total{tool="flood",limit="host_calls_per_call"} 1');
    expect(metrics).toContain('toolhost_limit_hits_total{tool="hoarder.grow_memory",limit="handles_per_call"} 1');
  });
});
