/**
 * A 2025-era protocol error's message is sent as toolhost wrote it (issue 38:
 * the SDK's McpError put `MCP error -32602: ` in front and the 1.x client
 * added another, `MCP error -32602: MCP error -32602: TOOL_NOT_FOUND ...`),
 * for an unknown tool and for a surface failure alike; `code` and `data` are kept.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { serveMcpStdio } from '../host/servers/mcp-stdio.js';
import { makeRegistry } from './helpers.js';
import { StreamPairTransport } from './mcp-stdio-pair.js';

describe('2025-era error messages', () => {
  it('carry one MCP error prefix (the client\'s), with toolhost\'s code in data', async () => {
    const registry = makeRegistry();
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout, redirectConsole: false });
    const client = new Client({ name: 'v1', version: '1' });
    await client.connect(new StreamPairTransport(stdout, stdin));
    try {
      const error = await client.callTool({ name: 'nope', arguments: {} }).then(() => undefined, (failure: Error & { code?: number; data?: unknown }) => failure);
      expect(error?.message).toMatch(/^MCP error -32602: TOOL_NOT_FOUND: no tool named "nope"/);
      expect(error).toMatchObject({ code: -32602, data: { code: 'TOOL_NOT_FOUND' } });
      const prompt = await client.getPrompt({ name: 'nope' }).then(() => undefined, (failure: Error) => failure);
      expect(prompt?.message).toMatch(/^MCP error -32602: INVALID_INPUT: /);
    } finally {
      await client.close();
      await served.close();
      await registry.close();
    }
  });
});
