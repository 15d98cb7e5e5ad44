import { afterEach, describe, expect, it } from 'vitest';
import {
  ToolRegistry,
  Extensions,
  defineNativeTool,
  extensionKey,
  richResult,
  silentLogger,
  toolError,
  ToolhostError,
  type StateStore,
} from '../host/index.js';
import { collect, terminalCount, types } from './helpers.js';

const greet = defineNativeTool({
  name: 'greet',
  description: 'Greets someone, streaming its progress.',
  inputSchema: {
    type: 'object',
    properties: { who: { type: 'string', minLength: 1 }, times: { type: 'integer', minimum: 1 } },
    required: ['who'],
    additionalProperties: false,
  },
  idempotent: true,
  streaming: true,
  async run(args, ctx, events) {
    const { who } = args as { who: string };
    events.progress(50, 'halfway');
    events.delta({ partial: `Hello, ${who.slice(0, 1)}` });
    events.log('info', 'greeting');
    const count = (await ctx.getState('greetings', 0)) + 1;
    await ctx.setState('greetings', count);
    return { greeting: `Hello, ${who}!`, count };
  },
});

const failing = defineNativeTool({
  name: 'failing',
  description: 'Always reports its own error.',
  inputSchema: { type: 'object' },
  run() {
    throw toolError('QUOTA', 'quota used up', { remaining: 0 });
  },
});

let registry: ToolRegistry;
afterEach(async () => {
  await registry.close();
});

function makeRegistry(store?: StateStore): ToolRegistry {
  registry = new ToolRegistry({ logger: silentLogger, ...(store ? { stateStore: store } : {}) });
  registry.register(greet);
  registry.register(failing);
  return registry;
}

describe('a native tool through the call path', () => {
  it('streams start, progress, delta, log and exactly one terminal result, in order', async () => {
    makeRegistry();
    const events = await collect(registry.stream('greet', { who: 'Ada' }, { callId: 'call-1' }));
    expect(types(events)).toEqual(['start', 'progress', 'delta', 'log', 'result']);
    expect(terminalCount(events)).toBe(1);
    expect(events.every((event) => event.callId === 'call-1')).toBe(true);
    const result = events.at(-1);
    expect(result).toMatchObject({ type: 'result', data: { greeting: 'Hello, Ada!', count: 1 } });
    expect(events[0]).toMatchObject({ type: 'start', toolId: 'greet', metadata: { executionMode: 'native' } });
  });

  it('rejects unknown tools with TOOL_NOT_FOUND and suggests close names', async () => {
    makeRegistry();
    await expect(registry.execute('gret', {})).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    const events = await collect(registry.stream('namespace.greet', {}));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'error', code: 'TOOL_NOT_FOUND', stage: 'rejected' });
  });

  it('rejects invalid input with INVALID_INPUT naming the failing path, before the tool runs', async () => {
    makeRegistry();
    const error = await registry.execute('greet', { who: 'x', times: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolhostError);
    expect(error).toMatchObject({ code: 'INVALID_INPUT' });
    expect((error as ToolhostError).message).toContain('args/times');
    expect((error as ToolhostError).details).toMatchObject({ errors: [expect.objectContaining({ path: '/times', keyword: 'minimum' })] });
  });

  it('turns a tool\'s own error into TOOL_ERROR and keeps its code in details', async () => {
    makeRegistry();
    const result = await registry.execute('failing', {});
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'quota used up', details: { code: 'QUOTA', details: { remaining: 0 } } });
  });

  it('turns an unexpected exception into TOOL_CRASHED and keeps serving', async () => {
    makeRegistry();
    registry.register(defineNativeTool({ name: 'throws', description: 'x', inputSchema: {}, run() { throw new Error('boom'); } }));
    const result = await registry.execute('throws', {});
    expect(result.error).toMatchObject({ code: 'TOOL_CRASHED' });
    expect(result.error?.message).toContain('boom');
    expect((await registry.execute('greet', { who: 'B' })).isError).toBe(false);
  });

  it('returns content blocks, images included, from richResult', async () => {
    makeRegistry();
    registry.register(defineNativeTool({
      name: 'picture',
      description: 'A tiny picture.',
      inputSchema: { type: 'object' },
      run: () => richResult([{ type: 'text', text: 'a pixel' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }], { width: 1 }),
    }));
    const result = await registry.execute('picture', {});
    expect(result.content).toEqual([{ type: 'text', text: 'a pixel' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }]);
    expect(result.structuredContent).toEqual({ width: 1 });
  });
});

