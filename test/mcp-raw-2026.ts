/**
 * Raw MCP 2026-07-28 requests (no SDK driver), to see an input_required result as it is on the wire and to
 * misuse it: a tools/call with the per-request metadata a 2026 client sends, and its one JSON-RPC answer.
 */
/** One raw 2026-07-28 request (no SDK driver): to see the input_required result and misuse it. */
export async function rawCall(url: string, body: Record<string, unknown>, token?: string): Promise<Record<string, unknown>> {
  const message = await rawMessage(url, body, token);
  if (message.result === undefined) throw new Error(`no result: ${JSON.stringify(message)}`);
  return message.result;
}

/** The JSON-RPC error of a refused retry (a requestState that names no call of this caller's). */
export const UNKNOWN_STATE = { code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'request_state_unknown' } } };

export async function rawMessage(url: string, body: Record<string, unknown>, token?: string): Promise<{ result?: Record<string, unknown>; error?: unknown }> {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: { form: {} } },
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  };
  const params = body.params as Record<string, unknown>;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': String(params.name),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { ...params, _meta: { ...meta, ...(params._meta as object | undefined) } } }),
  });
  const text = await response.text();
  const line = text.split('\n').reverse().find((entry) => entry.startsWith('data: '));
  return JSON.parse(line === undefined ? text : line.slice(6)) as { result?: Record<string, unknown>; error?: unknown };
}
