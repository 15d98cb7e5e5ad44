// Runs the built component through the real toolhost host: `npm run build` first (`npm test` does).
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry, silentLogger } from 'toolhost';

const component = fileURLToPath(new URL('../dist/{{name}}.wasm', import.meta.url));
const registry = createRegistry({ logger: silentLogger, sandbox: { threads: 1 } });

beforeAll(async () => {
  await registry.registerWasmTools(component);
}, 120_000);
afterAll(() => registry.close());

async function events(args, conversationId) {
  const all = [];
  for await (const event of registry.stream('{{tool}}', args, { conversationId })) all.push(event);
  return all;
}

describe('{{tool}}', () => {
  it('streams a delta and progress per greeting, then one result', async () => {
    const all = await events({ name: 'Ada', times: 2 }, 'conversation-1');
    expect(all.filter((event) => event.type === 'delta').map((event) => event.data)).toEqual([
      { greeting: 'Hello, Ada!', n: 1 },
      { greeting: 'Hello, Ada!', n: 2 },
    ]);
    expect(all.filter((event) => event.type === 'progress').map((event) => event.pct)).toEqual([50, 100]);
    expect(all.at(-1)).toMatchObject({ type: 'result', data: { greetings: ['Hello, Ada!', 'Hello, Ada!'], total: 2 } });
  }, 60_000);

  it('counts the greetings of each conversation in its state', async () => {
    await registry.execute('{{tool}}', { name: 'Grace' }, { conversationId: 'conversation-2' });
    const second = await registry.execute('{{tool}}', { name: 'Grace', times: 3 }, { conversationId: 'conversation-2' });
    expect(second.structuredContent).toMatchObject({ total: 4 });
  }, 60_000);

  it('refuses arguments that do not fit its input schema, before it runs', async () => {
    await expect(registry.execute('{{tool}}', { name: 'Ada', times: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  }, 60_000);

  it('reports a failure of its own as TOOL_ERROR', async () => {
    const result = await registry.execute('{{tool}}', { name: '  ' });
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'EMPTY_NAME' } });
  }, 60_000);
});
