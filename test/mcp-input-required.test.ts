/**
 * Sampling and elicitation for MCP 2026-07-28 clients (host/servers/mcp-input-required.ts): the
 * guest that asks is parked, the tools/call answers input_required, and the SDK v2 client's retry
 * with the answer resumes the guest where it asked (the tool's result carries the answers).
 * Bounded: parked calls per principal (OVERLOADED past it), an answer that never comes ends the
 * call with its wall budget (one terminal event), and a requestState is good once, for its own
 * principal only. Approvals through elicitation work on 2026 as on 2025.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { TerminalEvent, ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { rawCall, rawMessage, UNKNOWN_STATE } from './mcp-raw-2026.js';

type Structured = { replies?: string[]; model?: string; error?: { code: string; message: string; details?: Record<string, unknown> }; action?: string; content?: unknown };
const structured = (result: CallToolResult): Structured => result.structuredContent as Structured;

interface Handlers {
  sample?: (params: { maxTokens: number; messages: unknown[] }) => Promise<unknown>;
  elicit?: (params: { message: string }) => Promise<unknown>;
}

/** The SDK v2 client pinned to 2026-07-28, declaring a capability for each handler given. */
async function pinnedClient(url: string, handlers: Handlers, headers?: Record<string, string>): Promise<Client> {
  const capabilities: Record<string, unknown> = {};
  if (handlers.sample) capabilities.sampling = {};
  if (handlers.elicit) capabilities.elicitation = { form: {} };
  const client = new Client({ name: 'pinned-2026', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  if (handlers.sample) client.setRequestHandler('sampling/createMessage', ((request: { params: { maxTokens: number; messages: unknown[] } }) => handlers.sample!(request.params)) as never);
  if (handlers.elicit) client.setRequestHandler('elicitation/create', ((request: { params: { message: string } }) => handlers.elicit!(request.params)) as never);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined));
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

describe.skipIf(!hasCGuests)('sampling and elicitation for 2026-07-28 clients through input-required results', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let metrics: HostMetrics;
  const finished: TerminalEvent[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    // Three workers: a parked guest keeps its worker; two may wait for clients, both one principal's, so that the
    // per-principal cap on parked calls is what refuses here (test/client-waits.test.ts has the pool's own caps).
    registry = makeRegistry({ defaults: { wallMs: 60_000 }, sandbox: { threads: 3, clientWaits: 2, clientWaitsPerPrincipal: 2 } });
    await registry.registerWasmTools(fixture('mcp_rich'), { grant: { sampling: { maxRequests: 3, maxTokens: 1000 }, elicitation: { maxRequests: 2 } } });
    registry.onCallFinished((_tool, event) => finished.push(event));
    metrics = createMetrics(registry);
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, metrics, limitMetrics: metrics.limits, tokens: [{ principal: 'alice', token: 'alice-token' }, { principal: 'bob', token: 'bob-token' }], maxParkedCalls: 1 });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.close();
    metrics?.close();
    await registry?.close();
  });

  it('answers a guest\'s sampling requests, one round each, and the result carries the answers', async () => {
    const seen: number[] = [];
    const client = await pinnedClient(server.url, {
      sample: async (params) => {
        seen.push(params.maxTokens);
        return { role: 'assistant', content: { type: 'text', text: `answer ${seen.length} in ${params.maxTokens}` }, model: 'model-2026', stopReason: 'endTurn' };
      },
    }, { authorization: 'Bearer alice-token' });
    clients.push(client);
    const result = (await client.callTool({ name: 'ask_model', arguments: { n: 2, max_tokens: 42 } })) as CallToolResult;
    expect(structured(result)).toEqual({ replies: ['answer 1 in 42', 'answer 2 in 42'], model: 'model-2026' });
    expect(seen).toEqual([42, 42]);
  });

  it('answers a guest\'s elicitation, accepted or declined', async () => {
    const accepting = await pinnedClient(server.url, { elicit: async () => ({ action: 'accept', content: { name: 'Ada' } }) }, { authorization: 'Bearer alice-token' });
    const declining = await pinnedClient(server.url, { elicit: async () => ({ action: 'decline' }) }, { authorization: 'Bearer alice-token' });
    clients.push(accepting, declining);
    expect(structured((await accepting.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(structured((await declining.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult)).toEqual({ action: 'decline', content: null });
  });

  it('a client without the capability still gets CLIENT_UNSUPPORTED, without a round trip', async () => {
    const client = await pinnedClient(server.url, {}, { authorization: 'Bearer alice-token' });
    clients.push(client);
    expect(structured((await client.callTool({ name: 'ask_model', arguments: {} })) as CallToolResult).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
  });

  it('a requestState is good once, and only for the principal whose call it is: any other (stolen, forged, tampered, used) is a JSON-RPC error', async () => {
    const first = await rawCall(server.url, { params: { name: 'ask_user', arguments: {} } }, 'alice-token');
    expect(first.resultType).toBe('input_required');
    const requests = first.inputRequests as Record<string, { method: string; params: { message: string } }>;
    const [key] = Object.keys(requests);
    expect(requests[key!]!.method).toBe('elicitation/create');
    const state = first.requestState as string;
    const answer = { [key!]: { action: 'accept', content: { name: 'Eve' } } };
    // Another principal with the same state: as if it did not exist.
    // Refused with a JSON-RPC error, not a tool's result (SEP-2322: state that fails verification MUST be rejected).
    const stolen = await rawMessage(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: answer, requestState: state } }, 'bob-token');
    expect(stolen.error).toMatchObject(UNKNOWN_STATE);
    const forged = await rawMessage(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: answer, requestState: `${state.split('.')[0]}.${'A'.repeat(22)}` } }, 'alice-token');
    expect(forged.error).toMatchObject(UNKNOWN_STATE);
    const tampered = await rawMessage(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: answer, requestState: `${state}-TAMPERED` } }, 'alice-token');
    expect(tampered.error).toMatchObject(UNKNOWN_STATE);
    // Its owner resumes it.
    const done = await rawCall(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: { [key!]: { action: 'accept', content: { name: 'Alice' } } }, requestState: state } }, 'alice-token');
    expect(done.structuredContent).toEqual({ action: 'accept', content: { name: 'Alice' } });
    // Used: refused.
    const again = await rawMessage(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: answer, requestState: state } }, 'alice-token');
    expect(again.error).toMatchObject(UNKNOWN_STATE);
  });

  it('parked calls are bounded per principal: past the cap the tool\'s request is refused OVERLOADED; another principal is not affected', async () => {
    const parked = await rawCall(server.url, { params: { name: 'ask_user', arguments: {}, _meta: { 'toolhost/policy': { budget_wall_ms: 30_000 } } } }, 'alice-token');
    expect(parked.resultType).toBe('input_required');
    const refused = await rawCall(server.url, { params: { name: 'ask_user', arguments: {} } }, 'alice-token');
    expect(refused.resultType).toBe('complete');
    expect(JSON.stringify(refused.structuredContent)).toContain('OVERLOADED');
    const other = await rawCall(server.url, { params: { name: 'ask_user', arguments: {} } }, 'bob-token');
    expect(other.resultType).toBe('input_required');
    const text = await metrics.metrics();
    expect(text).toContain('toolhost_server_refused_total{server="mcp",reason="parked_calls_full"} 1');
    expect(text).toContain('toolhost_server_parked_calls{server="mcp"} 2');
    // Answered, both places are free again.
    for (const [result, token] of [[parked, 'alice-token'], [other, 'bob-token']] as const) {
      const key = Object.keys(result.inputRequests as object)[0]!;
      const done = await rawCall(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: { [key]: { action: 'cancel' } }, requestState: result.requestState } }, token);
      expect(done.structuredContent).toEqual({ action: 'cancel', content: null });
    }
  });

  it('an answer that never comes ends the call with its wall budget: one terminal event, and the place is free again', async () => {
    const before = finished.length;
    const parked = await rawCall(server.url, { params: { name: 'ask_model', arguments: {}, _meta: { 'toolhost/policy': { budget_wall_ms: 3000 } } } }, 'bob-token');
    expect(parked.resultType).toBe('input_required');
    await expect.poll(() => finished.slice(before).some((event) => event.type === 'error' && event.code === 'WALL_TIMEOUT'), { timeout: 30_000 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const ended = finished.slice(before).filter((event) => event.callId === finished.slice(before).find((e) => e.type === 'error' && e.code === 'WALL_TIMEOUT')!.callId);
    expect(ended).toHaveLength(1);
    // Too late: the state is gone.
    const late = await rawMessage(server.url, { params: { name: 'ask_model', arguments: {}, inputResponses: {}, requestState: parked.requestState } }, 'bob-token');
    expect(late.error).toMatchObject(UNKNOWN_STATE);
  });

  it('closing the server ends its parked calls at once (the guest is told CANCELLED), rather than leaving them to their 60 s wall budget', async () => {
    const own = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, tokens: [{ principal: 'alice', token: 'alice-token' }] });
    const before = finished.length;
    const parked = await rawCall(own.url, { params: { name: 'ask_user', arguments: {} } }, 'alice-token');
    expect(parked.resultType).toBe('input_required');
    const closedAt = Date.now();
    await own.close();
    await expect.poll(() => finished.length - before, { timeout: 30_000 }).toBe(1);
    expect(Date.now() - closedAt).toBeLessThan(30_000);
    // The guest's elicit failed CANCELLED; it reports that in its result.
    expect(JSON.stringify(finished.at(-1))).toContain('CANCELLED');
  });
});
