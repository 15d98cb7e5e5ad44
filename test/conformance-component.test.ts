/**
 * conformance.yaml serves guest-tools/conformance (a JS component of the 0.3.0 world mcp-provider, written
 * with the toolkit's defineMcpComponent): through the official SDK client its tools answer with MCP content
 * items, and its prompts and resources are served. (`npm run conformance` runs the official suite against it.)
 * Over Streamable HTTP on 2026-07-28, its SEP-2322 tools ask through input_required results (one round per
 * request, a new requestState each), a tampered requestState is a JSON-RPC error, a tool asks only for what the
 * request's clientCapabilities declare, and a call that needs an undeclared capability is -32021 with HTTP 400
 * (SEP-2575); on 2025-11-25 the same tools ask with server-to-client requests. Its keyed tools (0.3.0's `ask`)
 * name their requests: a round of three kinds is one input_required result under the tool's keys, a retry that
 * answers some keys is asked the rest, and answers a first call already carries complete it without a round trip.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHost, silentLogger, type Host } from '../host/index.js';
import { loadConfig } from '../host/config/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { createMcpServer } from '../host/servers/mcp-server.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { examplesDir, root, sharedCacheDir } from './helpers.js';

const built = existsSync(join(examplesDir, 'conformance', 'conformance.wasm'));

describe.skipIf(!built)('the conformance component, as conformance.yaml serves it', () => {
  let host: Host;
  let client: Client;

  beforeAll(async () => {
    const { resolved } = await loadConfig(join(root, 'conformance.yaml'), { env: {} });
    host = await createHost({ ...resolved, sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 1 } }, { overrides: { logger: silentLogger, audit: new MemoryAuditLog() } });
    const server = createMcpServer(host.registry);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    client = new Client({ name: 'conformance-component-test', version: '1.0.0' });
    await client.connect(clientSide);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await host?.close();
  });

  it('lists the suite\'s tools, and answers with content items', async () => {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource', 'test_multiple_content_types', 'test_sampling', 'test_elicitation', 'json_schema_2020_12_tool',
      'test_input_required_result_elicitation', 'test_input_required_result_sampling', 'test_input_required_result_request_state', 'test_input_required_result_multi_round',
      'test_input_required_result_tampered_state', 'test_input_required_result_capabilities', 'test_missing_capability', 'test_streaming_elicitation', 'test_reconnection']));
    const mixed = (await client.callTool({ name: 'test_multiple_content_types', arguments: {} })) as CallToolResult;
    expect(mixed.content.map((item) => item.type)).toEqual(['text', 'image', 'resource']);
    expect(mixed.content[2]).toEqual({ type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } });
    const failing = (await client.callTool({ name: 'test_error_handling', arguments: {} })) as CallToolResult;
    expect(failing.isError).toBe(true);
  });

  it('on 2025-11-25 the input-required tools ask with server-to-client requests, and answer with what the client said', async () => {
    const server = createMcpServer(host.registry);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const able = new Client({ name: 'conformance-component-able', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
    const asked: string[] = [];
    able.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: request.params.message.startsWith('Step 2') ? { color: 'green' } : { name: 'Ada' } };
    });
    able.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model' }));
    await able.connect(clientSide);
    try {
      const greeted = (await able.callTool({ name: 'test_input_required_result_elicitation', arguments: {} })) as CallToolResult;
      expect(greeted.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
      const rounds = (await able.callTool({ name: 'test_input_required_result_multi_round', arguments: {} })) as CallToolResult;
      expect(rounds.content).toEqual([{ type: 'text', text: 'multi-round complete: Ada likes green' }]);
      expect(asked).toEqual(['What is your name?', 'Step 1: What is your name?', 'Step 2: What is your favorite color?']);
      const sampled = (await able.callTool({ name: 'test_input_required_result_sampling', arguments: {} })) as CallToolResult;
      expect(sampled.content).toEqual([{ type: 'text', text: 'The model says: Paris' }]);
      // A prompt asks its caller as a tool does.
      able.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { context: 'the 2025 session' } }));
      const prompt = await able.getPrompt({ name: 'test_input_required_result_prompt' });
      expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Prompt with context: the 2025 session' } }]);
    } finally {
      await able.close();
    }
  });

  it('on 2025-11-25 a keyed round of three kinds is three server-to-client requests, answered side by side', async () => {
    const server = createMcpServer(host.registry);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const able = new Client({ name: 'conformance-component-roots', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} } });
    const asked: string[] = [];
    able.setRequestHandler(ElicitRequestSchema, () => {
      asked.push('elicitation');
      return { action: 'accept', content: { name: 'Ada' } };
    });
    able.setRequestHandler(CreateMessageRequestSchema, () => {
      asked.push('sampling');
      return { role: 'assistant', content: { type: 'text', text: 'Hi there' }, model: 'test-model' };
    });
    able.setRequestHandler(ListRootsRequestSchema, () => {
      asked.push('roots');
      return { roots: [{ uri: 'file:///work/project', name: 'project' }, { uri: 'file:///tmp' }] };
    });
    await able.connect(clientSide);
    try {
      const result = (await able.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} })) as CallToolResult;
      expect(result.content).toEqual([{ type: 'text', text: 'multiple-inputs-ok: name=Ada, greeting=Hi there, roots=2' }]);
      expect(asked.sort()).toEqual(['elicitation', 'roots', 'sampling']);
      const roots = (await able.callTool({ name: 'test_input_required_result_list_roots', arguments: {} })) as CallToolResult;
      expect(roots.content).toEqual([{ type: 'text', text: 'roots: file:///work/project, file:///tmp' }]);
    } finally {
      await able.close();
    }
  });

  it('serves its prompts and resources', async () => {
    const prompt = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'hello', arg2: 'world' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Prompt with arguments: arg1=\'hello\', arg2=\'world\'' } }]);
    const read = await client.readResource({ uri: 'test://template/123/data' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ id: '123', templateTest: true, data: 'Data for ID: 123' });
  });
});

type ModernAnswer = { status: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: Record<string, unknown> } };

/** One raw 2026-07-28 tools/call, as the suite sends it: the HTTP status and the JSON-RPC message. */
function modernCall(url: string, params: Record<string, unknown>, capabilities: Record<string, unknown>): Promise<ModernAnswer> {
  return modernRequest(url, 'tools/call', { arguments: {}, ...params }, capabilities);
}

