import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { importMcpServer, type McpImport, type McpImportOptions } from '../host/tools/mcp-import.js';
import { collect, makeRegistry, root } from './helpers.js';

// The same four tools served by a server that speaks only 2026-07-28 (SDK v2, legacy refused) and by one
// that speaks only 2025-11-25 (SDK 1.x), each over stdio and over Streamable HTTP on loopback.
const modernServer = join(root, 'test', 'fixtures', 'mcp', 'modern-server.mjs');
const legacyServer = join(root, 'test', 'fixtures', 'mcp', 'remote-server.mjs');

/** Start an HTTP fixture; resolves with its URL (it prints `listening <url>`) and the process. */
async function startHttpFixture(script: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [script, 'http'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const match = /^listening (\S+)$/.exec(line);
    if (match) return { url: match[1]!, child };
  }
  throw new Error(`${script} exited before listening`);
}

const cases: Array<{ title: string; version: string; script: string; transport: 'stdio' | 'http' }> = [
  { title: 'a 2026-07-28-only server over stdio', version: '2026-07-28', script: modernServer, transport: 'stdio' },
  { title: 'a 2026-07-28-only server over Streamable HTTP', version: '2026-07-28', script: modernServer, transport: 'http' },
  { title: 'a 2025-11-25-only server over stdio', version: '2025-11-25', script: legacyServer, transport: 'stdio' },
  { title: 'a 2025-11-25-only server over Streamable HTTP', version: '2025-11-25', script: legacyServer, transport: 'http' },
];

describe.each(cases)('importing $title', ({ version, script, transport }) => {
  let registry: ToolRegistry;
  let imported: McpImport;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    registry = makeRegistry();
    let where: Pick<McpImportOptions, 'command' | 'args' | 'cwd' | 'url'>;
    if (transport === 'stdio') {
      where = { command: process.execPath, args: script === modernServer ? [script, 'stdio'] : [script], cwd: root };
    } else {
      const started = await startHttpFixture(script);
      child = started.child;
      where = { url: started.url };
    }
    imported = await importMcpServer(registry, { name: 'far', ...where });
  });
  afterAll(async () => {
    await imported?.close();
    await registry?.close();
    if (child && child.exitCode === null) {
      child.kill();
      await once(child, 'exit');
    }
  });

  const cancellations = async (): Promise<number> => ((await registry.execute('far.cancellations', {})).structuredContent as { cancelled: number }).cancelled;

  it(`negotiates ${version} and registers the remote tools`, () => {
    expect(imported.protocolVersion).toBe(version);
    expect(imported.tools).toEqual(['far.cancellations', 'far.countdown', 'far.divide', 'far.toggle_extra']);
    expect(registry.get('far.divide')).toMatchObject({ idempotent: true, readOnly: true, source: 'mcp:far' });
  });

  it('calls a tool: structured content, and a remote isError as REMOTE_ERROR', async () => {
    expect((await registry.execute('far.divide', { a: 7, b: 2 })).structuredContent).toEqual({ quotient: 3.5 });
    const failed = await registry.execute('far.divide', { a: 1, b: 0 });
    expect(failed.error).toMatchObject({ code: 'TOOL_ERROR', message: 'division by zero', details: { code: 'REMOTE_ERROR' } });
  });

  it('forwards remote progress as progress events', async () => {
    const events = await collect(registry.stream('far.countdown', { steps: 4, delayMs: 5 }));
    const progress = events.filter((event): event is Extract<ToolEvent, { type: 'progress' }> => event.type === 'progress');
    expect(progress.map((event) => [event.pct, event.message])).toEqual([[25, 'step 1'], [50, 'step 2'], [75, 'step 3'], [100, 'step 4']]);
    expect(events.at(-1)).toMatchObject({ type: 'result', result: { content: [{ type: 'text', text: 'liftoff after 4 steps' }] } });
  });

  it('cancels the remote call when the toolhost call is cancelled', async () => {
    const before = await cancellations();
    const stream = registry.stream('far.countdown', { steps: 100, delayMs: 20 });
    const events: ToolEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'progress' && event.message === 'step 2') expect(stream.cancel()).toBe('CANCELLED');
    }
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
    // The remote saw the cancellation (notifications/cancelled, or on 2026-07-28 HTTP its request closed) and stopped.
    await expect.poll(cancellations).toBe(before + 1);
  });

  it('follows the remote tool list when it changes', async () => {
    await registry.execute('far.toggle_extra', {});
    await expect.poll(() => imported.tools).toContain('far.extra');
    expect((await registry.execute('far.extra', {})).content).toEqual([{ type: 'text', text: 'extra' }]);
    await registry.execute('far.toggle_extra', {});
    await expect.poll(() => imported.tools).not.toContain('far.extra');
  });
});

describe('pinning the protocol', () => {
  it('protocol 2026-07-28 refuses a 2025-only server; protocol 2025-11-25 refuses a 2026-only one', async () => {
    const registry = makeRegistry();
    try {
      await expect(importMcpServer(registry, { name: 'old', command: process.execPath, args: [legacyServer], cwd: root, stderr: 'ignore', protocol: '2026-07-28' }))
        .rejects.toMatchObject({ code: 'INTERNAL' });
      await expect(importMcpServer(registry, { name: 'new', command: process.execPath, args: [modernServer, 'stdio'], cwd: root, stderr: 'ignore', protocol: '2025-11-25', timeoutMs: 3_000 }))
        .rejects.toMatchObject({ code: 'INTERNAL' });
      expect(registry.names().filter((name) => name.startsWith('old.') || name.startsWith('new.'))).toEqual([]);
      const pinned = await importMcpServer(registry, { name: 'new', command: process.execPath, args: [modernServer, 'stdio'], cwd: root, protocol: '2026-07-28' });
      expect(pinned.protocolVersion).toBe('2026-07-28');
      await pinned.close();
    } finally {
      await registry.close();
    }
  });

  it('checks the option', async () => {
    const registry = makeRegistry();
    try {
      await expect(importMcpServer(registry, { name: 'x', command: 'x', protocol: '2024-11-05' as never })).rejects.toThrow(/options\.protocol/);
    } finally {
      await registry.close();
    }
  });
});
