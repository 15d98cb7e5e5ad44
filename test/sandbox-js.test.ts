import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { collect, example, fixture, makeRegistry, terminalCount, types } from './helpers.js';

describe('JavaScript tools (componentize-js) in the sandbox pool', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools([example('text'), example('json'), fixture('noisy')]);
  });
  afterAll(async () => {
    await registry.close();
  });

  it('streams word_count\'s progress and deltas before its one result', async () => {
    const text = 'lorem ipsum dolor '.repeat(1000);
    const events = await collect(registry.stream('word_count', { text }));
    const kinds = types(events);
    expect(kinds[0]).toBe('start');
    expect(kinds.at(-1)).toBe('result');
    expect(terminalCount(events)).toBe(1);
    expect(kinds.filter((kind) => kind === 'progress').length).toBeGreaterThan(1);
    expect(kinds.filter((kind) => kind === 'delta').length).toBeGreaterThan(1);
    expect(events.at(-1)).toMatchObject({ data: { words: 3000 } });
    const percents = events.flatMap((event) => (event.type === 'progress' && event.pct !== undefined ? [event.pct] : []));
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
  });

  it('keeps a running total in conversation state, separately per conversation', async () => {
    const a1 = await registry.execute('word_count', { text: 'one two three' }, { conversationId: 'js-a' });
    const a2 = await registry.execute('word_count', { text: 'four five' }, { conversationId: 'js-a' });
    const b1 = await registry.execute('word_count', { text: 'six' }, { conversationId: 'js-b' });
    expect(a1.structuredContent).toMatchObject({ conversation_total_words: 3 });
    expect(a2.structuredContent).toMatchObject({ conversation_total_words: 5 });
    expect(b1.structuredContent).toMatchObject({ conversation_total_words: 1 });
  });

  it('answers regex_search and json_query', async () => {
    const search = await registry.execute('regex_search', { pattern: 'b(\\w)', text: 'abc abd' });
    expect(search.structuredContent).toMatchObject({ count: 2, matches: [{ match: 'bc', index: 1, groups: ['c'] }, { match: 'bd', index: 5, groups: ['d'] }] });
    const query = await registry.execute('json_query', { document: { a: [{ b: 1 }, { b: 2 }] }, path: '$.a[*].b' });
    expect(query.structuredContent).toEqual({ matches: [1, 2], count: 2 });
  });

  it('returns a guest tool-error as TOOL_ERROR with the guest\'s code', async () => {
    const result = await registry.execute('regex_search', { pattern: '(', text: 'x' });
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'INVALID_PATTERN' } });
  });

  it('gives every call a fresh instance, so module globals start over', async () => {
    const counts: unknown[] = [];
    for (let i = 0; i < 3; i += 1) counts.push((await registry.execute('global_counter', {})).structuredContent);
    expect(counts).toEqual([{ count: 1 }, { count: 1 }, { count: 1 }]);
  });
});
