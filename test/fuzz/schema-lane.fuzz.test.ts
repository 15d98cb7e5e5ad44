/**
 * Fuzzing guest-shaped schemas off the main thread (issue 36, §10): random graphs over the JSON Schema 2020-12
 * vocabulary (`$defs`, `prefixItems`, `$dynamicRef`/`$dynamicAnchor`, `dependentSchemas`, `unevaluated*`, ...)
 * and draft-07's (`definitions`, tuple `items`, `additionalItems`, `dependencies`), nested, `$ref`-shared (a
 * DAG of definitions, up to 2^30 expansions) and dynamic, with arbitrary and deep args. Each is compiled and each args checked where untrusted schemas go
 * (the schema lane, core/schema-lane.ts, the same compiler a sandbox worker runs), while honest sandboxed
 * calls run beside: every check answers (valid, or a coded refusal), the honest calls all succeed, and the
 * main thread's event loop is never held long. The cost walker's verdict does not matter here: a schema it
 * lets through and ajv then spends 2^n on is ended by the lane's deadline.
 */
import fc from 'fast-check';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry, silentLogger, ToolhostError, type ToolRegistry } from '../../host/index.js';
import { SchemaLane } from '../../host/core/schema-lane.js';
import type { JsonSchema } from '../../host/core/tool.js';
import { MemoryAuditLog } from '../../host/policy/memory-audit-log.js';
import { example, hasCGuests } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * RUNS));

/** Longest the main thread may be held (ms): the 100 ms, with room for a loaded 2-vCPU machine's scheduling and GC. */
const STALL_MS = 250;
/** The lane's deadline per task in this fuzz (ms). */
const LANE_MS = 200;

const KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'properties', 'items', 'prefixItems', 'contains', 'additionalProperties', 'patternProperties', 'propertyNames', 'dependentSchemas', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems', 'dependencies', 'ref', 'dynamicRef'] as const;

const definition = fc.record({
  keyword: fc.constantFrom(...KEYWORDS),
  targets: fc.array(fc.nat({ max: 2 }), { minLength: 1, maxLength: 3 }),
  leaf: fc.constantFrom<Record<string, unknown>>({ type: 'object' }, { type: ['array', 'string'] }, { type: 'array', uniqueItems: true }, { minimum: 0 }, { pattern: '^(a+)+$' }, { enum: [1, 'a', [1]] }, { const: { a: 1 } }, { required: ['p0'] }, { minItems: 1 }, {}),
  anchor: fc.boolean(),
});

type Definition = { keyword: (typeof KEYWORDS)[number]; targets: number[]; leaf: Record<string, unknown>; anchor: boolean };

function schemaOf(defs: Definition[], draft2020: boolean): JsonSchema {
  const where = draft2020 ? '$defs' : 'definitions';
  // References point forward only (a DAG, shared: 2^depth expansions, but no in-place cycle the walker refuses at
  // once); the last definition is a leaf. `$dynamicRef` reaches back to any `$dynamicAnchor`: recursion.
  const ref = (i: number): Record<string, unknown> => ({ $ref: `#/${where}/d${Math.min(i, defs.length - 1)}` });
  const bodies: Record<string, unknown> = {};
  defs.forEach(({ keyword, targets, leaf, anchor }, i) => {
    if (i === defs.length - 1) {
      bodies[`d${i}`] = { ...leaf };
      return;
    }
    const refs = targets.map((t) => ref(i + 1 + (t % 3)));
    const body: Record<string, unknown> = { ...leaf };
    if (draft2020 && anchor) body.$dynamicAnchor = 'node';
    switch (keyword) {
      case 'ref': Object.assign(body, refs[0]); break;
      case 'dynamicRef': if (draft2020) body.allOf = refs.map(() => ({ $dynamicRef: '#node' })); else Object.assign(body, refs[0]); break;
      case 'not': case 'contains': case 'additionalProperties': case 'propertyNames': case 'unevaluatedProperties': case 'unevaluatedItems': case 'additionalItems': body[keyword] = refs[0]; break;
      case 'if': body.if = refs[0]; body.then = refs[1 % refs.length]; body.else = refs[2 % refs.length]; break;
      case 'properties': body.properties = Object.fromEntries(refs.map((r, j) => [`p${j}`, r])); break;
      case 'patternProperties': body.patternProperties = Object.fromEntries(refs.map((r, j) => [`^p${j}`, r])); break;
      case 'dependentSchemas': case 'dependencies': body[keyword] = Object.fromEntries(refs.map((r, j) => [`p${j}`, r])); break;
      // Draft-07's tuple is `items: [...]`; 2020-12's is `prefixItems` (and `items` one schema).
      case 'prefixItems': if (draft2020) body.prefixItems = refs; else body.items = refs; break;
      case 'items': body.items = refs[0]; break;
      default: body[keyword] = refs;
    }
    bodies[`d${i}`] = body;
  });
  const root: Record<string, unknown> = { [where]: bodies, ...ref(0) };
  if (draft2020) {
    root.$schema = 'https://json-schema.org/draft/2020-12/schema';
    root.$dynamicAnchor = 'node';
  }
  return root as JsonSchema;
}

