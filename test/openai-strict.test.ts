/**
 * `definitions('openai', { strict: true })` (issue 29): OpenAI Agents could not make `echo`, `http_get` and
 * `js_echo` strict and fell back silently. Tools whose schema has a strict form get it (every object closed,
 * every property required) with `strict: true`, and the host still accepts what a strict model sends; tools
 * whose schema has none (free-form objects, maps, optional properties that refuse null, keywords strict mode
 * lacks) keep their schema with `strict: false`, and `onNotStrict` says which and why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type { FunctionTool } from 'openai/resources/responses/responses';
import { defineNativeTool, toStrictSchema, type ToolRegistry } from '../host/index.js';
import { example, makeRegistry } from './helpers.js';

/** Strict mode's rules, checked recursively: what OpenAI refuses with "Invalid schema for function". */
function strictViolations(schema: unknown, path = '#'): string[] {
  if (typeof schema !== 'object' || schema === null) return [`${path}: not a schema object`];
  const record = schema as Record<string, unknown>;
  const out: string[] = [];
  for (const keyword of ['allOf', 'not', 'if', 'oneOf', 'patternProperties', 'minLength', 'maxLength', 'default', 'prefixItems']) {
    if (keyword in record) out.push(`${path}: ${keyword}`);
  }
  const types = Array.isArray(record.type) ? record.type : [record.type];
  if (types.includes('object')) {
    const keys = Object.keys((record.properties ?? {}) as object);
    if (record.additionalProperties !== false) out.push(`${path}: additionalProperties must be false`);
    if (JSON.stringify([...((record.required ?? []) as string[])].sort()) !== JSON.stringify([...keys].sort())) out.push(`${path}: required must list every property`);
    for (const key of keys) out.push(...strictViolations((record.properties as Record<string, unknown>)[key], `${path}/properties/${key}`));
  }
  if (types.includes('array')) out.push(...strictViolations(record.items, `${path}/items`));
  if (Array.isArray(record.anyOf)) record.anyOf.forEach((branch, i) => out.push(...strictViolations(branch, `${path}/anyOf/${i}`)));
  return out;
}

describe('OpenAI strict definitions', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(example('text'));
    registry.register(defineNativeTool({ name: 'echo', description: 'Echoes any object.', inputSchema: { type: 'object' }, run: (args) => args }));
    registry.register(defineNativeTool({
      name: 'http_get',
      description: 'A URL and a map of headers.',
      inputSchema: { type: 'object', properties: { url: { type: 'string' }, headers: { type: 'object', additionalProperties: { type: 'string' } } }, required: ['url'], additionalProperties: false },
      run: () => ({}),
    }));
    registry.register(defineNativeTool({
      name: 'greet',
      description: 'Optional-but-nullable fields, a nested object, an array, a oneOf and keywords strict mode lacks.',
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 40 },
          title: { type: ['string', 'null'], default: null },
          tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
          where: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          mode: { oneOf: [{ const: 'short' }, { const: 'long' }] },
        },
        required: ['name', 'tags', 'where', 'mode'],
      },
      run: (args) => args,
    }));
  });
  afterAll(() => registry.close());

  it('makes strict what can be, and says which tools cannot be and why', () => {
    const refused = new Map<string, string>();
    const definitions = registry.definitions('openai', { strict: true, onNotStrict: (name, reason) => refused.set(name, reason) });
    const byName = new Map(definitions.map((definition) => [definition.function.name, definition.function]));
    for (const name of ['word_count', 'greet']) {
      expect(byName.get(name)?.strict, name).toBe(true);
      expect(strictViolations(byName.get(name)!.parameters), name).toEqual([]);
    }
    expect([...refused.keys()].sort()).toEqual(expect.arrayContaining(['echo', 'http_get', 'js_echo']));
    for (const name of ['echo', 'http_get', 'js_echo']) expect(byName.get(name)?.strict, name).toBe(false);
    expect(refused.get('echo')).toMatch(/free-form object/);
    expect(refused.get('http_get')).toMatch(/headers/);
    expect(refused.get('js_echo')).toMatch(/additionalProperties/);
    // Without the option nothing changes: no `strict` key at all for Chat Completions.
    expect(registry.definitions('openai').every((definition) => !('strict' in definition.function))).toBe(true);
    const responses = registry.definitions('openai-responses', { strict: true });
    expect(responses.find((definition) => definition.name === 'word_count')?.strict).toBe(true);
    // The shapes still assign to the SDK's types.
    const asSdk: ChatCompletionFunctionTool[] = definitions;
    const asResponses: FunctionTool[] = responses;
    expect(asSdk.length + asResponses.length).toBeGreaterThan(0);
  });

  it('accepts at the host what a strict model sends (every property, null for an absent nullable one)', async () => {
    const result = await registry.execute('greet', { name: 'Ada', title: null, tags: ['x'], where: { city: 'Paris' }, mode: 'short' });
    expect(result.isError, JSON.stringify(result.error)).toBe(false);
    const count = await registry.execute('word_count', { text: 'two words' });
    expect(count.isError).toBe(false);
  });

  it('refuses the keywords strict mode lacks, naming where', () => {
    expect(toStrictSchema({ type: 'object', properties: { a: { allOf: [{ type: 'string' }] } }, required: ['a'] })).toEqual({ strict: false, reason: expect.stringMatching(/#\/properties\/a: strict mode has no `allOf`/) });
    expect(toStrictSchema({ type: 'object', properties: { a: { type: 'integer' } } })).toEqual({ strict: false, reason: expect.stringMatching(/optional "a"/) });
    expect(toStrictSchema({ type: 'object', properties: { list: { type: 'array' } }, required: ['list'] })).toMatchObject({ strict: false, reason: expect.stringMatching(/no items schema/) });
  });
});
