/**
 * `approval: ask` for a 2026-07-28 client: the approval question is an elicitation carried by an
 * input-required result (host/servers/mcp-input-required.ts), answered by the SDK v2 client's
 * retry; the call runs on `approve: true` and is refused (PERMISSION_DENIED) on a decline, as on
 * the 2025 leg (test/mcp-approval-elicitation.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { ToolRegistry } from '../host/index.js';
import { askCallerApproval } from '../host/policy/approval-elicitation.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';

describe.skipIf(!hasCGuests)('approval through a 2026-07-28 client\'s elicitation', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const worktree = mkdtempSync(join(tmpdir(), 'toolhost-approval-2026-'));
  const clients: Client[] = [];

  async function connect(answer: (message: string) => unknown): Promise<Client> {
    const client = new Client({ name: 'approval-2026', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', ((request: { params: { message: string } }) => answer(request.params.message)) as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    registry = makeRegistry({ audit: new MemoryAuditLog(), approve: askCallerApproval, defaults: { wallMs: 60_000 } });
    await registry.registerWasmTools(example('ctools'), { grant: { privilege: 'PRIVILEGED', worktree }, defaultPolicy: { privilege_level: 'PRIVILEGED' } });
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.close();
    await registry?.close();
    rmSync(worktree, { recursive: true, force: true });
  });

  it('runs the call when the user approves through the retry', async () => {
    const asked: string[] = [];
    const client = await connect((message) => {
      asked.push(message);
      return { action: 'accept', content: { approve: true } };
    });
    const result = (await client.callTool({ name: 'echo', arguments: { text: 'approved?' } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ text: 'approved?' });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('Allow the tool "echo" to run with privilege_level PRIVILEGED?');
  });

  it('refuses the call when the user declines', async () => {
    const client = await connect(() => ({ action: 'decline' }));
    const result = (await client.callTool({ name: 'echo', arguments: { text: 'no' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { error: { code: string; message: string } }).error).toMatchObject({ code: 'PERMISSION_DENIED' });
  });
});
