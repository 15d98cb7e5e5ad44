import { join } from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { defineNativeTool, type TerminalEvent } from '../host/index.js';
import { serveMcpStdio } from '../host/servers/mcp-stdio.js';
import { callWithProgress } from './fixtures/mcp/progress.js';
import { makeRegistry, root } from './helpers.js';

const fixture = join(root, 'test', 'fixtures', 'mcp', 'toolhost-stdio.mjs');

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

describe('toolhost serving MCP over stdio (a spawned process)', () => {
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = '';
  const transportErrors: Error[] = [];

  beforeAll(async () => {
    transport = new StdioClientTransport({ command: process.execPath, args: [fixture], cwd: root, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    client = new Client({ name: 'stdio-test', version: '1.0.0' });
    client.onerror = (error) => transportErrors.push(error);
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
  });

  it('lists its tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['burst', 'refuse', 'shout', 'ticks']);
    expect(tools.find((tool) => tool.name === 'shout')?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  });

  it('calls a tool, and keeps console output off stdout', async () => {
    const result = (await client.callTool({ name: 'shout', arguments: { text: 'quiet' } })) as CallToolResult;
    expect(result.structuredContent).toEqual({ text: 'QUIET' });
    await expect.poll(() => stderr).toContain('shout was called');
    expect(stderr).toContain('this line must go to stderr, not stdout');
    // Anything but protocol on stdout would have been a parse error in the client.
    expect(transportErrors).toEqual([]);
  });

  it('forwards progress and deltas', async () => {
    const { result, progress } = await callWithProgress(client, 'ticks', { n: 2 });
    expect(result.structuredContent).toEqual({ ticks: 2 });
    expect(progress.map((entry) => entry.message)).toEqual(['tick 1', '{"tick":1}', 'tick 2', '{"tick":2}']);
    // Strictly increasing: a delta passes the previous value by 0.001.
    expect(progress.map((entry) => entry.progress)).toEqual([50, 50.001, 100, 100.001]);
    expect(progress.some((entry) => entry.afterResult)).toBe(false);
  });

  it('returns failures as isError results', async () => {
    const result = (await client.callTool({ name: 'refuse', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('TOOL_ERROR: refused on purpose');
  });

  it('exits by itself when its stdin ends', async () => {
    const pid = transport.pid;
    expect(pid).toEqual(expect.any(Number));
    const started = Date.now();
    await client.close();
    // StdioClientTransport waits up to 2 s before it sends SIGTERM: a quick close means the process exited on its own.
    expect(Date.now() - started).toBeLessThan(1500);
    expect(() => process.kill(pid!, 0)).toThrow();
  });
});

/** A client transport over a pair of streams (the other ends of serveMcpStdio's stdin and stdout). */
class StreamPairTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #buffer = new ReadBuffer();
  constructor(private readonly input: Readable, private readonly output: Writable) {}
  async start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message; message = this.#buffer.readMessage()) this.onmessage?.(message);
    });
  }
  async send(message: JSONRPCMessage): Promise<void> {
    this.output.write(serializeMessage(message));
  }
  async close(): Promise<void> {
    this.output.end();
    this.onclose?.();
  }
}

describe('serveMcpStdio in process', () => {
  const registry = makeRegistry();
  const finished: TerminalEvent[] = [];
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });

  beforeAll(() => {
    registry.onCallFinished((_tool, event) => finished.push(event));
    registry.register(defineNativeTool({
      name: 'wait',
      description: 'Waits for its signal.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => {
        started();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        throw ctx.signal.reason;
      },
    }));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('ends the session when stdin ends, cancelling the calls in flight', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout });
    const client = new Client({ name: 'in-process', version: '1.0.0' });
    await client.connect(new StreamPairTransport(stdout, stdin));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['wait']);
    const pending = client.callTool({ name: 'wait', arguments: {} }).catch((error: unknown) => error);
    await running;
    stdin.end();
    await served.closed;
    await expect.poll(() => finished.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    await client.close();
    await pending;
  });

  it('lets a call in flight finish when closed with drainMs', async () => {
    registry.register(defineNativeTool({
      name: 'brief',
      description: 'Takes a moment.',
      inputSchema: { type: 'object' },
      run: async () => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        return { done: true };
      },
    }));
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout });
    const client = new Client({ name: 'draining', version: '1.0.0' });
    await client.connect(new StreamPairTransport(stdout, stdin));
    const pending = client.callTool({ name: 'brief', arguments: {} });
    await expect.poll(() => registry.inFlight).toBe(1);
    const closing = served.close({ drainMs: 5_000 });
    expect(((await pending) as CallToolResult).structuredContent).toEqual({ done: true });
    await closing;
    await client.close();
  });

  it('leaves console alone unless it serves on process.stdout, and restores it on close', async () => {
    const log = console.log;
    const stdin = new PassThrough();
    const served = await serveMcpStdio(registry, { stdin, stdout: new PassThrough(), redirectConsole: true });
    expect(console.log).not.toBe(log);
    await served.close();
    expect(console.log).toBe(log);
    const plain = await serveMcpStdio(registry, { stdin: new PassThrough(), stdout: new PassThrough() });
    expect(console.log).toBe(log);
    await plain.close();
  });
});