/** One raw 2026-07-28 request of `method`. */
async function modernRequest(url: string, method: string, params: Record<string, unknown>, capabilities: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ModernAnswer> {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'conformance-component-test', version: '1.0.0' },
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': String(params.name), ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }),
  });
  const text = await response.text();
  const line = text.split('\n').reverse().find((entry) => entry.startsWith('data: '));
  return { status: response.status, ...(JSON.parse(line === undefined ? text : line.slice(6)) as object) };
}

type InputRequests = Record<string, { method: string; params: Record<string, unknown> }>;
const ABLE = { sampling: {}, elicitation: { form: {} } };
const ABLE_WITH_ROOTS = { ...ABLE, roots: { listChanged: true } };

describe.skipIf(!built)('the conformance component\'s input-required tools, as conformance.yaml serves them over HTTP', () => {
  let host: Host;
  let server: McpHttpServer;

  beforeAll(async () => {
    const { resolved } = await loadConfig(join(root, 'conformance.yaml'), { env: {} });
    // A parked call keeps its worker until its 5 s wall budget: room for all the ones these tests leave parked
    // (tampered, capabilities, streaming elicitation, ...), so that no later call waits for a worker.
    host = await createHost({ ...resolved, sandbox: { ...resolved.sandbox, cacheDir: sharedCacheDir, threads: 6 } }, { overrides: { logger: silentLogger, audit: new MemoryAuditLog() } });
    server = await startMcpHttpServer(host.registry, { host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await host?.close();
  });

  it('test_input_required_result_elicitation asks by input_required, and the retry with the answer completes the call', async () => {
    const first = await modernCall(server.url, { name: 'test_input_required_result_elicitation' }, ABLE);
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const [key, request] = Object.entries(first.result!.inputRequests as InputRequests)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: 'What is your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } });
    const done = await modernCall(server.url, { name: 'test_input_required_result_elicitation', inputResponses: { [key]: { action: 'accept', content: { name: 'Alice' } } }, requestState: first.result!.requestState }, ABLE);
    expect(done.result?.content).toEqual([{ type: 'text', text: 'Hello, Alice!' }]);
  });

  it('a keyed round is one input_required under the tool\'s keys; a retry answering some keys is asked the rest', async () => {
    const name = 'test_input_required_result_multiple_inputs';
    const first = await modernCall(server.url, { name }, ABLE_WITH_ROOTS);
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const requests = first.result!.inputRequests as InputRequests;
    expect(Object.fromEntries(Object.entries(requests).map(([key, request]) => [key, request.method]))).toEqual({ user_name: 'elicitation/create', greeting: 'sampling/createMessage', client_roots: 'roots/list' });
    expect(requests.user_name!.params).toMatchObject({ mode: 'form', message: 'What is your name?' });
    expect(requests.greeting!.params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 });
    expect(requests.client_roots!.params).toEqual({});
    // Two of three answered (and a key the round does not have): the rest is asked again, under a new state.
    const second = await modernCall(server.url, { name, requestState: first.result!.requestState, inputResponses: {
      user_name: { action: 'accept', content: { name: 'Alice' } },
      greeting: { role: 'assistant', content: { type: 'text', text: 'Hello there!' }, model: 'test-model' },
      stray: { action: 'accept', content: {} },
    } }, ABLE_WITH_ROOTS);
    expect(second.result).toMatchObject({ resultType: 'input_required' });
    expect(second.result!.requestState).not.toBe(first.result!.requestState);
    expect(Object.keys(second.result!.inputRequests as InputRequests)).toEqual(['client_roots']);
    const done = await modernCall(server.url, { name, requestState: second.result!.requestState, inputResponses: { client_roots: { roots: [{ uri: 'file:///test/root', name: 'Test Root' }] } } }, ABLE_WITH_ROOTS);
    expect(done.result?.content).toEqual([{ type: 'text', text: 'multiple-inputs-ok: name=Alice, greeting=Hello there!, roots=1' }]);
  });

  it('answers a first call already carries complete its first round without a round trip; others are asked', async () => {
    const name = 'test_input_required_result_elicitation';
    const offered = await modernCall(server.url, { name, inputResponses: { user_name: { action: 'accept', content: { name: 'Bob' } }, extra: { action: 'accept', content: { x: 1 } } } }, ABLE);
    expect(offered.result?.content).toEqual([{ type: 'text', text: 'Hello, Bob!' }]);
    const wrong = await modernCall(server.url, { name, inputResponses: { wrong_key: { action: 'accept', content: { name: 'Eve' } } } }, ABLE);
    expect(wrong.result).toMatchObject({ resultType: 'input_required', inputRequests: { user_name: { method: 'elicitation/create' } } });
    // A malformed answer offered up front is not taken for one: the request is asked.
    const malformed = await modernCall(server.url, { name, inputResponses: { user_name: { action: 'maybe' } } }, ABLE);
    expect(malformed.result).toMatchObject({ resultType: 'input_required' });
    // Answered, so that they give their workers back (the tests after these need them).
    for (const parked of [wrong, malformed]) {
      const done = await modernCall(server.url, { name, requestState: parked.result!.requestState, inputResponses: { user_name: { action: 'decline' } } }, ABLE);
      expect(done.result?.content).toEqual([{ type: 'text', text: 'Hello, stranger!' }]);
    }
  });

  it('roots/list the request did not declare is -32021 naming roots; a malformed roots answer fails the tool\'s round', async () => {
    const undeclared = await modernCall(server.url, { name: 'test_input_required_result_list_roots' }, ABLE);
    expect(undeclared.status).toBe(400);
    expect(undeclared.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { roots: {} } } });
    const first = await modernCall(server.url, { name: 'test_input_required_result_list_roots' }, ABLE_WITH_ROOTS);
    expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { client_roots: { method: 'roots/list' } } });
    const bad = await modernCall(server.url, { name: 'test_input_required_result_list_roots', requestState: first.result!.requestState, inputResponses: { client_roots: { roots: 'everything' } } }, ABLE_WITH_ROOTS);
    expect(bad.result?.isError).toBe(true);
    expect(JSON.stringify(bad.result?.content)).toContain('the client\'s answer to roots/list (\\"client_roots\\") is malformed');
  });

  it('test_input_required_result_prompt asks from prompts/get by input_required; only a prompts/get retry resumes it', async () => {
    const first = await modernRequest(server.url, 'prompts/get', { name: 'test_input_required_result_prompt' }, ABLE);
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const [key, request] = Object.entries(first.result!.inputRequests as InputRequests)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: 'What context should the prompt use?' } });
    const answer = { [key]: { action: 'accept', content: { context: 'test context' } } };
    // The prompt's state is no tool call's: a tools/call retry with it is refused, and the call stays parked.
    const crossed = await modernCall(server.url, { name: 'test_input_required_result_elicitation', inputResponses: answer, requestState: first.result!.requestState }, ABLE);
    expect(crossed.error).toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'request_state_unknown' } } });
    const done = await modernRequest(server.url, 'prompts/get', { name: 'test_input_required_result_prompt', inputResponses: answer, requestState: first.result!.requestState }, ABLE);
    expect(done.result?.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Prompt with context: test context' } }]);
  });

  it('test_custom_header\'s Mcp-Param-Region header must say what its body says (SEP-2243): else HTTP 400, -32020, and no call', async () => {
    expect((await modernRequest(server.url, 'tools/list', {}, {})).result?.tools).toEqual(expect.arrayContaining([expect.objectContaining({
      name: 'test_custom_header', inputSchema: expect.objectContaining({ properties: { region: expect.objectContaining({ 'x-mcp-header': 'Region' }) } }),
    })]));
    const call = (region: string, headers: Record<string, string>): Promise<ModernAnswer> => modernRequest(server.url, 'tools/call', { name: 'test_custom_header', arguments: { region } }, {}, headers);
    expect((await call('eu-west', { 'mcp-param-region': 'eu-west' })).result?.content).toEqual([{ type: 'text', text: 'region=eu-west' }]);
    expect((await call('Zürich', { 'mcp-param-region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=` })).result?.content).toEqual([{ type: 'text', text: 'region=Zürich' }]);
    for (const [headers, reason] of [[{}, 'param-header-missing'], [{ 'mcp-param-region': 'us-east' }, 'param-header-mismatch'], [{ 'mcp-param-region': '=?base64?ZXUtd2VzdA?=' }, 'param-header-invalid-encoding']] as const) {
      const refused = await call('eu-west', headers);
      expect(refused.status).toBe(400);
      expect(refused.error).toMatchObject({ code: -32020, data: { reason, header: 'Mcp-Param-Region' } });
    }
  });

  it('test_input_required_result_multi_round asks twice, each round with a requestState of its own', async () => {
    const first = await modernCall(server.url, { name: 'test_input_required_result_multi_round' }, ABLE);
    const [key1] = Object.keys(first.result!.inputRequests as InputRequests);
    const second = await modernCall(server.url, { name: 'test_input_required_result_multi_round', inputResponses: { [key1!]: { action: 'accept', content: { name: 'Alice' } } }, requestState: first.result!.requestState }, ABLE);
    expect(second.result).toMatchObject({ resultType: 'input_required' });
    expect(second.result!.requestState).not.toBe(first.result!.requestState);
    const [key2, request2] = Object.entries(second.result!.inputRequests as InputRequests)[0]!;
    expect(request2.params.message).toBe('Step 2: What is your favorite color?');
    const done = await modernCall(server.url, { name: 'test_input_required_result_multi_round', inputResponses: { [key2]: { action: 'accept', content: { color: 'blue' } } }, requestState: second.result!.requestState }, ABLE);
    expect(done.result?.content).toEqual([{ type: 'text', text: 'multi-round complete: Alice likes blue' }]);
  });

  it('test_input_required_result_request_state says state-ok once its retry reached the parked call', async () => {
    const first = await modernCall(server.url, { name: 'test_input_required_result_request_state' }, ABLE);
    const [key] = Object.keys(first.result!.inputRequests as InputRequests);
    const done = await modernCall(server.url, { name: 'test_input_required_result_request_state', inputResponses: { [key!]: { action: 'accept', content: { ok: true } } }, requestState: first.result!.requestState }, ABLE);
    expect((done.result?.content as Array<{ text: string }>)[0]!.text).toContain('state-ok');
  });

  it('a tampered requestState is refused with a JSON-RPC error, not answered with a result', async () => {
    const first = await modernCall(server.url, { name: 'test_input_required_result_tampered_state' }, ABLE);
    const [key] = Object.keys(first.result!.inputRequests as InputRequests);
    const tampered = await modernCall(server.url, { name: 'test_input_required_result_tampered_state', inputResponses: { [key!]: { action: 'accept', content: { ok: true } } }, requestState: `${String(first.result!.requestState)}-TAMPERED` }, ABLE);
    expect(tampered.result).toBeUndefined();
    expect(tampered.error).toMatchObject({ code: -32602, data: { code: 'INVALID_INPUT', details: { reason: 'request_state_unknown' } } });
  });

  it('test_input_required_result_capabilities asks only for what the request declared: sampling, not elicitation', async () => {
    const first = await modernCall(server.url, { name: 'test_input_required_result_capabilities' }, { sampling: {} });
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    expect(Object.values(first.result!.inputRequests as InputRequests).map((request) => request.method)).toEqual(['sampling/createMessage']);
  });

  it('a call that needs a capability the request did not declare is -32021 with HTTP 400, naming it', async () => {
    const refused = await modernCall(server.url, { name: 'test_missing_capability' }, {});
    expect(refused.status).toBe(400);
    expect(refused.result).toBeUndefined();
    expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    // Declared: the tool asks, as any other.
    const asked = await modernCall(server.url, { name: 'test_missing_capability' }, { sampling: {} });
    expect(asked.status).toBe(200);
    expect(asked.result).toMatchObject({ resultType: 'input_required' });
  });

  it('test_reconnection and test_streaming_elicitation answer on their own request\'s stream', async () => {
    const reconnection = await modernCall(server.url, { name: 'test_reconnection' }, {});
    expect((reconnection.result?.content as Array<{ text: string }>)[0]!.text).toContain('Reconnection test completed successfully');
    const streaming = await modernCall(server.url, { name: 'test_streaming_elicitation' }, { elicitation: {} });
    expect(streaming.result).toMatchObject({ resultType: 'input_required' });
  });
});
