/**
 * Soak calls over MCP Streamable HTTP with the official SDK client: several
 * sessions, calls spread over them. The call id, policy and conversation go
 * in `_meta` (toolhost's keys); a cancelled kind aborts the request's signal,
 * which makes the SDK send `notifications/cancelled` (its promise rejects at
 * once: that rejection is the client's one answer; the host's ledger checks
 * the call still ended once). Half the event floods ask for progress.
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_ABORTED, NO_ANSWER, judge, type CallOutcome } from './outcome.js';
import type { PlannedCall } from './plan.js';

/** The client's own limit on one request: far above any planned call, so hitting it means no answer came. */
const REQUEST_TIMEOUT_MS = 120_000;

export class McpDriver {
  readonly #clients: Client[];
  readonly #transports: StreamableHTTPClientTransport[];
  readonly #agent: Agent;

  private constructor(clients: Client[], transports: StreamableHTTPClientTransport[], agent: Agent) {
    this.#clients = clients;
    this.#transports = transports;
    this.#agent = agent;
  }

  static async connect(url: string, sessions: number): Promise<McpDriver> {
    // Connections of their own, so close() ends them (the global dispatcher would keep them alive for a while).
    const agent = new Agent();
    const fetch = (input: string | URL, init?: RequestInit): Promise<Response> => undiciFetch(input, { ...init, dispatcher: agent } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;
    const transports: StreamableHTTPClientTransport[] = [];
    const clients = await Promise.all(Array.from({ length: sessions }, async (_, index) => {
      const client = new Client({ name: `toolhost-soak-${index}`, version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(url), { fetch });
      transports.push(transport);
      await client.connect(transport);
      return client;
    }));
    return new McpDriver(clients, transports, agent);
  }

  async call(call: PlannedCall): Promise<CallOutcome> {
    const { kind, n } = call;
    const client = this.#clients[Math.floor(n / 3) % this.#clients.length]!;
    const startedAt = performance.now();
    const controller = new AbortController();
    const timer = kind.cancelAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), kind.cancelAfterMs);
    const meta: Record<string, unknown> = { 'toolhost/callId': call.id };
    if (kind.policy !== undefined) meta['toolhost/policy'] = kind.policy;
    if (kind.conversation !== undefined) meta['toolhost/conversationId'] = kind.conversation(n);
    const wantsProgress = kind.tool === 'event_flood' && call.variant === 1;
    let answers = 1;
    let code: string;
    let value: unknown;
    let detail: string | undefined;
    try {
      const result = (await client.callTool({ name: kind.tool, arguments: kind.args(n) as Record<string, unknown>, _meta: meta }, undefined, {
        signal: controller.signal,
        timeout: REQUEST_TIMEOUT_MS,
        ...(wantsProgress ? { onprogress: () => undefined } : {}),
      })) as CallToolResult;
      if (result.isError === true) {
        const error = result._meta?.['toolhost/error'] as { code?: unknown; message?: unknown; details?: { reason?: unknown } } | undefined;
        code = typeof error?.code === 'string' ? error.code : 'MCP_ERROR_RESULT';
        detail = `${String(error?.details?.reason ?? '')} ${String(error?.message ?? '')}`.trim().slice(0, 160);
      } else {
        code = 'ok';
        // MCP carries only an object as structuredContent; another JSON value comes as its text.
        const text = result.content[0]?.type === 'text' ? result.content[0].text : undefined;
        value = result.structuredContent ?? (text === undefined ? undefined : parseJson(text));
      }
    } catch (error) {
      if (controller.signal.aborted) {
        code = CLIENT_ABORTED;
      } else if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        code = NO_ANSWER;
        answers = 0;
      } else if (error instanceof McpError) {
        const data = error.data as { code?: unknown } | undefined;
        code = typeof data?.code === 'string' ? data.code : `mcp:${error.code}`;
      } else {
        code = `mcp:${error instanceof Error ? error.message : String(error)}`.slice(0, 120);
      }
    } finally {
      clearTimeout(timer);
    }
    const wrong = judge(kind, n, code, value);
    return { n, channel: 'mcp', kind: kind.name, code, answers, ...(wrong === undefined ? {} : { wrong }), ...(detail === undefined ? {} : { detail }), ms: performance.now() - startedAt };
  }

  get sessions(): number {
    return this.#clients.length;
  }

  /** End the sessions as a well-behaved client does (DELETE), then the connections. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#transports.map((transport) => transport.terminateSession()));
    await Promise.allSettled(this.#clients.map((client) => client.close()));
    await this.#agent.close();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
