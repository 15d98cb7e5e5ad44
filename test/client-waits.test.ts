/**
 * Workers held waiting for clients (host/sandbox/client-waits.ts): a guest that asks its client (sampling,
 * elicitation; on 2026-07-28 a parked call) keeps its worker until the answer comes, so a principal whose
 * client never answers could hold every worker and freeze every other caller's sandboxed calls until their
 * wall budgets ran out. Here a hostile principal tries exactly that against `toolhost`'s MCP server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TerminalEvent, ToolRegistry } from '../host/index.js';
import { ClientWaits, defaultClientWaits } from '../host/sandbox/client-waits.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { createMetrics, type HostMetrics } from '../host/servers/metrics.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { rawCall } from './mcp-raw-2026.js';

describe('the places of workers waiting for clients', () => {
  it('defaults to every worker but one, half of them for one principal', () => {
    expect(defaultClientWaits(1)).toEqual({ max: 1, perPrincipal: 1 });
    expect(defaultClientWaits(2)).toEqual({ max: 1, perPrincipal: 1 });
    expect(defaultClientWaits(3)).toEqual({ max: 2, perPrincipal: 1 });
    expect(defaultClientWaits(8)).toEqual({ max: 7, perPrincipal: 4 });
    expect(defaultClientWaits(8, 3)).toEqual({ max: 3, perPrincipal: 2 });
  });

  it('refuses past the total and past a principal\'s share, naming the limit, and counts calls with no principal as one', () => {
    const waits = new ClientWaits({ max: 3, perPrincipal: 2 });
    expect(waits.enter('mallory')).toBeUndefined();
    expect(waits.enter('mallory')).toBeUndefined();
    const mine = waits.enter('mallory', 'call-1');
    expect(mine).toMatchObject({ code: 'OVERLOADED', callId: 'call-1', details: { limit: 'client_waits_per_principal', max: 2 } });
    expect(mine!.message).toContain('host.pool.client_waits_per_principal');
    expect(waits.enter(undefined)).toBeUndefined();
    expect(waits.enter('bob')).toMatchObject({ code: 'OVERLOADED', details: { limit: 'client_waits', max: 3 } });
    expect(waits.waiting).toBe(3);
    waits.leave('mallory');
    expect(waits.enter('bob')).toBeUndefined();
    expect(waits.enter(undefined)).toMatchObject({ details: { limit: 'client_waits' } });
  });

  it('gives a call\'s places back once, and all of them when its run ends', () => {
    const waits = new ClientWaits({ max: 4, perPrincipal: 4 });
    const call = waits.forCall('alice', 'call-1');
    expect(call.enter()).toBeUndefined();
    expect(call.enter()).toBeUndefined();
    call.leave();
    expect(waits.waiting).toBe(1);
    call.close();
    expect(waits.waiting).toBe(0);
    // A request's own give-back after the run ended takes nothing from another call.
    const other = waits.forCall('alice', 'call-2');
    expect(other.enter()).toBeUndefined();
    call.leave();
    expect(waits.waiting).toBe(1);
    expect(call.enter()).toMatchObject({ code: 'CANCELLED' });
  });

  it('rejects limits that are not positive integers', () => {
    expect(() => new ClientWaits({ max: 0, perPrincipal: 1 })).toThrow(TypeError);
    expect(() => new ClientWaits({ max: 2, perPrincipal: 1.5 })).toThrow(TypeError);
  });
});

describe.skipIf(!hasCGuests)('a principal whose client never answers does not freeze the host', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let metrics: HostMetrics;
  const finished: TerminalEvent[] = [];
  const tokens = ['mallory', 'bob', 'carol'].map((principal) => ({ principal, token: `${principal}-token` }));
  const parkedBy = (token: string, wallMs = 30_000): Promise<Record<string, unknown>> =>
    rawCall(server.url, { params: { name: 'ask_user', arguments: {}, _meta: { 'toolhost/policy': { budget_wall_ms: wallMs } } } }, token);
  const answer = async (parked: Record<string, unknown>, token: string): Promise<void> => {
    const key = Object.keys(parked.inputRequests as object)[0]!;
    const done = await rawCall(server.url, { params: { name: 'ask_user', arguments: {}, inputResponses: { [key]: { action: 'decline' } }, requestState: parked.requestState } }, token);
    expect(done.structuredContent).toEqual({ action: 'decline', content: null });
  };
  const gauge = async (): Promise<string | undefined> => /^toolhost_pool_client_waits (\d+)$/m.exec(await metrics.metrics())?.[1];

  beforeAll(async () => {
    // Three workers and the default places: two may wait for clients, one of them per principal.
    registry = makeRegistry({ defaults: { wallMs: 60_000 }, sandbox: { threads: 3 } });
    await registry.registerWasmTools(fixture('mcp_rich'), { grant: { elicitation: { maxRequests: 2 } } });
    registry.onCallFinished((_tool, event) => finished.push(event));
    metrics = createMetrics(registry);
    // The MCP layer's own cap on parked calls is far above the pool's: the pool's places are what hold here.
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, metrics, limitMetrics: metrics.limits, tokens, maxParkedCalls: 16 });
  });
  afterAll(async () => {
    await server?.close();
    metrics?.close();
    await registry?.close();
  });

  it('holds one principal to its share and every principal to all workers but one; the free worker keeps serving', async () => {
    const mallory = await parkedBy('mallory-token');
    expect(mallory.resultType).toBe('input_required');
    // Mallory's next requests are refused at once (the guest reports the refusal in its result); nothing waits.
    for (let i = 0; i < 4; i++) {
      const refused = await parkedBy('mallory-token');
      expect(refused.resultType).toBe('complete');
      expect(JSON.stringify(refused.structuredContent)).toMatch(/OVERLOADED.*host\.pool\.client_waits_per_principal/);
    }
    // Bob still has his share.
    const bob = await parkedBy('bob-token');
    expect(bob.resultType).toBe('input_required');
    // Both places are taken: Carol's request is refused for the total, and her call that asks nothing still runs,
    // on the worker no client may hold (with 3 s to do it in: a frozen pool would have held it for 30 s).
    const carolAsks = await parkedBy('carol-token');
    expect(JSON.stringify(carolAsks.structuredContent)).toMatch(/OVERLOADED.*host\.pool\.client_waits\b/);
    const plain = await rawCall(server.url, { params: { name: 'value_only', arguments: {}, _meta: { 'toolhost/policy': { budget_wall_ms: 3000 } } } }, 'carol-token');
    expect(plain.structuredContent).toEqual({ n: 1 });
    expect(await gauge()).toBe('2');
    const text = await metrics.metrics();
    expect(text).toContain('toolhost_limit_hits_total{tool="ask_user",limit="client_waits_per_principal"} 4');
    expect(text).toContain('toolhost_limit_hits_total{tool="ask_user",limit="client_waits"} 1');
    // Answered, the places are free again, and Carol may ask.
    await answer(mallory, 'mallory-token');
    await answer(bob, 'bob-token');
    expect(await gauge()).toBe('0');
    const carol = await parkedBy('carol-token');
    expect(carol.resultType).toBe('input_required');
    await answer(carol, 'carol-token');
  });

  it('on 2025-11-25 too: a session that never answers its elicitation holds one place, and cancelling the call gives it back', async () => {
    const silent = new Client({ name: 'never-answers', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    silent.setRequestHandler(ElicitRequestSchema, () => new Promise<never>(() => {}));
    await silent.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { authorization: 'Bearer mallory-token' } } }));
    const stop = new AbortController();
    const hanging = silent.callTool({ name: 'ask_user', arguments: {} }, undefined, { timeout: 60_000, signal: stop.signal }).catch((error: unknown) => error);
    await expect.poll(gauge, { timeout: 10_000 }).toBe('1');
    // The same principal's next request (here on 2026-07-28) is refused at once; another principal's is not.
    const refused = await parkedBy('mallory-token');
    expect(JSON.stringify(refused.structuredContent)).toMatch(/OVERLOADED.*client_waits_per_principal/);
    const bob = await parkedBy('bob-token');
    expect(bob.resultType).toBe('input_required');
    await answer(bob, 'bob-token');
    // Cancelled (notifications/cancelled): the guest's request fails CANCELLED, the call ends, the place is free.
    stop.abort();
    await hanging;
    await expect.poll(gauge, { timeout: 10_000 }).toBe('0');
    await silent.close();
  });

  it('gives the place back when the call ends at its wall budget while its guest waits', async () => {
    const before = finished.length;
    const parked = await parkedBy('mallory-token', 1500);
    expect(parked.resultType).toBe('input_required');
    expect(await gauge()).toBe('1');
    await expect.poll(() => finished.slice(before).some((event) => event.type === 'error' && event.code === 'WALL_TIMEOUT'), { timeout: 20_000 }).toBe(true);
    await expect.poll(gauge, { timeout: 5000 }).toBe('0');
    const again = await parkedBy('mallory-token');
    expect(again.resultType).toBe('input_required');
    await answer(again, 'mallory-token');
  });
});
