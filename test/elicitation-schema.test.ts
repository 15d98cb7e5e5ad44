/**
 * A guest's elicitation schema is MCP's flat subset, or it is refused before it leaves the worker: the MCP SDK
 * checks the client's answer against that schema with ajv on the main thread, so a guest's `pattern`, `$ref` or
 * `allOf` there would be guest-shaped work on the main thread (issue 36, M2's last door). The control: MCP's
 * primitive schemas (strings with formats, numbers, booleans, enums, titled options, multi-select) still pass, and
 * an honest guest's question still reaches the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { elicitationSchemaProblem } from '../host/core/elicitation-schema.js';
import type { ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const flat = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown => ({ type: 'object', properties, ...extra });

describe('an elicitation schema', () => {
  it('is accepted when it is MCP\'s flat subset of primitive schemas (control)', () => {
    expect(elicitationSchemaProblem(flat({
      name: { type: 'string', title: 'Name', minLength: 1, maxLength: 80 },
      email: { type: 'string', format: 'email' },
      age: { type: 'integer', minimum: 0, maximum: 150, default: 30 },
      score: { type: 'number' },
      ok: { type: 'boolean', default: false },
      color: { type: 'string', enum: ['red', 'green'], enumNames: ['Red', 'Green'] },
      size: { type: 'string', oneOf: [{ const: 's', title: 'Small' }, { const: 'l', title: 'Large' }] },
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1, maxItems: 2, default: ['a'] },
      picks: { type: 'array', items: { anyOf: [{ const: 'x', title: 'X' }] } },
    }, { $schema: 'https://json-schema.org/draft/2020-12/schema', required: ['name'], title: 'Who', description: 'About you' }))).toBeUndefined();
  });

  it('is refused when it carries a pattern, a $ref, a combinator or a nested object, wherever they sit', () => {
    const refused: unknown[] = [
      flat({ name: { type: 'string', pattern: '^(a+)+$' } }),
      flat({ name: { $ref: '#/$defs/x' } }, { $defs: { x: { type: 'string' } } }),
      flat({ name: { type: 'string' } }, { allOf: [{ required: ['name'] }] }),
      flat({ name: { type: 'object', properties: {} } }),
      flat({ name: { type: 'string', oneOf: [{ const: 'a', pattern: 'x' }] } }),
      flat({ tags: { type: 'array', items: { type: 'string', pattern: 'x' } } }),
      flat({ tags: { type: 'array', items: { $dynamicRef: '#x' } } }),
      flat({ when: { type: 'string', format: 'regex' } }),
      flat({ name: { type: 'string' } }, { patternProperties: { '^x': { type: 'string' } } }),
      flat({}, { x: 'an unknown keyword at the top' }),
      { type: 'array', items: {} },
      'not an object',
    ];
    for (const schema of refused) expect(elicitationSchemaProblem(schema), JSON.stringify(schema)).toBeTypeOf('string');
  });

  it('names what is wrong, briefly', () => {
    expect(elicitationSchemaProblem(flat({ name: { type: 'string', pattern: 'x' } }))).toMatch(/may not use "pattern"/);
    expect(elicitationSchemaProblem(flat({ ['k'.repeat(10_000)]: { type: 'string', pattern: 'x' } }))!.length).toBeLessThan(300);
  });
});

describe.skipIf(!hasCGuests)('a guest\'s elicitation outside the subset', () => {
  let registry: ToolRegistry;
  const questions: unknown[] = [];
  const client = {
    elicit: async (request: unknown) => {
      questions.push(request);
      return { action: 'accept' as const, content: { name: 'Ada' } };
    },
  };

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 30_000 } });
    const grant = { elicitation: { maxRequests: 1 } };
    await registry.registerWasmTools(fixture('client_flood'), { grant });
    await registry.registerWasmTools(fixture('mcp_rich'), { grant });
  }, 60_000);
  afterAll(async () => {
    await registry?.close();
  });

  it('is refused with INVALID_INPUT in the worker, and the client is never asked', async () => {
    // client_flood's huge_elicit asks with a small schema holding an unknown top-level keyword.
    const result = await registry.execute('huge_elicit', { bytes: 100 }, { client });
    const error = (result.structuredContent as { error?: { code: string; message: string } }).error;
    expect(error).toMatchObject({ code: 'INVALID_INPUT' });
    expect(error!.message).toContain('"x"');
    expect(questions).toHaveLength(0);
  });

  it('reaches the client when it is the subset, and the answer reaches the guest (control)', async () => {
    const result = await registry.execute('ask_user', {}, { client });
    expect(result.structuredContent).toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(questions).toHaveLength(1);
  });
});
