/**
 * Issue 35, T12: clients cannot grow /metrics. Calls of tools that do not
 * exist (50 KB names, over MCP and gRPC) are counted under one `(unknown)`
 * series instead of one series per name; a known tool's calls keep their
 * name; a label that reaches its cap of distinct values counts the rest
 * under `(other)`, and says so.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../host/config/index.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { MAX_LABEL_CHARS } from '../host/servers/metric-labels.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { makeRegistry, root } from './helpers.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: Record<string, unknown>, callback: Callback<{ data: Buffer }>): grpc.ClientUnaryCall;
}
const toolPackage = grpc.loadPackageDefinition(loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
  sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } };
};

describe('tool names clients make up', () => {
  let registry: ToolRegistry;
  let metrics: HostMetrics;
  let mcp: McpHttpServer;
  let grpcServer: GrpcServerHandle;
  let grpcClient: ToolServiceClient;
  let client: Client;

  const scrape = async (): Promise<string> => (await fetch(mcp.url.replace(/\/mcp$/, '/metrics'))).text();
  const grpcCall = (tool: string): Promise<unknown> => new Promise((resolve) => {
    grpcClient.Call({ tool_name: tool, args: Buffer.from('{}') }, (error, frame) => resolve(error ?? frame));
  });

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'echo', description: 'Answers its arguments.', inputSchema: { type: 'object' }, run: async (args) => args }));
    metrics = createMetrics(registry);
    mcp = await startMcpHttpServer(registry, { metrics, limitMetrics: metrics.limits, progressFlushMs: 0 });
    grpcServer = await startGrpcServer(registry, { port: 0, limitMetrics: metrics.limits, shutdownTimeoutMs: 200 });
    grpcClient = new toolPackage.sw4rm.tool.ToolService(grpcServer.address, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 1 << 20 }) as unknown as ToolServiceClient;
    client = new Client({ name: 'metrics-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url)));
  });
  afterAll(async () => {
    await client?.close();
    grpcClient?.close();
    await grpcServer?.close();
    await mcp?.close();
    metrics?.close();
    await registry?.close();
  });

  it('counts 200 calls of 50 KB unknown names (MCP and gRPC) under one "(unknown)" series: /metrics grows by less than 4 KB', async () => {
    const before = (await scrape()).length;
    for (let i = 0; i < 100; i += 1) {
      const name = `${'x'.repeat(50 * 1024)}-${i}`;
      await client.callTool({ name, arguments: {} }).catch(() => undefined);
      await grpcCall(`${name}-grpc`);
    }
    const text = await scrape();
    expect(text.length - before).toBeLessThan(4096);
    expect(text).toContain('toolhost_calls_total{tool="(unknown)",outcome="TOOL_NOT_FOUND",stage="rejected"} 200');
    expect(text).not.toContain('xxxxxxxx');
  });

  it('keeps a known tool\'s calls under its own name (MCP and gRPC)', async () => {
    await client.callTool({ name: 'echo', arguments: { a: 1 } });
    await grpcCall('echo');
    const text = await scrape();
    expect(text).toContain('toolhost_calls_total{tool="echo",outcome="ok",stage="run"} 2');
    expect(text).toMatch(/toolhost_call_duration_seconds_count\{tool="echo"\} 2/);
  });
});

describe('label caps', () => {
  it('cuts long values and counts values past the cap under "(other)", counting each fold', async () => {
    const registry = makeRegistry();
    const metrics = createMetrics(registry, { maxLabelValues: 3 });
    try {
      for (let i = 0; i < 10; i += 1) metrics.limits.refused('mcp', `reason-${i}-${'r'.repeat(300)}`);
      const text = await metrics.metrics();
      const reasons = [...text.matchAll(/toolhost_server_refused_total\{server="mcp",reason="([^"]*)"\}/g)].map((match) => match[1]!);
      expect(reasons).toHaveLength(4);
      expect(reasons).toContain('(other)');
      expect(Math.max(...reasons.map((reason) => reason.length))).toBe(MAX_LABEL_CHARS);
      expect(text).toContain('toolhost_server_refused_total{server="mcp",reason="(other)"} 7');
      expect(text).toContain('toolhost_metric_label_values_folded_total{label="reason"} 7');
    } finally {
      metrics.close();
      await registry.close();
    }
  });
});

describe('servers.metrics.max_label_values in toolhost.yaml', () => {
  it('resolves to the servers\' settings, and refuses 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-metrics-'));
    try {
      const file = join(dir, 'toolhost.yaml');
      writeFileSync(file, 'tools: []\nservers:\n  metrics: { max_label_values: 50 }\n');
      expect((await loadConfig(file, { env: {} })).resolved.servers.metricsMaxLabelValues).toBe(50);
      writeFileSync(file, 'tools: []\nservers:\n  metrics: { max_label_values: 0 }\n');
      await expect(loadConfig(file, { env: {} })).rejects.toThrow('max_label_values');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
