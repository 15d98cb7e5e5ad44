import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError, type TerminalEvent, type ToolEvent, type ToolRegistry } from '../host/index.js';
import { importMcpServer, type McpImport } from '../host/tools/mcp-import.js';
import { startMcpHttpServer } from '../host/servers/mcp-http.js';
import { collect, makeRegistry, root } from './helpers.js';

const remoteServer = join(root, 'test', 'fixtures', 'mcp', 'remote-server.mjs');

describe('importing an MCP server over stdio', () => {
  let registry: ToolRegistry;
  let imported: McpImport;
  const finished: Array<{ tool: string; event: TerminalEvent }> = [];

  beforeAll(async () => {
    registry = makeRegistry();
    registry.onCallFinished((tool, event) => finished.push({ tool, event }));
    imported = await importMcpServer(registry, { name: 'remote', command: process.execPath, args: [remoteServer], cwd: root });
  });
  afterAll(async () => {
    await imported?.close();
    await registry?.close();
  });

  it('registers each remote tool as a native tool named <name>.<tool>', () => {
    expect(imported.tools).toEqual(['remote.cancellations', 'remote.countdown', 'remote.divide', 'remote.toggle_extra']);
    expect(imported.skipped).toEqual([]);
    const divide = registry.get('remote.divide');
    expect(divide).toMatchObject({ executionMode: 'native', idempotent: true, readOnly: true, source: 'mcp:remote', description: 'Divides a by b.' });
    expect(divide?.outputSchema).toMatchObject({ type: 'object', properties: { quotient: { type: 'number' } } });
    expect(registry.definitions('mcp').find((tool) => tool.name === 'remote.divide')?.inputSchema).toMatchObject({ type: 'object', required: ['a', 'b'] });
  });

  it('lists the remote server\'s annotations as it gives them (the host cannot see what its tools do)', () => {
    const mcp = registry.definitions('mcp');
    expect(mcp.find((tool) => tool.name === 'remote.divide')?.annotations).toEqual({ readOnlyHint: true, idempotentHint: true });
    expect(mcp.find((tool) => tool.name === 'remote.countdown')?.annotations).toEqual({ idempotentHint: false });
  });

  it('calls a remote tool through registry.execute and returns its structured content', async () => {
    const result = await registry.execute('remote.divide', { a: 7, b: 2 });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ quotient: 3.5 });
  });

  it('turns a remote isError result into TOOL_ERROR with the REMOTE_ERROR code', async () => {
    const result = await registry.execute('remote.divide', { a: 1, b: 0 });
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'division by zero', details: { code: 'REMOTE_ERROR', details: { server: 'remote', tool: 'divide' } } });
  });

  it('validates arguments against the remote schema before calling the remote', async () => {
    const error = await registry.execute('remote.countdown', { steps: 0, delayMs: 'soon' }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ToolhostError);
    expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { errors: expect.arrayContaining([expect.objectContaining({ path: '/delayMs' })]) } });
    const events = await collect(registry.stream('remote.divide', { a: 'x', b: 1 }));
    // Rejected: the args are checked in the schema lane (off the main thread) after `start`, and the remote never ran.
    expect(events).toEqual([expect.objectContaining({ type: 'start' }), expect.objectContaining({ type: 'error', code: 'INVALID_INPUT', stage: 'rejected' })]);
    const countdowns = finished.filter((entry) => entry.tool === 'remote.countdown');
    expect(countdowns.map((entry) => entry.event.type === 'error' && entry.event.stage)).toEqual(['rejected']);
  });

  it('forwards remote progress notifications as progress events', async () => {
    const events = await collect(registry.stream('remote.countdown', { steps: 4, delayMs: 5 }));
    const progress = events.filter((event): event is Extract<ToolEvent, { type: 'progress' }> => event.type === 'progress');
    expect(progress.map((event) => [event.pct, event.message])).toEqual([[25, 'step 1'], [50, 'step 2'], [75, 'step 3'], [100, 'step 4']]);
    const last = events.at(-1);
    expect(last).toMatchObject({ type: 'result' });
    expect(last?.type === 'result' ? last.result.content : []).toEqual([{ type: 'text', text: 'liftoff after 4 steps' }]);
  });

  it('cancels the remote call when the registry call is cancelled', async () => {
    const before = ((await registry.execute('remote.cancellations', {})).structuredContent as { cancelled: number }).cancelled;
    const stream = registry.stream('remote.countdown', { steps: 100, delayMs: 20 });
    const events: ToolEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'progress' && event.message === 'step 2') expect(stream.cancel()).toBe('CANCELLED');
    }
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    // The remote saw notifications/cancelled and stopped counting.
    await expect.poll(async () => ((await registry.execute('remote.cancellations', {})).structuredContent as { cancelled: number }).cancelled).toBe(before + 1);
  });

  it('ends a remote call at the wall budget, cancelling it remotely', async () => {
    const count = async (): Promise<number> => ((await registry.execute('remote.cancellations', {})).structuredContent as { cancelled: number }).cancelled;
    const before = await count();
    const result = await registry.execute('remote.countdown', { steps: 100, delayMs: 20 }, { policy: { timeout: '0.15s' } });
    expect(result).toMatchObject({ isError: true, error: { code: 'TOOL_TIMEOUT' } });
    await expect.poll(count).toBe(before + 1);
  });

  it('re-syncs when the remote sends tools/list_changed', async () => {
    const changes: string[][] = [];
    const unsubscribe = registry.onToolsChanged((names) => changes.push(names));
    try {
      await registry.execute('remote.toggle_extra', {});
      await expect.poll(() => imported.tools).toContain('remote.extra');
      expect((await registry.execute('remote.extra', {})).content).toEqual([{ type: 'text', text: 'extra' }]);
      await registry.execute('remote.toggle_extra', {});
      await expect.poll(() => imported.tools).not.toContain('remote.extra');
      expect(registry.has('remote.extra')).toBe(false);
      expect(changes.length).toBeGreaterThanOrEqual(2);
    } finally {
      unsubscribe();
    }
  });

  it('refuses a second import under a taken name: the tools are skipped, with reasons', async () => {
    const again = await importMcpServer(registry, { name: 'remote', command: process.execPath, args: [remoteServer], cwd: root, stderr: 'ignore' });
    try {
      expect(again.tools).toEqual([]);
      expect(again.skipped.map((entry) => entry.tool).sort()).toEqual(['cancellations', 'countdown', 'divide', 'toggle_extra']);
      expect(again.skipped[0]?.reason).toMatch(/already registered/);
    } finally {
      await again.close();
    }
    // Closing the second import did not touch the first one's tools.
    expect(registry.has('remote.divide')).toBe(true);
  });

  it('unregisters its tools and stops the server on close', async () => {
    const other = await importMcpServer(registry, { name: 'second', command: process.execPath, args: [remoteServer], cwd: root });
    expect(registry.has('second.divide')).toBe(true);
    await other.close();
    expect(registry.has('second.divide')).toBe(false);
    expect(other.tools).toEqual([]);
    await other.close();
  });

  it('fails with a coded error when the server cannot be started', async () => {
    await expect(importMcpServer(registry, { name: 'ghost', command: join(root, 'no-such-binary') })).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(registry.names().some((name) => name.startsWith('ghost.'))).toBe(false);
  });

  it('checks its options', async () => {
    await expect(importMcpServer(registry, { name: 'a.b', command: 'x' })).rejects.toThrow(/options\.name/);
    await expect(importMcpServer(registry, { name: 'x' })).rejects.toThrow(/exactly one of command/);
  });
});

