/**
 * Sampling, elicitation and a keyed round (roots/list too) for an SDK v2 client pinned to 2026-07-28 over MCP stdio (input-required
 * results, host/servers/mcp-input-required.ts), against test/fixtures/mcp/toolhost-stdio-v2.mjs.
 * Needs the stdio server to speak 2026-07-28 (issue 38, item 1: `serveMcpStdio` on the modern
 * server factory, which threads a `CallParking` to its tools/call handler); until it does, the
 * pinned client cannot connect and the test says so and is skipped.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { fixture, hasCGuests, root, sharedCacheDir } from './helpers.js';

describe.skipIf(!hasCGuests)('a 2026-07-28 client over stdio answers a guest\'s sampling and elicitation', () => {
  let client: Client | undefined;
  afterAll(async () => {
    await client?.close().catch(() => undefined);
  });

  it('the tool\'s result carries the client\'s answers', async (ctx) => {
    const pinned = new Client({ name: 'pinned-2026-stdio', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    pinned.setRequestHandler('sampling/createMessage', (async (request: { params: { maxTokens: number } }) => ({
      role: 'assistant', content: { type: 'text', text: `stdio, in ${request.params.maxTokens}` }, model: 'stdio-model', stopReason: 'endTurn',
    })) as never);
    pinned.setRequestHandler('elicitation/create', (async () => ({ action: 'accept', content: { name: 'Stdio' } })) as never);
    pinned.setRequestHandler('roots/list', (async () => ({ roots: [{ uri: 'file:///stdio' }] })) as never);
    try {
      await pinned.connect(new StdioClientTransport({ command: process.execPath, args: [join(root, 'test', 'fixtures', 'mcp', 'toolhost-stdio-v2.mjs'), fixture('mcp_rich'), sharedCacheDir, fixture('keyed_rounds')], cwd: root, stderr: 'pipe' }));
    } catch (error) {
      await pinned.close().catch(() => undefined);
      ctx.skip(`the stdio server does not speak 2026-07-28 yet (${(error as Error).message.slice(0, 120)})`);
      return;
    }
    client = pinned;
    expect(pinned.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await pinned.callTool({ name: 'ask_model', arguments: { max_tokens: 5 } }) as CallToolResult).structuredContent).toEqual({ replies: ['stdio, in 5'], model: 'stdio-model' });
    expect((await pinned.callTool({ name: 'ask_user', arguments: {} }) as CallToolResult).structuredContent).toEqual({ action: 'accept', content: { name: 'Stdio' } });
    // A keyed round (world 0.3.0 `ask`): one input-required result under the tool's keys, roots/list included.
    const round = [{ key: 'user_name', kind: 'elicitation' }, { key: 'client_roots', kind: 'roots' }];
    expect((await pinned.callTool({ name: 'rounds', arguments: { rounds: [round] } }) as CallToolResult).structuredContent).toEqual({ rounds: [{ answers: [
      { key: 'user_name', kind: 'elicitation', action: 'accept', content: { name: 'Stdio' } },
      { key: 'client_roots', kind: 'roots', roots: [{ uri: 'file:///stdio', name: null }] },
    ] }] });
  });
});
