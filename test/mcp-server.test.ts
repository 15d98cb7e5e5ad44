import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { createMcpServer } from '../host/servers/mcp-server.js';
import { makeRegistry } from './helpers.js';

describe('the MCP server adapter (in memory)', () => {
  let registry: ToolRegistry;
  let client: Client;
  let worktree: string;
  const logs: Array<{ level: string; data: unknown }> = [];
  let listChanges = 0;

  beforeAll(async () => {
    worktree = mkdtempSync(join(tmpdir(), 'toolhost-mcp-'));
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'where',
      description: 'Reports its worktree.',
      inputSchema: { type: 'object' },
      run: (_args, ctx) => ({ workingDir: ctx.workingDir ?? null }),
    }));
    registry.register(defineNativeTool({ name: 'anything', description: 'Takes any input.', inputSchema: true, run: () => 'ok' }));
    registry.register(defineNativeTool({ name: 'numbers_only', description: 'Takes a number.', inputSchema: { type: 'number' }, run: () => 1 }));
    registry.register(defineNativeTool({
      name: 'list_maker',
      description: 'Returns an array.',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'array', items: { type: 'integer' } },
      run: () => [1, 2, 3],
    }));
    registry.register(defineNativeTool({
      name: 'chatty',
      description: 'Logs at every level.',
      inputSchema: { type: 'object' },
      run: (_args, _ctx, events) => {
        for (const level of ['trace', 'debug', 'info', 'warn', 'error'] as const) events.log(level, `at ${level}`);
        return null;
      },
    }));
    const server = createMcpServer(registry, { worktree: (name) => (name === 'where' ? worktree : undefined), listChangedDebounceMs: 20 });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    client = new Client({ name: 'memory', version: '1.0.0' });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      logs.push({ level: notification.params.level, data: notification.params.data });
    });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanges += 1;
    });
    await client.connect(clientSide);
  });
  afterAll(async () => {
    await client?.close();
    await registry?.close();
    rmSync(worktree, { recursive: true, force: true });
  });

  it('reports itself as toolhost with the tools and logging capabilities', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'toolhost', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true }, logging: {} });
  });

  it('lists object-typed schemas only: `true` reads as an object, other input types are left out', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('anything')?.inputSchema).toEqual({ type: 'object' });
    expect(byName.has('numbers_only')).toBe(false);
    // An array output cannot be MCP structured content: no output schema is advertised, the JSON is in the text.
    expect(byName.get('list_maker')?.outputSchema).toBeUndefined();
    const result = (await client.callTool({ name: 'list_maker', arguments: {} })) as CallToolResult;
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: '[1,2,3]' }]);
  });

  it('binds the worktree the options give for a tool', async () => {
    const result = (await client.callTool({ name: 'where', arguments: {} })) as CallToolResult;
    expect(result.structuredContent).toEqual({ workingDir: worktree });
  });

  it('sends log events from info up by default, and follows logging/setLevel', async () => {
    logs.length = 0;
    await client.callTool({ name: 'chatty', arguments: {} });
    expect(logs.map((entry) => entry.level)).toEqual(['info', 'warning', 'error']);
    expect(logs[0]?.data).toMatchObject({ message: 'at info', source: 'native', callId: expect.any(String) });

    await client.setLoggingLevel('debug');
    logs.length = 0;
    await client.callTool({ name: 'chatty', arguments: {} });
    expect(logs.map((entry) => entry.level)).toEqual(['debug', 'debug', 'info', 'warning', 'error']);

    await client.setLoggingLevel('error');
    logs.length = 0;
    await client.callTool({ name: 'chatty', arguments: {} });
    expect(logs.map((entry) => entry.level)).toEqual(['error']);
  });

  it('gathers several registrations into one tools/list_changed', async () => {
    const before = listChanges;
    for (let i = 0; i < 5; i += 1) registry.register(defineNativeTool({ name: `burst_${i}`, description: 'x', inputSchema: { type: 'object' }, run: () => i }));
    await expect.poll(() => listChanges).toBe(before + 1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(listChanges).toBe(before + 1);
    registry.unregister('burst_0');
    await expect.poll(() => listChanges).toBe(before + 2);
  });

  it('stops listening to the registry when its transport closes', async () => {
    const other = makeRegistry();
    let listeners = 0;
    const counting = {
      ...other,
      definitions: other.definitions.bind(other),
      get: other.get.bind(other),
      stream: other.stream.bind(other),
      names: other.names.bind(other),
      inFlight: 0,
      logger: other.logger,
      onToolsChanged: (listener: (names: string[]) => void) => {
        listeners += 1;
        const off = other.onToolsChanged(listener);
        return () => {
          listeners -= 1;
          return off();
        };
      },
    };
    const server = createMcpServer(counting);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const memoryClient = new Client({ name: 'short', version: '1.0.0' });
    await memoryClient.connect(clientSide);
    expect(listeners).toBe(1);
    await memoryClient.close();
    await expect.poll(() => listeners).toBe(0);
    await other.close();
  });

  it('checks its options', () => {
    expect(() => createMcpServer(registry, { listChangedDebounceMs: -1 })).toThrow(/options\.listChangedDebounceMs/);
    expect(() => createMcpServer(registry, { logLevel: 'loud' as never })).toThrow(/options\.logLevel/);
  });
});
