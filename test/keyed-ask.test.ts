/**
 * The 0.3.0 world's `ask`: a round of requests to the caller under the tool's keys, through the call path's
 * client gate, for a sandboxed guest (fixture keyed_rounds) and a native tool (`ctx.client.ask`). A round goes
 * to an embedder's hooks side by side, or whole to a caller that takes rounds (`CallClient.ask`); its answers
 * come back in the order of its requests. A round is refused whole (nothing is asked, nothing of the grant is
 * spent) when one of its requests is: an empty round, a malformed or repeated key, a kind the grant does not
 * allow or the caller cannot answer, more requests of a kind than the grant has left, a request over
 * client_request_bytes. The worker refuses first; the main thread's gate checks everything again (the native
 * tool reaches it directly).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type CallClient, type KeyedRequest, type ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { fixture, makeRegistry } from './helpers.js';
import { rawCall } from './mcp-raw-2026.js';

type Seen = { key: string; kind: string; action?: string; content?: unknown; model?: string; text?: string | null; roots?: Array<{ uri: string; name: string | null }> };
type Round = { answers?: Seen[]; refused?: { code: string; message: string; details: Record<string, unknown> | null } };
type RequestSpec = { key: string; kind: 'elicitation' | 'sampling' | 'roots'; message?: string; pad?: number; maxTokens?: number };

/** A caller that answers every kind, one request at a time, and remembers what it was asked. */
function answeringClient(asked: string[]): CallClient {
  return {
    sample: async (request) => {
      asked.push(`sampling:${(request.messages[0]!.content as { text: string }).text.slice(0, 20)}`);
      return { role: 'assistant', content: { type: 'text', text: 'Hello!' }, model: 'test-model' };
    },
    elicit: async (request) => {
      asked.push(`elicitation:${request.message.slice(0, 20)}`);
      return { action: 'accept', content: { name: 'Ada' } };
    },
    listRoots: async () => {
      asked.push('roots');
      return { roots: [{ uri: 'file:///work', name: 'Work' }, { uri: 'file:///tmp' }] };
    },
  };
}

const THREE: RequestSpec[] = [
  { key: 'user_name', kind: 'elicitation' },
  { key: 'greeting', kind: 'sampling', message: 'Generate a greeting' },
  { key: 'client_roots', kind: 'roots' },
];

