/**
 * A tool's schemas cannot make the main thread's work unbounded (issue 30, "Found" 3): schemas past the cost
 * limits fail registration with COMPONENT_INVALID (guests and native tools alike), args are walked before
 * validation, every call ends with exactly one terminal event, and output schemas reach clients without
 * patterns. On 6d290f5 each of these registered, stalled for seconds, threw a raw RangeError, or published
 * the pattern.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry, defineNativeTool, silentLogger, type ToolRegistry } from '../host/index.js';
import type { JsonSchema } from '../host/core/tool.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { growerComponent } from './fixtures/wat/grower.js';
import { freshCacheDir, makeRegistry } from './helpers.js';

const dir = freshCacheDir();

/** A 2.3 KB allOf/$ref DAG of depth 30: 2^30 schema checks for `{}` when expanded. */
function refDag(levels = 30): JsonSchema {
  const definitions: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) definitions[`d${i}`] = { allOf: [{ $ref: `#/definitions/d${i + 1}` }, { $ref: `#/definitions/d${i + 1}` }] };
  definitions[`d${levels}`] = { type: 'object' };
  return { definitions, $ref: '#/definitions/d0' } as JsonSchema;
}

const tool = (name: string, inputSchema: JsonSchema, outputSchema?: JsonSchema) =>
  defineNativeTool({ name, description: 'A schema under test.', inputSchema, ...(outputSchema === undefined ? {} : { outputSchema }), run: () => ({ ok: true }) });

const registries: ToolRegistry[] = [];
function registry(options: Parameters<typeof createRegistry>[0] = {}): ToolRegistry {
  const made = createRegistry({ logger: silentLogger, audit: new MemoryAuditLog(), ...options });
  registries.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(registries.map((r) => r.close()));
});

/** Every event of a call, collected; `stream` itself must not throw. */
async function eventsOf(r: ToolRegistry, name: string, args: unknown): Promise<Array<{ type: string; code?: string; details?: unknown }>> {
  const events: Array<{ type: string; code?: string; details?: unknown }> = [];
  for await (const event of r.stream(name, args)) events.push(event as { type: string });
  return events;
}

const refused = (limit?: string) => expect.objectContaining({ code: 'COMPONENT_INVALID', details: expect.objectContaining({ reason: 'schema-cost', ...(limit === undefined ? {} : { limit }) }) });