/**
 * A known bomb the cost walker does not model, with honest args: an `allOf`/`$ref` DAG of `depth` under
 * `prefixItems` (or, draft-07, tuple `items`), or the whole schema applied twice per level through `$dynamicRef`.
 */
function bombOf(depth: number, dynamic: boolean): { schema: JsonSchema; value: unknown } {
  if (dynamic) {
    let tree: unknown = 'x';
    for (let i = 0; i < depth; i++) tree = [tree];
    return { schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', $dynamicAnchor: 'n', type: ['array', 'string'], items: { allOf: [{ $dynamicRef: '#n' }, { $dynamicRef: '#n' }] } }, value: tree };
  }
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  defs[`d${depth}`] = { type: 'string' };
  return { schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { list: { type: 'array', prefixItems: [{ $ref: '#/$defs/d0' }] } }, $defs: defs }, value: { list: ['x'] } };
}

/** Args: any JSON, or nested arrays and objects `depth` deep (shared), which make fan-out schemas explode. */
const args = fc.oneof(fc.jsonValue({ maxDepth: 5 }), fc.nat({ max: 40 }).map((depth) => {
  let value: unknown = 'a';
  for (let i = 0; i < depth; i++) value = i % 3 === 0 ? { p0: value, p1: value } : [value, value];
  return value;
}));

describe.runIf(hasCGuests)('fuzzing guest-shaped schemas off the main thread', () => {
  let registry: ToolRegistry;
  const lane = new SchemaLane();
  beforeAll(async () => {
    registry = createRegistry({ logger: silentLogger, audit: new MemoryAuditLog(), sandbox: { threads: 1 } });
    await registry.registerWasmTools(example('ctools'));
    await registry.execute('echo', { warm: true });
  });
  afterAll(async () => {
    await lane.close();
    await registry.close();
  });

  it('every schema and args get an answer, honest calls beside them all succeed, and the main thread is never held long', async () => {
    const histogram = monitorEventLoopDelay({ resolution: 10 });
    let honest = 0;
    const failures: string[] = [];
    let running = true;
    // Honest calls, one after another (a millisecond apart), for as long as the fuzz runs.
    const beside = (async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        const result = await registry.execute('echo', { n: honest });
        if (result.isError === true) failures.push(result.error?.code ?? 'unknown');
        honest += 1;
      }
    })();
    histogram.enable();
    try {
      // One case in four plants a known bomb.
      const bomb = fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.record({ depth: fc.integer({ min: 22, max: 30 }), dynamic: fc.boolean() }) });
      await fc.assert(fc.asyncProperty(fc.array(definition, { minLength: 1, maxLength: 30 }), fc.boolean(), fc.array(args, { minLength: 1, maxLength: 3 }), bomb, async (defs, draft2020, randomCalls, planted) => {
        const known = planted === null ? undefined : bombOf(planted.depth, planted.dynamic);
        const schema = known?.schema ?? schemaOf(defs, draft2020);
        const calls = known === undefined ? randomCalls : [known.value];
        const limits = { laneMs: LANE_MS };
        const compiled = await lane.check('fuzzed', schema, { limits }).then(() => true, (error: unknown) => {
          expect(error).toBeInstanceOf(ToolhostError);
          expect(['INVALID_INPUT', 'COMPONENT_INVALID']).toContain((error as ToolhostError).code);
          return false;
        });
        if (!compiled) return;
        for (const value of calls) {
          const refused = await lane.validate('fuzzed', schema, value, { limits });
          if (refused !== undefined) expect(refused.code).toBe('INVALID_INPUT');
        }
      }), { numRuns: runs(10) });
    } finally {
      histogram.disable();
      running = false;
      await beside;
    }
    expect(failures).toEqual([]);
    expect(honest).toBeGreaterThan(0);
    expect(histogram.max / 1e6).toBeLessThan(STALL_MS);
  });
});