describe.each(['thread', 'process'] as const)('a sandboxed guest\'s rounds (world 0.3.0 `ask`), %s containment', (containment) => {
  let registry: ToolRegistry;
  beforeAll(async () => {
    registry = makeRegistry({ clientRequestBytes: 8 * 1024, sandbox: { containment } });
    await registry.registerWasmTools(fixture('keyed_rounds'), { grant: { sampling: { maxRequests: 2, maxTokens: 100 }, elicitation: { maxRequests: 1 }, roots: { maxRequests: 1 } } });
  }, 120_000);
  afterAll(async () => {
    await registry?.close();
  });

  async function rounds(specs: RequestSpec[][], client: CallClient): Promise<Round[]> {
    const result = await registry.execute('rounds', { rounds: specs }, { client });
    expect(result.error).toBeUndefined();
    return (result.structuredContent as { rounds: Round[] }).rounds;
  }

  it('asks three kinds in one round through the caller\'s hooks and gets the answers in the round\'s order, under its keys', async () => {
    const asked: string[] = [];
    const [round] = await rounds([THREE], answeringClient(asked));
    expect(round!.answers).toEqual([
      { key: 'user_name', kind: 'elicitation', action: 'accept', content: { name: 'Ada' } },
      { key: 'greeting', kind: 'sampling', model: 'test-model', text: 'Hello!' },
      { key: 'client_roots', kind: 'roots', roots: [{ uri: 'file:///work', name: 'Work' }, { uri: 'file:///tmp', name: null }] },
    ]);
    expect(asked.sort()).toEqual(['elicitation:Your name?', 'roots', 'sampling:Generate a greeting']);
  });

  it('hands a caller that takes rounds the whole round at once, in MCP shapes under the tool\'s keys', async () => {
    let received: readonly KeyedRequest[] = [];
    const client: CallClient = {
      ...answeringClient([]),
      ask: async (requests) => {
        received = requests;
        return {
          client_roots: { roots: [] },
          user_name: { action: 'decline' },
          greeting: { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm' },
        };
      },
    };
    const [round] = await rounds([THREE], client);
    expect(received.map((request) => [request.key, request.method])).toEqual([['user_name', 'elicitation/create'], ['greeting', 'sampling/createMessage'], ['client_roots', 'roots/list']]);
    expect(received[0]!.params).toEqual({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } });
    expect(received[1]!.params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 16 });
    expect(received[2]!.params).toEqual({});
    expect(round!.answers).toEqual([
      { key: 'user_name', kind: 'elicitation', action: 'decline', content: null },
      { key: 'greeting', kind: 'sampling', model: 'm', text: 'Hi' },
      { key: 'client_roots', kind: 'roots', roots: [] },
    ]);
  });

  it('refuses the key __proto__ (JSON readers make it a prototype), and takes other inherited names as any key', async () => {
    const [proto] = await rounds([[{ key: '__proto__', kind: 'roots' }]], answeringClient([]));
    expect(proto!.refused).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('other than __proto__') });
    const client: CallClient = { ...answeringClient([]), ask: async () => JSON.parse('{"constructor":{"action":"decline"},"toString":{"roots":[{"uri":"file:///p"}]}}') as Record<string, never> };
    const [round] = await rounds([[{ key: 'toString', kind: 'roots' }, { key: 'constructor', kind: 'elicitation' }]], client);
    expect(round!.answers).toEqual([
      { key: 'toString', kind: 'roots', roots: [{ uri: 'file:///p', name: null }] },
      { key: 'constructor', kind: 'elicitation', action: 'decline', content: null },
    ]);
    // A caller that does not answer them: the round fails, it is not answered by what every object inherits.
    const silent: CallClient = { ...answeringClient([]), ask: async () => ({}) };
    const [unanswered] = await rounds([[{ key: 'constructor', kind: 'elicitation' }]], silent);
    expect(unanswered!.refused).toMatchObject({ code: 'TOOL_ERROR', message: expect.stringContaining('"constructor"') });
  });

  it('refuses malformed rounds whole with INVALID_INPUT, asking nothing', async () => {
    const asked: string[] = [];
    const refused = await rounds([
      [],
      [{ key: 'has space', kind: 'elicitation' }],
      [{ key: '', kind: 'roots' }],
      [{ key: 'k'.repeat(65), kind: 'roots' }],
      [{ key: 'twice', kind: 'roots' }, { key: 'twice', kind: 'elicitation' }],
    ], answeringClient(asked));
    for (const round of refused) expect(round.refused).toMatchObject({ code: 'INVALID_INPUT' });
    expect(refused[1]!.refused!.message).toContain('[A-Za-z0-9_.-]');
    expect(refused[4]!.refused!.message).toContain('"twice" twice');
    expect(asked).toEqual([]);
  });

  it('refuses a round past a kind\'s requests whole, and the refused round spends none of the grant', async () => {
    const asked: string[] = [];
    const [over, next] = await rounds([
      // elicitation's grant allows 1 a call: two in a round are refused, and neither is asked
      [{ key: 'a', kind: 'elicitation' }, { key: 'b', kind: 'elicitation' }, { key: 'r', kind: 'roots' }],
      // so the roots and the elicitation are both still there to ask
      [{ key: 'a', kind: 'elicitation' }, { key: 'r', kind: 'roots' }],
    ], answeringClient(asked));
    expect(over!.refused).toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'elicitation', limit: 'elicitation_requests_per_call', maxRequests: 1 } });
    expect(next!.answers!.map((answer) => answer.key)).toEqual(['a', 'r']);
    expect(asked.sort()).toEqual(['elicitation:Your name?', 'roots']);
  });

  it('refuses a round the caller cannot answer all of (CLIENT_UNSUPPORTED, naming the kind) and one over its tokens', async () => {
    const { listRoots: _, ...noRoots } = answeringClient([]);
    const [unsupported] = await rounds([[{ key: 'n', kind: 'elicitation' }, { key: 'r', kind: 'roots' }]], noRoots);
    expect(unsupported!.refused).toMatchObject({ code: 'CLIENT_UNSUPPORTED', details: { reason: 'roots' } });
    const [tokens] = await rounds([[{ key: 's', kind: 'sampling', maxTokens: 101 }]], answeringClient([]));
    expect(tokens!.refused).toMatchObject({ code: 'PERMISSION_DENIED', details: { limit: 'sampling_max_tokens', maxTokens: 100 } });
  });

  it('refuses a round over client_request_bytes (the round is held to it as one request)', async () => {
    const asked: string[] = [];
    const [big] = await rounds([[{ key: 'a', kind: 'sampling', pad: 5000 }, { key: 'b', kind: 'sampling', pad: 5000 }]], answeringClient(asked));
    expect(big!.refused).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { limit: 'client_request_bytes', max: 8192 } });
    expect(asked).toEqual([]);
  });

  it('refuses roots without grant.roots', async () => {
    const bare = makeRegistry({ sandbox: { containment } });
    try {
      await bare.registerWasmTools(fixture('keyed_rounds'), { grant: { elicitation: {} } });
      const result = await bare.execute('rounds', { rounds: [[{ key: 'r', kind: 'roots' }]] }, { client: answeringClient([]) });
      expect((result.structuredContent as { rounds: Round[] }).rounds[0]!.refused).toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('grant.roots'), details: { reason: 'roots' } });
    } finally {
      await bare.close();
    }
  }, 60_000);
});

