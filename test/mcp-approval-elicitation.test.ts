/**
 * `approval: ask` (host/policy/approval-elicitation.ts): a PRIVILEGED call to
 * a sandboxed tool asks the calling MCP client's user through elicitation,
 * with the official SDK client's handler answering over Streamable HTTP; it
 * runs on accept with `approve: true` and is refused (PERMISSION_DENIED, with
 * the reason, audited) on decline, on an accept without the box ticked, for a
 * client without the capability and for a caller that cannot be asked; a
 * client that never answers ends the call at its wall budget.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger, type ToolRegistry } from '../host/index.js';
import { registryOptions } from '../host/compose/registry.js';
import { loadConfig } from '../host/config/index.js';
import { askCallerApproval } from '../host/policy/approval-elicitation.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';

describe.skipIf(!hasCGuests)('approval through the calling client\'s elicitation', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const audit = new MemoryAuditLog();
  const clients: Client[] = [];
  const worktree = mkdtempSync(join(tmpdir(), 'toolhost-approval-'));

  /** An SDK client; with `answer`, it declares elicitation and answers with it. */
  async function connect(answer?: (request: ElicitRequest) => Promise<ElicitResult>): Promise<Client> {
    const client = new Client({ name: 'approval-test', version: '1.0.0' }, { capabilities: answer ? { elicitation: { form: {} } } : {} });
    if (answer) client.setRequestHandler(ElicitRequestSchema, answer);
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    clients.push(client);
    return client;
  }
  const call = async (client: Client, args: Record<string, unknown> = { text: 'approved?' }): Promise<CallToolResult> =>
    (await client.callTool({ name: 'echo', arguments: args })) as CallToolResult;
  const errorOf = (result: CallToolResult): { code: string; message: string } => (result.structuredContent as { error: { code: string; message: string } }).error;

  beforeAll(async () => {
    registry = makeRegistry({ audit, approve: askCallerApproval, defaults: { wallMs: 3000 } });
    await registry.registerWasmTools(example('ctools'), {
      grant: { privilege: 'PRIVILEGED', worktree },
      defaultPolicy: { privilege_level: 'PRIVILEGED' },
    });
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.close();
    await registry?.close();
    rmSync(worktree, { recursive: true, force: true });
  });

  it('asks what the call will be able to use, and runs it when the user approves', async () => {
    const asked: ElicitRequest[] = [];
    const client = await connect(async (request) => {
      asked.push(request);
      return { action: 'accept', content: { approve: true } };
    });
    const result = await call(client);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ text: 'approved?' });
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { message: string; requestedSchema: { properties: Record<string, unknown>; required: string[] } };
    expect(params.message).toContain('Allow the tool "echo" to run with privilege_level PRIVILEGED?');
    expect(params.message).toContain(`Worktree: ${worktree} (read-write).`);
    expect(params.requestedSchema).toMatchObject({ properties: { approve: { type: 'boolean', default: false } }, required: ['approve'] });
    const callId = (result._meta as Record<string, string>)['toolhost/callId'];
    expect(audit.entries.find((entry) => entry.callId === callId)).toMatchObject({ decision: 'allowed', privilege: 'PRIVILEGED', grants: { approvedBy: expect.stringContaining('elicitation') as string } });
  });

  it('refuses the call when the user declines, cancels or accepts without approving, saying so', async () => {
    for (const [answer, reason] of [
      [{ action: 'decline' }, 'answered decline'],
      [{ action: 'cancel' }, 'answered cancel'],
      [{ action: 'accept', content: { approve: false } }, 'without approve: true'],
    ] as Array<[ElicitResult, string]>) {
      const client = await connect(async () => answer);
      const result = await call(client);
      expect(result.isError).toBe(true);
      expect(errorOf(result).code).toBe('PERMISSION_DENIED');
      expect(errorOf(result).message).toContain(reason);
      const callId = (result._meta as Record<string, string>)['toolhost/callId'];
      expect(audit.entries.find((entry) => entry.callId === callId)).toMatchObject({ decision: 'denied', code: 'PERMISSION_DENIED', reason: expect.stringContaining(reason) as string });
    }
  });

  it('refuses the call, without asking anyone, for a client that did not declare elicitation and for the library', async () => {
    const result = await call(await connect());
    expect(errorOf(result)).toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('cannot answer elicitation') as string });
    await expect(registry.execute('echo', { text: 'library' })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('cannot answer elicitation') as string });
  });

  it('ends a call whose client never answers at its wall budget', async () => {
    const client = await connect(() => new Promise<never>(() => {}));
    const started = Date.now();
    const result = await call(client);
    expect(errorOf(result).code).toBe('TOOL_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('is what host.approval: ask stands for in the config', async () => {
    const { resolved } = await loadConfig(undefined, { env: {} });
    expect(registryOptions({ ...resolved, approval: 'ask' }, { logger: silentLogger, audit: new MemoryAuditLog() }).approve).toBe(askCallerApproval);
  });
});
