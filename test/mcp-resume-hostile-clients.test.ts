/**
 * Resumable 2025 streams against the clients that broke the 100,000-call soak (host/servers/mcp-stream-resume.ts):
 * the MCP SDK 1.x client (StreamableHTTPClientTransport over an undici Agent, as scripts/soak/mcp-driver.ts drives
 * it) resumes with GET + Last-Event-ID after every call that ended in a JSON-RPC error and after every call it
 * cancelled. The server used to hold each such replay stream open, so its connections grew with the calls until the
 * caps refused everyone. Now a resume of a stream that is over gets what remains, then the stream ends (405 when
 * nothing remains), and the clients stop: the connections stay bounded and return to baseline, and no client keeps
 * reconnecting. Controls: a client whose stream really drops mid-call resumes and gets the rest of the call, and a
 * resume from an event not held (410) makes the SDK client retry a bounded number of times, then stop.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { makeRegistry } from './helpers.js';
import { threeStepsTool } from './three-steps-tool.js';

type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** A fetch on an Agent of its own (the soak's MCP driver does the same), optionally wrapped. */
function agentFetch(agent: Agent): Fetch {
  return (input, init) => undiciFetch(input, { ...init, dispatcher: agent } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;
}

async function until(condition: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The value of one sample of the exposition text (0 when absent). */
function sample(text: string, line: string): number {
  const found = text.split('\n').find((entry) => entry.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

describe('SDK 1.x clients whose calls end in errors and cancels, with resumable streams on', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let metrics: HostMetrics;
  let release: () => void = () => undefined;

  beforeEach(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'wait',
      description: 'Waits until cancelled.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('cancelled')), { once: true });
      }),
    }));
    registry.register(defineNativeTool({
      name: 'echo',
      description: 'Returns its arguments.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      run: async (args) => args,
    }));
    registry.register(threeStepsTool((go) => (release = go)));
    metrics = createMetrics(registry);
    // Resumption on (the default now; named here so the test means the same on a host where it is not), and a short
    // retry: so the clients' reconnections come quickly.
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, progressFlushMs: 0, resumeEvents: 1000, resumeRetryMs: 100, limitMetrics: metrics.limits });
  });
  afterEach(async () => {
    release();
    await server?.close();
    metrics?.close();
    await registry?.close();
  });

  it('keeps the server\'s connections bounded, stops the clients\' reconnections, and returns to baseline', async () => {
    const baseline = await server.connections();
    const CLIENTS = 6;
    const ROUNDS = 10;
    const agents: Agent[] = [];
    const clients: Array<{ client: Client; transport: StreamableHTTPClientTransport }> = [];
    const resumes = { count: 0 };
    for (let i = 0; i < CLIENTS; i += 1) {
      const agent = new Agent();
      agents.push(agent);
      const plain = agentFetch(agent);
      const counting: Fetch = (input, init) => {
        if (init?.method === 'GET' && new Headers(init.headers).has('last-event-id')) resumes.count += 1;
        return plain(input, init);
      };
      const client = new Client({ name: `hostile-${i}`, version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: counting });
      client.onerror = () => undefined;
      await client.connect(transport);
      clients.push({ client, transport });
    }
    let errors = 0;
    let cancels = 0;
    await Promise.all(clients.map(async ({ client }) => {
      for (let round = 0; round < ROUNDS; round += 1) {
        // A JSON-RPC error (-32602, TOOL_NOT_FOUND): the SDK 1.x client does not count it as the answer and resumes.
        await client.callTool({ name: 'no_such_tool', arguments: {} }).then(() => undefined, (error: unknown) => {
          if (error instanceof McpError) errors += 1;
        });
        // A cancel: the server closes the request's stream, and the client resumes it.
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), 15);
        await client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: controller.signal }).then(() => undefined, () => {
          cancels += 1;
        });
        clearTimeout(timer);
      }
    }));
    expect(errors).toBe(CLIENTS * ROUNDS);
    expect(cancels).toBe(CLIENTS * ROUNDS);
    // Every call's stream is resumed (retry: 100 ms; the SDK's own default is 1 s).
    await until(() => resumes.count >= CLIENTS * ROUNDS * 2, 15_000, 'the clients to resume every call\'s stream');
    await sleep(1500);
    const settled = resumes.count;
    // No replay stream is held: once the idle kept-alive connections time out (5 s), each client keeps only its
    // standalone GET stream (the old server held one more stream per error and per cancel here: 120).
    let open = 0;
    await until(async () => (open = await server.connections() - baseline) <= CLIENTS, 15_000, 'only the standalone streams to stay open').catch((error: unknown) => {
      throw new Error(`${(error as Error).message}: ${open} connections open`);
    });
    // And nobody kept reconnecting (many retry: intervals later, not one more resume).
    expect(resumes.count).toBe(settled);
    expect(settled).toBeLessThanOrEqual(CLIENTS * ROUNDS * 3);
    // Each was answered at once from the store: 405 (nothing left), none held open as a live stream.
    const text = await metrics.metrics();
    expect(sample(text, 'toolhost_server_resumes_total{server="mcp",outcome="complete"}')).toBeGreaterThanOrEqual(CLIENTS * ROUNDS * 2);
    expect(sample(text, 'toolhost_server_resumes_total{server="mcp",outcome="live"}')).toBe(0);
    // The honest path still works on the same sessions.
    const answered = (await clients[0]!.client.callTool({ name: 'echo', arguments: { text: 'still here' } })) as CallToolResult;
    expect(answered.structuredContent).toEqual({ text: 'still here' });
    await Promise.allSettled(clients.map(({ transport }) => transport.terminateSession()));
    await Promise.allSettled(clients.map(({ client }) => client.close()));
    await Promise.all(agents.map((agent) => agent.close()));
    await until(async () => (await server.connections()) <= baseline, 10_000, 'the server\'s connections to return to baseline');
  });

  it('resumes a stream that really dropped mid-call and receives the rest of the call (SDK 1.x client)', async () => {
    const agent = new Agent();
    const plain = agentFetch(agent);
    let cut = false;
    // The tools/call POST's connection is cut once the client has seen its first progress (the stream drops mid-call).
    const dropping: Fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      if (cut || init?.method !== 'POST' || !body.includes('"tools/call"')) return plain(input, init);
      cut = true;
      const controller = new AbortController();
      const response = await plain(input, { ...init, signal: controller.signal });
      const reader = response.body!.getReader();
      let seen = '';
      const stream = new ReadableStream<Uint8Array>({
        async pull(sink) {
          // Dropped on the read after the one that carried the first progress (so the client has seen it).
          if (seen.includes('"one"')) {
            controller.abort();
            sink.error(new Error('the connection dropped'));
            return;
          }
          const { value, done } = await reader.read();
          if (done) return sink.close();
          sink.enqueue(value);
          seen += new TextDecoder().decode(value);
        },
      });
      return new Response(stream, { status: response.status, headers: response.headers });
    };
    const client = new Client({ name: 'dropping', version: '1.0.0' });
    client.onerror = () => undefined;
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: dropping }));
    const progress: string[] = [];
    const call = client.callTool({ name: 'three_steps', arguments: {} }, undefined, { onprogress: (event) => progress.push(event.message ?? ''), timeout: 20_000 });
    await until(() => cut && progress.includes('one'), 10_000, 'the first progress');
    // Let the client resume while the call still runs, then let the call finish.
    await until(async () => sample(await metrics.metrics(), 'toolhost_server_resumes_total{server="mcp",outcome="live"}') >= 1, 10_000, 'the client to resume');
    release();
    const result = (await call) as CallToolResult;
    expect(result.structuredContent).toEqual({ steps: 3 });
    expect(progress).toContain('three');
    await client.close();
    await agent.close();
  });

  it('answers a resume from an event it does not hold 410, and the SDK 1.x client stops after its retries', async () => {
    const agent = new Agent();
    const plain = agentFetch(agent);
    let gone = 0;
    // A client that presents an event id the session never had, on every resume.
    const forging: Fetch = async (input, init) => {
      if (init?.method !== 'GET' || !new Headers(init.headers).has('last-event-id')) return plain(input, init);
      const headers = new Headers(init.headers);
      headers.set('last-event-id', 'f0f0f0f0-0000-4000-8000-000000000000_1');
      const response = await plain(input, { ...init, headers });
      if (response.status === 410) gone += 1;
      return response;
    };
    const client = new Client({ name: 'forging', version: '1.0.0' });
    client.onerror = () => undefined;
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: forging }));
    await client.callTool({ name: 'no_such_tool', arguments: {} }).catch(() => undefined);
    await until(() => gone >= 1, 10_000, 'the client to resume');
    await sleep(1500);
    const seen = gone;
    // The SDK's reconnection options: 2 retries, then it stops.
    expect(seen).toBeLessThanOrEqual(3);
    await sleep(1000);
    expect(gone).toBe(seen);
    expect(sample(await metrics.metrics(), 'toolhost_server_refused_total{server="mcp",reason="resume_window"}')).toBe(seen);
    await client.close();
    await agent.close();
  });
});
