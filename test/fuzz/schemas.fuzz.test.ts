/**
 * Fuzzing tool schemas of high reference fan-out (issue 30): a random graph of definitions whose allOf, anyOf,
 * not, properties and items point at one another, at any depth and sharing. Each one either fails registration
 * with a coded error in well under a second, or every call on it (arbitrary JSON args, deep arrays) ends with
 * exactly one terminal event, quickly. On 6d290f5 such graphs registered and cost 2^depth checks a call, or
 * overflowed the stack.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createRegistry, defineNativeTool, silentLogger, ToolhostError, type ToolEvent } from '../../host/index.js';
import type { JsonSchema } from '../../host/core/tool.js';
import { MemoryAuditLog } from '../../host/policy/memory-audit-log.js';
import { collect } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * RUNS));

/** One definition: which keywords point at which other definitions (by index). */
const definition = fc.record({
  keyword: fc.constantFrom('allOf', 'anyOf', 'oneOf', 'not', 'properties', 'items', 'additionalProperties', 'ref'),
  targets: fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 4 }),
  leaf: fc.constantFrom<Record<string, unknown>>({ type: 'object' }, { type: 'array', uniqueItems: true }, { minimum: 0 }, { pattern: '^(a+)+$' }, { enum: [1, 2, 3] }, {}),
});

function schemaOf(defs: Array<{ keyword: string; targets: number[]; leaf: Record<string, unknown> }>): JsonSchema {
  const ref = (i: number): { $ref: string } => ({ $ref: `#/definitions/d${i % defs.length}` });
  const definitions: Record<string, unknown> = {};
  defs.forEach(({ keyword, targets, leaf }, i) => {
    const refs = targets.map(ref);
    const body: Record<string, unknown> = { ...leaf };
    if (keyword === 'ref') Object.assign(body, refs[0]);
    else if (keyword === 'not') body.not = refs[0];
    else if (keyword === 'properties') body.properties = Object.fromEntries(refs.map((r, j) => [`p${j}`, r]));
    else if (keyword === 'items' || keyword === 'additionalProperties') body[keyword] = refs[0];
    else body[keyword] = refs;
    definitions[`d${i}`] = body;
  });
  return { definitions, $ref: '#/definitions/d0' } as JsonSchema;
}

function expectOneTerminal(events: ToolEvent[]): void {
  const terminals = events.filter((event) => event.type === 'result' || event.type === 'error');
  expect(terminals).toHaveLength(1);
  expect(events.at(-1)).toBe(terminals[0]);
  if (terminals[0]!.type === 'error') expect(terminals[0]!.code).not.toBe('INTERNAL');
}

describe('fuzzing schemas of high reference fan-out', () => {
  const registry = createRegistry({ logger: silentLogger, audit: new MemoryAuditLog() });
  afterAll(() => registry.close());
  let n = 0;

  it('a schema graph is refused with a code at registration, or every call on it ends once and quickly', async () => {
    const args = fc.oneof(fc.jsonValue({ maxDepth: 6 }), fc.nat({ max: 400 }).map((depth) => {
      let value: unknown = {};
      for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value, value] : { p0: value, p1: value };
      return value;
    }));
    await fc.assert(fc.asyncProperty(fc.array(definition, { minLength: 1, maxLength: 40 }), fc.array(args, { minLength: 1, maxLength: 3 }), async (defs, calls) => {
      const name = `fuzzed${n++}`;
      const started = performance.now();
      try {
        registry.register(defineNativeTool({ name, description: 'Fuzzed schema.', inputSchema: schemaOf(defs), run: () => ({ ok: true }) }));
      } catch (error) {
        expect(error).toBeInstanceOf(ToolhostError);
        expect(['COMPONENT_INVALID', 'INVALID_INPUT']).toContain((error as ToolhostError).code);
        expect(performance.now() - started).toBeLessThan(1000);
        return;
      }
      for (const value of calls) {
        const callStarted = performance.now();
        expectOneTerminal(await collect(registry.stream(name, value)));
        expect(performance.now() - callStarted).toBeLessThan(250);
      }
      registry.unregister(name);
    }), { numRuns: runs(200) });
  });
});
