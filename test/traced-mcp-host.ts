/**
 * A traced host for the MCP telemetry tests: an OTLP receiver's tracer, a registry with one component, and
 * its MCP HTTP server on an ephemeral loopback port; `stop` closes them in order.
 */
import type { ToolRegistry } from '../host/index.js';
import type { CallTracer } from '../host/core/tracing.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { makeRegistry } from './helpers.js';
import type { OtlpReceiver } from './otlp-receiver.js';

export interface TracedMcpHost {
  tracer: CallTracer;
  registry: ToolRegistry;
  server: McpHttpServer;
  stop(): Promise<void>;
}

/** Start `receiver`, then a traced registry serving `wasm` over MCP HTTP. */
export async function startTracedMcpHost(receiver: OtlpReceiver, wasm: string): Promise<TracedMcpHost> {
  await receiver.start();
  const tracer = await createTracer(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })!, 'test');
  const registry = makeRegistry({ tracer });
  await registry.registerWasmTools(wasm);
  const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  return {
    tracer,
    registry,
    server,
    async stop() {
      await server.close();
      await registry.close();
      await tracer.shutdown();
      await receiver.stop();
    },
  };
}
