/**
 * Sampling and elicitation for 2026-07-28 clients in a fleet, no sticky routing
 * (host/servers/mcp-resume-relay.ts): two MCP HTTP servers in one process share one real
 * redis-server; an SDK v2 client pinned to 2026-07-28 whose requests alternate between the hosts
 * answers a guest's sampling and elicitation, each retry landing on the host that does not hold
 * the parked call and relayed to the one that does. Hostile: a retry relayed with another
 * principal's token is refused as an unknown state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { silentLogger, type ToolRegistry } from '../host/index.js';
import { openFleet, type Fleet } from '../host/fleet/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';
import { hasRedis, RedisServer } from './redis-server.js';

const TOKENS = [{ principal: 'alice', token: 'alice-token-0123456789' }, { principal: 'bob', token: 'bob-token-0123456789' }];

interface HostUnderTest {
  registry: ToolRegistry;
  fleet: Fleet;
  server: McpHttpServer;
  hits: number;
}

describe.runIf(hasRedis && hasCGuests)('2026-07-28 input-required round trips across two fleet hosts', () => {
  const redis = new RedisServer();
  const hosts: HostUnderTest[] = [];
  const clients: Client[] = [];
  const prefix = `mcpresume${process.pid}:`;

  /** Each request to the next host in turn, whatever URL the client has. */
  function alternating(): typeof fetch {
    let n = 0;
    return async (input, init) => {
      const host = hosts[n++ % hosts.length]!;
      host.hits += 1;
      const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
      url.port = String(host.server.port);
      return fetch(url, init);
    };
  }

  beforeAll(async () => {
    await redis.start();
    for (let i = 0; i < 2; i += 1) {
      const registry = makeRegistry({ defaults: { wallMs: 60_000 } });
      await registry.registerWasmTools(fixture('mcp_rich'), { grant: { sampling: { maxRequests: 3, maxTokens: 1000 }, elicitation: { maxRequests: 2 } } });
      await registry.registerWasmTools(fixture('keyed_rounds'), { grant: { sampling: { maxRequests: 1, maxTokens: 100 }, elicitation: { maxRequests: 1 }, roots: { maxRequests: 1 } } });
      const fleet = openFleet({ redis: redis.url, keyPrefix: prefix }, silentLogger);
      await fleet.link.ready();
      const server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0, tokens: TOKENS, sessionDirectory: fleet.sessions, fleetRelay: { link: fleet.link, prefix: fleet.prefix } });
      hosts.push({ registry, fleet, server, hits: 0 });
    }
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const host of hosts) {
      await host.server.close();
      await host.fleet.close();
      await host.registry.close();
    }
    await redis.stop();
  });

  it('answers a guest\'s sampling and elicitation with every retry on the other host', async () => {
    const client = new Client({ name: 'pinned-2026', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    let asked = 0;
    client.setRequestHandler('sampling/createMessage', (async (request: { params: { maxTokens: number } }) => {
      asked += 1;
      return { role: 'assistant', content: { type: 'text', text: `reply ${asked} (${request.params.maxTokens})` }, model: 'fleet-model', stopReason: 'endTurn' };
    }) as never);
    client.setRequestHandler('elicitation/create', (async () => ({ action: 'accept', content: { name: 'Fleet' } })) as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(hosts[0]!.server.url), { fetch: alternating(), requestInit: { headers: { Authorization: `Bearer ${TOKENS[0]!.token}` } } }));
    clients.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const before = hosts.map((host) => host.hits);
    const sampled = (await client.callTool({ name: 'ask_model', arguments: { n: 3, max_tokens: 9 } })) as CallToolResult;
    expect(sampled.structuredContent).toEqual({ replies: ['reply 1 (9)', 'reply 2 (9)', 'reply 3 (9)'], model: 'fleet-model' });
    const elicited = (await client.callTool({ name: 'ask_user', arguments: {} })) as CallToolResult;
    expect(elicited.structuredContent).toEqual({ action: 'accept', content: { name: 'Fleet' } });
    // Both hosts served requests of these calls (4 + 2 legs, alternating).
    expect(hosts.map((host, i) => host.hits - before[i]!).every((hits) => hits >= 2)).toBe(true);
  });

  it('answers a keyed round of three kinds (world 0.3.0 `ask`) with its retry on the other host', async () => {
    const client = new Client({ name: 'pinned-2026-roots', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('sampling/createMessage', (async () => ({ role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'fleet-model' })) as never);
    client.setRequestHandler('elicitation/create', (async () => ({ action: 'accept', content: { name: 'Fleet' } })) as never);
    client.setRequestHandler('roots/list', (async () => ({ roots: [{ uri: 'file:///fleet', name: 'fleet' }] })) as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(hosts[0]!.server.url), { fetch: alternating(), requestInit: { headers: { Authorization: `Bearer ${TOKENS[0]!.token}` } } }));
    clients.push(client);
    const round = [{ key: 'user_name', kind: 'elicitation' }, { key: 'greeting', kind: 'sampling' }, { key: 'client_roots', kind: 'roots' }];
    const result = (await client.callTool({ name: 'rounds', arguments: { rounds: [round] } })) as CallToolResult;
    expect(result.structuredContent).toEqual({ rounds: [{ answers: [
      { key: 'user_name', kind: 'elicitation', action: 'accept', content: { name: 'Fleet' } },
      { key: 'greeting', kind: 'sampling', model: 'fleet-model', text: 'Hi' },
      { key: 'client_roots', kind: 'roots', roots: [{ uri: 'file:///fleet', name: 'fleet' }] },
    ] }] });
  });

  it('a retry relayed with another principal\'s token is refused, and the owner can still answer', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
    };
    const call = async (host: HostUnderTest, token: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const response = await fetch(host.server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ask_user', authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_user', arguments: {}, ...params, _meta: meta } }),
      });
      const text = await response.text();
      const line = text.split('\n').reverse().find((entry) => entry.startsWith('data: '));
      const message = JSON.parse(line === undefined ? text : line.slice(6)) as { result?: Record<string, unknown>; error?: Record<string, unknown> };
      // A refused retry is a JSON-RPC error (SEP-2322); its data carries toolhost's code and reason.
      return message.result ?? { error: message.error };
    };
    const parked = await call(hosts[0]!, TOKENS[0]!.token, {});
    expect(parked.resultType).toBe('input_required');
    const key = Object.keys(parked.inputRequests as object)[0]!;
    const answer = { inputResponses: { [key]: { action: 'accept', content: { name: 'Mallory' } } }, requestState: parked.requestState };
    const stolen = await call(hosts[1]!, TOKENS[1]!.token, answer);
    expect(stolen.error).toMatchObject({ code: -32602, data: { details: { reason: 'request_state_unknown' } } });
    const owner = await call(hosts[1]!, TOKENS[0]!.token, { inputResponses: { [key]: { action: 'accept', content: { name: 'Alice' } } }, requestState: parked.requestState });
    expect(owner.structuredContent).toEqual({ action: 'accept', content: { name: 'Alice' } });
    // A state naming a host nobody runs: refused at once, not waited on.
    const nowhere = await call(hosts[1]!, TOKENS[0]!.token, { inputResponses: {}, requestState: `nohost.${'A'.repeat(22)}` });
    expect(nowhere.error).toMatchObject({ code: -32602, data: { details: { reason: 'request_state_unknown' } } });
  });
});
