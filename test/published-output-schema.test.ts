/**
 * Issue 36, M5: output schemas are published to clients without anything that carries a regex, wherever it
 * sits and whatever the dialect (a client matches patterns with its own, backtracking, engine: the SDK v2
 * client's validator took 2.7 s on 27 characters for a `pattern` under `prefixItems` the host had published).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishableSchema } from '../host/core/publishable-schema.js';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

/** Every `pattern`, `patternProperties` and `format: regex` anywhere in `value`. */
function regexBearing(value: unknown, path = ''): string[] {
  if (typeof value !== 'object' || value === null) return [];
  const found: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    if ((key === 'pattern' && typeof child === 'string') || key === 'patternProperties' || (key === 'format' && child === 'regex')) found.push(`${path}/${key}`);
    found.push(...regexBearing(child, `${path}/${key}`));
  }
  return found;
}

describe('published output schemas', () => {
  it('strip a pattern under prefixItems, under $defs and under an unknown keyword, and keep every other keyword', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, pattern: '^(a+)+$' },
        tuple: { type: 'array', prefixItems: [{ type: 'string', pattern: '^(a|aa)+$' }, { $ref: '#/$defs/word' }] },
        names: { type: 'object', propertyNames: { pattern: '^(a+)+$' }, patternProperties: { '^(a+)+$': { type: 'string' } }, additionalProperties: false },
        re: { type: 'string', format: 'regex' },
        when: { type: 'string', format: 'date-time' },
      },
      $defs: { word: { type: 'string', maxLength: 64, pattern: '^(\\w+\\s?)*$' } },
      'x-vendor': { deeper: [{ pattern: '(x+x+)+y' }] },
      required: ['text'],
    };
    const published = publishableSchema(schema) as typeof schema;
    expect(regexBearing(published)).toEqual([]);
    expect(published).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1 },
        tuple: { type: 'array', prefixItems: [{ type: 'string' }, { $ref: '#/$defs/word' }] },
        names: { type: 'object', propertyNames: {} },
        re: { type: 'string' },
        when: { type: 'string', format: 'date-time' },
      },
      $defs: { word: { type: 'string', maxLength: 64 } },
      'x-vendor': { deeper: [{}] },
      required: ['text'],
    });
    // The tool's own schema is untouched: the host's checks use it.
    expect(schema.properties.text.pattern).toBe('^(a+)+$');
  });

  it('keep a member that is merely called "pattern", and return a schema without regexes as it is', () => {
    const schema = { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] };
    expect(publishableSchema(schema)).toBe(schema);
  });

  it('walk shared objects and cycles once, in time linear in the schema', () => {
    const shared = { type: 'string', pattern: '(a+)+$' };
    const cyclic: Record<string, unknown> = { allOf: [shared, shared] };
    cyclic.self = cyclic;
    const published = publishableSchema(cyclic) as { allOf: Array<Record<string, unknown>>; self: unknown };
    expect(published.allOf[0]).toEqual({ type: 'string' });
    expect(published.allOf[0]).toBe(published.allOf[1]);
    expect(published.self).toBe(published);
    // A DAG of depth 40 (2^40 paths) is 80 objects to walk.
    let node: Record<string, unknown> = { type: 'string', pattern: 'x' };
    for (let i = 0; i < 40; i++) node = { anyOf: [node, node] };
    const started = performance.now();
    let leaf = publishableSchema(node) as Record<string, unknown>;
    expect(performance.now() - started).toBeLessThan(1_000);
    for (let i = 0; i < 40; i++) leaf = (leaf.anyOf as Array<Record<string, unknown>>)[1]!;
    expect(leaf).toEqual({ type: 'string' });
  });

  it('of a native tool are stripped the same way, and the tool keeps its patterns', () => {
    const registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'native_out',
      description: 'Returns a tuple.',
      inputSchema: { type: 'object' },
      outputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { t: { type: 'array', prefixItems: [{ type: 'string', pattern: '^(a+)+$' }] } } },
      run: () => ({ t: ['a'] }),
    }));
    const definition = registry.definitions().find((d) => d.name === 'native_out');
    expect(regexBearing(definition?.outputSchema)).toEqual([]);
    expect(definition?.outputSchema).toMatchObject({ properties: { t: { prefixItems: [{ type: 'string' }] } } });
    expect(regexBearing(registry.get('native_out')?.outputSchema)).toEqual(['/properties/t/prefixItems/0/pattern']);
    return registry.close();
  });
});

describe.runIf(hasCGuests)('a guest\'s published output schema', () => {
  let registry: ToolRegistry;
  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('schema_bomb'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('carries no pattern under prefixItems, $defs or an unknown keyword, and keeps the rest', () => {
    const definition = registry.definitions().find((d) => d.name === 'plain');
    expect(regexBearing(definition?.outputSchema)).toEqual([]);
    expect(definition?.outputSchema).toMatchObject({
      properties: { text: { type: 'string', minLength: 1 }, tuple: { prefixItems: [{ type: 'string' }, { $ref: '#/$defs/word' }] } },
      $defs: { word: { type: 'string', maxLength: 64 } },
      required: ['text'],
    });
  });
});