describe('a native tool\'s rounds (ctx.client.ask), checked by the gate alone', () => {
  let registry: ToolRegistry;
  beforeAll(() => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'native_rounds',
      description: 'Asks the round its arguments give, as they are.',
      inputSchema: { type: 'object', properties: { requests: { type: 'array' } }, required: ['requests'] },
      grant: { elicitation: { maxRequests: 2 }, roots: {} },
      async run(args, ctx) {
        try {
          return { answers: await ctx.client.ask((args as { requests: KeyedRequest[] }).requests) };
        } catch (error) {
          return { refused: (error as { code: string }).code, message: (error as Error).message };
        }
      },
    }) as ReturnType<typeof defineNativeTool>);
  });
  afterAll(async () => {
    await registry?.close();
  });

  const elicitation = (key: string): KeyedRequest => ({ key, method: 'elicitation/create', params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } });

  it('answers a round of the kinds its grant allows, by key', async () => {
    const result = await registry.execute('native_rounds', { requests: [elicitation('who'), { key: 'where', method: 'roots/list', params: {} }] }, { client: answeringClient([]) });
    expect(result.structuredContent).toEqual({ answers: { who: { action: 'accept', content: { name: 'Ada' } }, where: { roots: [{ uri: 'file:///work', name: 'Work' }, { uri: 'file:///tmp' }] } } });
  });

  it('refuses repeated and malformed keys, unknown methods, ungranted kinds and malformed requests', async () => {
    const refusal = async (requests: unknown[]): Promise<unknown> => (await registry.execute('native_rounds', { requests }, { client: answeringClient([]) })).structuredContent;
    expect(await refusal([elicitation('a'), elicitation('a')])).toMatchObject({ refused: 'INVALID_INPUT', message: expect.stringContaining('twice') });
    expect(await refusal([elicitation('a b')])).toMatchObject({ refused: 'INVALID_INPUT' });
    expect(await refusal([{ key: 'x', method: 'tools/call', params: {} }])).toMatchObject({ refused: 'INVALID_INPUT', message: expect.stringContaining('unknown kind') });
    expect(await refusal([{ key: 's', method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } }])).toMatchObject({ refused: 'PERMISSION_DENIED', message: expect.stringContaining('grant.sampling') });
    expect(await refusal([{ key: 'e', method: 'elicitation/create', params: { message: 'm', requestedSchema: { type: 'object', properties: { deep: { type: 'object' } } } } }])).toMatchObject({ refused: 'INVALID_INPUT' });
    expect(await refusal([])).toMatchObject({ refused: 'INVALID_INPUT' });
  });

  it('a round refused by the gate spends none of the grant: the same requests in a smaller round are asked', async () => {
    const asked: string[] = [];
    const client = answeringClient(asked);
    const malformed = { key: 'bad', method: 'elicitation/create', params: { message: 'm', requestedSchema: { type: 'object', properties: { deep: { type: 'object' } } } } };
    const over = await registry.execute('native_rounds', { requests: [elicitation('a'), elicitation('b'), elicitation('c')] }, { client });
    expect(over.structuredContent).toMatchObject({ refused: 'PERMISSION_DENIED', message: expect.stringContaining('more elicitation requests than the call has left') });
    // (one call: a native tool's rounds share the call's counts)
    registry.register(defineNativeTool({
      name: 'native_two_rounds',
      description: 'Asks a malformed round, then a fitting one.',
      inputSchema: { type: 'object' },
      grant: { elicitation: { maxRequests: 2 } },
      async run(_args, ctx) {
        const first = await ctx.client.ask([elicitation('a') as KeyedRequest, malformed as unknown as KeyedRequest]).then(() => 'asked', (error: { code: string }) => error.code);
        const second = await ctx.client.ask([elicitation('a'), elicitation('b')]);
        return { first, second: Object.keys(second) };
      },
    }) as ReturnType<typeof defineNativeTool>);
    const two = await registry.execute('native_two_rounds', {}, { client });
    expect(two.structuredContent).toEqual({ first: 'INVALID_INPUT', second: ['a', 'b'] });
    expect(asked).toEqual(['elicitation:Your name?', 'elicitation:Your name?']);
  });

  it('a caller that leaves a key unanswered fails the round (TOOL_ERROR), and extra keys are not passed on', async () => {
    const partial: CallClient = { ...answeringClient([]), ask: async () => ({ who: { action: 'cancel' }, stray: { action: 'accept' } }) };
    const missing = await registry.execute('native_rounds', { requests: [elicitation('who'), elicitation('other')] }, { client: partial });
    expect(missing.structuredContent).toMatchObject({ refused: 'TOOL_ERROR', message: expect.stringContaining('"other"') });
    const extra = await registry.execute('native_rounds', { requests: [elicitation('who')] }, { client: partial });
    expect(extra.structuredContent).toEqual({ answers: { who: { action: 'cancel' } } });
  });
});