describe('conversation state', () => {
  it('is shared by calls of one conversation and invisible to another', async () => {
    makeRegistry();
    await registry.execute('greet', { who: 'A' }, { conversationId: 'c1' });
    const second = await registry.execute('greet', { who: 'A' }, { conversationId: 'c1' });
    const other = await registry.execute('greet', { who: 'A' }, { conversationId: 'c2' });
    const none = await registry.execute('greet', { who: 'A' });
    expect(second.structuredContent).toMatchObject({ count: 2 });
    expect(other.structuredContent).toMatchObject({ count: 1 });
    expect(none.structuredContent).toMatchObject({ count: 1 });
  });

  it('getState returns the default when the store fails, and setState reports a structured error', async () => {
    const broken: StateStore = {
      get: () => Promise.reject(new Error('store down')),
      set: () => Promise.reject(new Error('store down')),
      delete: () => Promise.reject(new Error('store down')),
    };
    makeRegistry(broken);
    registry.register(defineNativeTool({
      name: 'stateful',
      description: 'Reads then writes state.',
      inputSchema: {},
      async run(_args, ctx) {
        const before = await ctx.getState('k', 'fallback');
        const error = await ctx.setState('k', 1).catch((e: unknown) => e);
        return { before, code: (error as ToolhostError).code, message: (error as ToolhostError).message };
      },
    }));
    const result = await registry.execute('stateful', {}, { conversationId: 'c' });
    expect(result.structuredContent).toEqual({ before: 'fallback', code: 'INTERNAL', message: expect.stringContaining('store down') });
  });
});

describe('the registry', () => {
  it('lists definitions in toolhost, MCP, OpenAI and Anthropic shapes', () => {
    makeRegistry();
    expect(registry.names()).toEqual(['failing', 'greet']);
    const [, mcp] = registry.definitions('mcp');
    expect(mcp).toMatchObject({ name: 'greet', inputSchema: { type: 'object' }, annotations: { idempotentHint: true } });
    expect(registry.definitions('openai')[1]).toMatchObject({ type: 'function', function: { name: 'greet', parameters: { type: 'object' } } });
    expect(registry.definitions('anthropic')[1]).toMatchObject({ name: 'greet', input_schema: { type: 'object' } });
  });

  it('refuses a schema that does not compile, a bad name and a duplicate name', () => {
    makeRegistry();
    const bad = defineNativeTool({ name: 'bad', description: '', inputSchema: { type: 'no-such-type' }, run: () => null });
    expect(() => registry.register(bad)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => registry.register({ ...greet, name: 'has space' })).toThrow(/must match/);
    expect(() => registry.register(greet)).toThrow(/already registered/);
  });

  it('unregisters and retains tools', () => {
    makeRegistry();
    expect(registry.retain((tool) => tool.name !== 'failing')).toEqual(['failing']);
    expect(registry.unregister('greet')).toBe(true);
    expect(registry.names()).toEqual([]);
  });

  it('hands typed extensions to native tools without serialization', async () => {
    makeRegistry();
    class Database {
      query(): string {
        return 'rows';
      }
    }
    const tenant = extensionKey<{ id: string }>('tenant');
    registry.register(defineNativeTool({
      name: 'uses_extensions',
      description: 'x',
      inputSchema: {},
      run: (_args, ctx) => ({ rows: ctx.extensions.require(Database).query(), tenant: ctx.extensions.get(tenant)?.id }),
    }));
    const extensions = new Extensions().set(Database, new Database()).set(tenant, { id: 't1' });
    const result = await registry.execute('uses_extensions', {}, { extensions });
    expect(result.structuredContent).toEqual({ rows: 'rows', tenant: 't1' });
  });

  it('ends a native call that outlives its timeout with TOOL_TIMEOUT', async () => {
    makeRegistry();
    registry.register(defineNativeTool({ name: 'slow', description: 'x', inputSchema: {}, run: () => new Promise(() => {}) }));
    const result = await registry.execute('slow', {}, { policy: { timeout: '0.05s' } });
    expect(result.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
  });
});

describe('the structured log', () => {
  it('gets one line per finished call with its outcome and accounting', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = {
      trace() {}, debug() {}, warn() {}, error() {},
      info(obj: Record<string, unknown>, msg?: string) {
        lines.push({ ...obj, msg });
      },
      child() {
        return logger;
      },
    };
    registry = new ToolRegistry({ logger });
    registry.register(greet);
    registry.register(failing);
    await registry.execute('greet', { who: 'Z' }, { callId: 'logged-1' });
    await registry.execute('failing', {}, { callId: 'logged-2' });
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'call finished', callId: 'logged-1', tool: 'greet', outcome: 'ok', attempts: 1, wallMs: expect.any(Number) }),
      expect.objectContaining({ msg: 'call finished', callId: 'logged-2', tool: 'failing', outcome: 'TOOL_ERROR' }),
    ]);
  });
});
