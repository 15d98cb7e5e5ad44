/**
 * The measured process of `npm run soak`: one host made by the composition
 * root (`loadHostConfig` + `createHost`, as `toolhost serve` does), serving
 * MCP over Streamable HTTP and the gRPC ToolService on 127.0.0.1 ephemeral
 * ports, plus two native tools. It also runs the soak's library calls itself
 * (`registry.stream`, in this process, which is what "the library" means),
 * told which call to make over the IPC channel of `fork`, and keeps the
 * ledger of accepted calls and terminal events (`onCallAccepted`,
 * `onCallFinished`). The drivers of the two servers run in the parent, so
 * what is sampled here is the host and the library calls it serves.
 *
 *   fork(dist/scripts/soak/host.js, [JSON.stringify(HostArgs)])   (main.ts does it)
 */
import { readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createHost, defineNativeTool, loadHostConfig, ToolhostError } from '../../host/index.js';
import { createMetrics, startGrpcServer, startMcpHttpServer } from '../../host/servers/index.js';
import { CallLedger } from './ledger.js';
import { libraryCall } from './library-driver.js';
import { NATIVE_ECHO, NATIVE_WAIT, PLANNED_TOOLS, plannedCall } from './plan.js';
import type { FromHost, HostArgs, HostSample, ToHost } from './protocol.js';

const args = JSON.parse(process.argv[2] ?? '{}') as HostArgs;
const send = (message: FromHost): void => {
  process.send?.(message);
};
const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  const loaded = await loadHostConfig({ configPath: args.configPath });
  const host = await createHost(loaded.config);
  const { registry } = host;
  registry.register(defineNativeTool({
    name: NATIVE_ECHO,
    description: 'Returns its text.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    run: (input) => ({ text: (input as { text: string }).text }),
  }));
  registry.register(defineNativeTool({
    name: NATIVE_WAIT,
    description: 'Waits `ms` milliseconds, or until its call is cancelled or out of time.',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer', minimum: 0 } }, required: ['ms'] },
    run: (input, ctx) => new Promise((resolve, reject) => {
      const { ms } = input as { ms: number };
      const timer = setTimeout(() => resolve({ waited: ms }), ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new ToolhostError('CANCELLED', 'stopped'));
      }, { once: true });
    }),
  }));
  const missing = PLANNED_TOOLS.filter((name) => !registry.has(name));
  if (missing.length > 0) throw new Error(`the soak host lacks tools the plan calls: ${missing.join(', ')} (has ${registry.names().join(', ')})`);
  await registry.warm();

  const ledger = new CallLedger(args.calls);
  registry.onCallAccepted((_tool, callId) => ledger.accepted(callId));
  registry.onCallFinished((tool, event) => ledger.terminal(event.callId, tool, event.type === 'result' ? 'ok' : event.code));

  const metrics = createMetrics(registry);
  const mcp = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, metrics, limitMetrics: metrics.limits });
  const grpc = await startGrpcServer(registry, { host: '127.0.0.1', port: 0, limitMetrics: metrics.limits });
  const startedAt = performance.now();

  const sample = (label: string, collect: boolean): HostSample => {
    if (collect) gc?.();
    const memory = process.memoryUsage();
    const resources = process.getActiveResourcesInfo();
    const handleTypes: Record<string, number> = {};
    for (const type of resources) handleTypes[type] = (handleTypes[type] ?? 0) + 1;
    return {
      label,
      atS: (performance.now() - startedAt) / 1000,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      afterGc: collect && gc !== undefined,
      handles: resources.length,
      handleTypes,
      fds: readdirSync('/proc/self/fd').length,
      inFlight: registry.inFlight,
      mcpSessions: mcp.sessions,
      poolThreads: registry.sandboxStats()?.threads ?? 0,
    };
  };

  process.on('message', (raw) => {
    const message = raw as ToHost;
    switch (message.type) {
      case 'call':
        void libraryCall(registry, plannedCall(message.n, args.seed)).then((outcome) => send({ type: 'outcome', outcome }));
        break;
      case 'sample':
        send({ type: 'sample', sample: sample(message.label, message.gc) });
        break;
      case 'ledger':
        send({ type: 'ledger', totals: ledger.totals(), inFlight: registry.inFlight });
        break;
      case 'stop':
        void (async () => {
          metrics.close();
          await Promise.allSettled([mcp.close(), grpc.close()]);
          await host.close();
          send({ type: 'stopped' });
          process.disconnect?.();
        })();
        break;
    }
  });
  send({ type: 'ready', mcpUrl: mcp.url, grpcAddress: grpc.address, tools: registry.names().length, pid: process.pid });
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exitCode = 1;
  process.disconnect?.();
});