describe('a round over MCP 2026-07-28 (input-required), keys as the tool names them', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { threads: 2 } });
    await registry.registerWasmTools(fixture('keyed_rounds'), { grant: { elicitation: { maxRequests: 2 }, roots: {} } });
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await registry?.close();
  });

  const capabilities = { _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, roots: {} } } };

  it('asks under keys that name Object.prototype\'s members, and takes only answers given under them', async () => {
    const round = [{ key: 'toString', kind: 'roots' }, { key: 'constructor', kind: 'elicitation' }];
    const first = await rawCall(server.url, { params: { name: 'rounds', arguments: { rounds: [round] }, ...capabilities } });
    expect(first.resultType).toBe('input_required');
    expect(Object.keys(first.inputRequests as object).sort()).toEqual(['constructor', 'toString']);
    // A retry that answers nothing: every object inherits these names, and still both are asked again.
    const again = await rawCall(server.url, { params: { name: 'rounds', arguments: { rounds: [round] }, requestState: first.requestState, inputResponses: {}, ...capabilities } });
    expect(Object.keys(again.inputRequests as object).sort()).toEqual(['constructor', 'toString']);
    const answers = { toString: { roots: [{ uri: 'file:///p' }] }, constructor: { action: 'accept', content: { name: 'Ada' } } };
    const done = await rawCall(server.url, { params: { name: 'rounds', arguments: { rounds: [round] }, requestState: again.requestState, inputResponses: answers, ...capabilities } });
    expect(done.structuredContent).toEqual({ rounds: [{ answers: [
      { key: 'toString', kind: 'roots', roots: [{ uri: 'file:///p', name: null }] },
      { key: 'constructor', kind: 'elicitation', action: 'accept', content: { name: 'Ada' } },
    ] }] });
  });
});
