/**
 * A cancelled MCP request over Streamable HTTP gets no response (the spec),
 * and its event stream ends: it held a socket for good before (found by the
 * soak). A cancel that overtakes its request (two POSTs on two connections)
 * still cancels it: the request is never run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { makeRegistry } from './helpers.js';

const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Protocol-Version': '2025-06-18' };

function rpc(body: object): string {
  return JSON.stringify({ jsonrpc: '2.0', ...body });
}

describe('MCP HTTP: cancelled requests', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  let session: string;
  const started: string[] = [];

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(
      defineNativeTool({
        name: 'wait',
        description: 'Waits until cancelled.',
        inputSchema: { type: 'object', properties: { tag: { type: 'string' } } },
        run: async (args: { tag?: string }, ctx) => {
          started.push(args.tag ?? '');
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          return { waited: true };
        },
      }),
    );
    server = await startMcpHttpServer(registry, {});
    const init = await fetch(server.url, {
      method: 'POST',
      headers: HEADERS,
      body: rpc({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'canceller', version: '0' } } }),
    });
    await init.text();
    session = init.headers.get('mcp-session-id')!;
    const initialized = await fetch(server.url, { method: 'POST', headers: { ...HEADERS, 'Mcp-Session-Id': session }, body: rpc({ method: 'notifications/initialized' }) });
    expect(initialized.status).toBe(202);
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  const post = (body: string): Promise<Response> => fetch(server.url, { method: 'POST', headers: { ...HEADERS, 'Mcp-Session-Id': session }, body });
  const cancel = (id: number): Promise<Response> => post(rpc({ method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } }));
  const call = (id: number, tag: string): string => rpc({ id, method: 'tools/call', params: { name: 'wait', arguments: { tag } } });

  it('ends the stream of a cancelled call, with no response in it', async () => {
    const response = await post(call(7, 'cancelled'));
    expect(response.status).toBe(200);
    await expect.poll(() => started.includes('cancelled')).toBe(true);
    expect((await cancel(7)).status).toBe(202);
    // The body ends (it never did before): read it to its end.
    const body = await response.text();
    expect(body).not.toContain('"id":7');
    // The session is not held "in use" by the dead stream: another call is served.
    const next = await post(call(8, 'after'));
    await expect.poll(() => started.includes('after')).toBe(true);
    await cancel(8);
    await next.text();
  });

  it('never runs a call whose cancel arrived first', async () => {
    expect((await cancel(21)).status).toBe(202);
    const response = await post(call(21, 'overtaken'));
    const body = await response.text();
    expect(body).not.toContain('"id":21');
    // A later call runs (so the overtaken one would have been seen by now).
    const later = await post(call(22, 'later'));
    await expect.poll(() => started.includes('later')).toBe(true);
    expect(started).not.toContain('overtaken');
    await cancel(22);
    await later.text();
  });
});