describe('schema cost at registration', () => {
  it('refuses a depth-30 allOf/$ref DAG (fan-out 2^30) at once', () => {
    const started = performance.now();
    expect(() => registry().register(tool('dag', refDag()))).toThrow(refused('schema_fanout'));
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('refuses a $ref cycle that never descends ($ref: "#") instead of overflowing the stack on every call', () => {
    expect(() => registry().register(tool('self', { $ref: '#' } as JsonSchema))).toThrow(refused('schema_fanout'));
    expect(() => registry().register(tool('loop', { definitions: { a: { anyOf: [{ $ref: '#/definitions/b' }] }, b: { not: { $ref: '#/definitions/a' } } }, $ref: '#/definitions/a' } as JsonSchema))).toThrow(refused('schema_fanout'));
  });

  it('refuses a 20,000-value enum, a 100,000-deep schema and a repeat-heavy pattern in milliseconds', () => {
    const r = registry();
    const started = performance.now();
    expect(() => r.register(tool('enum', { enum: Array.from({ length: 20_000 }, (_, i) => `v${i}`) } as JsonSchema))).toThrow(refused());
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { not: deep };
    expect(() => r.register(tool('deep', deep as JsonSchema))).toThrow(refused('schema_depth'));
    expect(() => r.register(tool('repeat', { type: 'object', properties: { s: { type: 'string', pattern: '^(a?){1000}$' } } } as JsonSchema))).toThrow(refused('schema_pattern_program'));
    expect(() => r.register(tool('dots', { type: 'string', pattern: '.{1,1000}'.repeat(11) } as JsonSchema))).toThrow(refused('schema_pattern_program'));
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('keeps honest schemas: a recursive JSON tree, shared definitions, an enum of 1000, a uuid pattern', async () => {
    const r = registry();
    r.register(tool('tree', { type: 'object', additionalProperties: { $ref: '#/definitions/v' }, definitions: { v: { anyOf: [{ type: 'array', items: { $ref: '#/definitions/v' } }, { type: 'object', additionalProperties: { $ref: '#/definitions/v' } }, { type: ['string', 'number', 'boolean', 'null'] }] } } } as JsonSchema));
    r.register(tool('codes', { type: 'object', properties: { c: { enum: Array.from({ length: 1000 }, (_, i) => `c${i}`) }, id: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } } } as JsonSchema));
    expect((await r.execute('tree', { a: [1, { b: [true, null, 'x'] }] })).structuredContent).toEqual({ ok: true });
    expect((await r.execute('codes', { c: 'c999', id: '0b7f3c1e-8a22-4e59-9d4c-2b1a0f6e7d3a' })).structuredContent).toEqual({ ok: true });
    await expect(r.execute('codes', { c: 'nope' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('applies configured limits and reports each refusal as a limit hit', () => {
    const r = registry({ schemaLimits: { enumValues: 3 } });
    const hits: Array<[string, string]> = [];
    r.onLimitHit((toolName, limit) => hits.push([toolName, limit]));
    expect(() => r.register(tool('four', { enum: [1, 2, 3, 4] } as JsonSchema))).toThrow(refused('schema_enum_values'));
    expect(hits).toEqual([['four', 'schema_enum_values']]);
  });
});

describe('args before validation', () => {
  const recursive = { type: 'object', properties: { a: { $ref: '#/definitions/n' } }, definitions: { n: { type: 'array', items: { $ref: '#/definitions/n' } } } } as JsonSchema;

  it('ends a call with 100,000-deep args with one INVALID_INPUT, not a RangeError', async () => {
    const r = registry();
    r.register(tool('nested', recursive));
    let deep: unknown[] = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const events = await eventsOf(r, 'nested', { a: deep });
    expect(events).toEqual([expect.objectContaining({ type: 'error', code: 'INVALID_INPUT', details: expect.objectContaining({ limit: 'args_depth' }) })]);
    // JSON text of the same depth (what MCP and gRPC parse) ends the same way.
    const parsed = JSON.parse(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`) as unknown;
    expect((await eventsOf(r, 'nested', parsed)).map((e) => e.code)).toEqual(['INVALID_INPUT']);
    // A cycle (a library caller's) is too deep, not a hang.
    const cycle: unknown[] = [];
    cycle.push(cycle);
    expect((await eventsOf(r, 'nested', { a: cycle })).map((e) => e.code)).toEqual(['INVALID_INPUT']);
    expect((await r.execute('nested', { a: [[[]], []] })).structuredContent).toEqual({ ok: true });
  });

  it('checks uniqueItems over 20,000 objects without stalling the event loop', async () => {
    const r = registry();
    r.register(tool('unique', { type: 'object', properties: { list: { type: 'array', uniqueItems: true } } } as JsonSchema));
    const list = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tags: [i, { n: i }] }));
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const started = performance.now();
    const events = await eventsOf(r, 'unique', { list });
    delay.disable();
    expect(events.filter((e) => e.type === 'result' || e.type === 'error')).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1000);
    // A duplicate, whatever its key order, is still found.
    await expect(r.execute('unique', { list: [{ a: 1, b: 2 }, { b: 2, a: 1 }] })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('duplicate') });
    expect((await r.execute('unique', { list: list.slice(0, 100) })).structuredContent).toEqual({ ok: true });
  });

  it('refuses args whose validation would take more than validation_steps, with one terminal event', async () => {
    const r = registry();
    r.register(tool('wide', { type: 'object', properties: { xs: { type: 'array', items: { allOf: Array.from({ length: 1000 }, (_, i) => ({ minimum: -i })) } } } } as JsonSchema));
    const events = await eventsOf(r, 'wide', { xs: Array.from({ length: 5000 }, () => 1) });
    expect(events).toEqual([expect.objectContaining({ type: 'error', code: 'INVALID_INPUT', details: expect.objectContaining({ limit: 'validation_steps' }) })]);
    expect((await r.execute('wide', { xs: [1, 2, 3] })).structuredContent).toEqual({ ok: true });
  });
});

describe('output schemas', () => {
  it('publishes a native tool\'s output schema without its patterns, and refuses a costly one', () => {
    const r = registry();
    r.register(tool('out', { type: 'object' }, { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(x+x+)+y$': { type: 'string' } }, additionalProperties: false } as JsonSchema));
    const [published] = r.definitions('mcp');
    expect(JSON.stringify(published!.outputSchema)).not.toContain('(a+)+');
    expect(published!.outputSchema).toEqual({ type: 'object', properties: { s: { type: 'string' } } });
    expect(() => r.register(tool('dagout', { type: 'object' }, refDag()))).toThrow(refused('schema_fanout'));
  });
});

describe('a guest\'s schemas', () => {
  let r: ToolRegistry;
  beforeAll(() => {
    r = makeRegistry();
    registries.push(r);
  });

  it('refuses a component whose input schema is a depth-30 $ref DAG with COMPONENT_INVALID', async () => {
    const file = join(dir, 'dag.wasm');
    await writeFile(file, await growerComponent({ holders: 1, schema: JSON.stringify(refDag()) }));
    await expect(r.registerWasmTools(file)).rejects.toMatchObject({ code: 'COMPONENT_INVALID', details: expect.objectContaining({ limit: 'schema_fanout' }) });
    expect(r.names()).toEqual([]);
  });

  it('never publishes a guest output schema\'s catastrophic pattern to clients', async () => {
    const file = join(dir, 'outpattern.wasm');
    await writeFile(file, await growerComponent({ holders: 1, outputSchema: JSON.stringify({ type: 'object', properties: { pages: { type: 'string', pattern: '^(a+)+$' } } }) }));
    await r.registerWasmTools(file);
    const published = r.definitions('mcp').map((d) => JSON.stringify(d.outputSchema));
    expect(published).toHaveLength(2);
    for (const text of published) {
      expect(text).toContain('"pages"');
      expect(text).not.toContain('pattern');
    }
  });
});