describe('importing an MCP server over Streamable HTTP', () => {
  it('imports toolhost\'s own HTTP server: tools, results and errors round-trip', async () => {
    const { defineNativeTool, toolError } = await import('../host/index.js');
    const upstream = makeRegistry();
    upstream.register(defineNativeTool({
      name: 'greet',
      description: 'Greets.',
      inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
      run: (args) => ({ greeting: `hello ${(args as { who: string }).who}` }),
    }));
    upstream.register(defineNativeTool({ name: 'fail', description: 'Fails.', inputSchema: { type: 'object' }, run: () => { throw toolError('X', 'nope'); } }));
    const server = await startMcpHttpServer(upstream, { bearerToken: 'tok' });
    const downstream = makeRegistry();
    const imported = await importMcpServer(downstream, { name: 'up', url: server.url, headers: { Authorization: 'Bearer tok' } });
    try {
      expect(imported.tools).toEqual(['up.fail', 'up.greet']);
      expect((await downstream.execute('up.greet', { who: 'mcp' })).structuredContent).toEqual({ greeting: 'hello mcp' });
      await expect(downstream.execute('up.greet', {})).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect((await downstream.execute('up.fail', {})).error).toMatchObject({ code: 'TOOL_ERROR', message: 'TOOL_ERROR: nope', details: { code: 'REMOTE_ERROR' } });
    } finally {
      await imported.close();
      await server.close();
      await downstream.close();
      await upstream.close();
    }
    expect(server.sessions).toBe(0);
  });
});
