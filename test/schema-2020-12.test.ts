/**
 * Input schemas that declare draft 2020-12 (MCP 2025-11-25's default dialect, SEP-1613) compile with
 * ajv's 2020-12 dialect: `$defs` with a `$ref` into them, `prefixItems`, `additionalProperties: false`
 * enforced; a schema without `$schema` keeps the default dialect. Seen through the registry's one call path.
 */
import { describe, expect, it } from 'vitest';
import { defineNativeTool } from '../host/index.js';
import { makeRegistry } from './helpers.js';

const schema2020 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } }, required: ['city'] } },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false },
  },
  additionalProperties: false,
};

describe('draft 2020-12 input schemas', () => {
  it('compile, validate $defs references and prefixItems, and refuse what the schema forbids', async () => {
    const registry = makeRegistry();
    try {
      registry.register(defineNativeTool({ name: 'where', description: 'Echoes.', inputSchema: schema2020, run: (args) => args }));
      const ok = await registry.execute('where', { name: 'Ada', address: { city: 'London' }, point: [1, 2] });
      expect(ok.isError).toBe(false);
      await expect(registry.execute('where', { address: { street: 'no city' } })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('city') as string });
      await expect(registry.execute('where', { point: [1, 2, 3] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(registry.execute('where', { extra: true })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(registry.definitions('mcp')[0]?.inputSchema).toMatchObject({ $schema: schema2020.$schema, $defs: schema2020.$defs, additionalProperties: false });
    } finally {
      await registry.close();
    }
  });

  it('leaves schemas without $schema to the default dialect, and refuses an invalid 2020-12 schema at registration', async () => {
    const registry = makeRegistry();
    try {
      registry.register(defineNativeTool({ name: 'plain', description: 'Echoes.', inputSchema: { type: 'object', definitions: { n: { type: 'number' } }, properties: { n: { $ref: '#/definitions/n' } } }, run: (args) => args }));
      await expect(registry.execute('plain', { n: 'x' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(() => registry.register(defineNativeTool({ name: 'bad', description: 'Bad.', inputSchema: { $schema: schema2020.$schema, type: 'object', prefixItems: 3 }, run: () => null }))).toThrow(/does not compile/);
    } finally {
      await registry.close();
    }
  });
});
