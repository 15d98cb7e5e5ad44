/**
 * Issue 36, M1 (c): schemas that are neither the host's nor a sandboxed tool's (an imported MCP server's) are
 * compiled, and args checked against them, in the schema lane: a worker with a deadline, replaced past it.
 * Before, the registry compiled a remote's schema on the main thread and admission validated every call's
 * args there: `prefix_dag` with honest args held the main thread for minutes.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { SchemaLane } from '../host/core/schema-lane.js';
import { importMcpServer, type McpImport } from '../host/tools/mcp-import.js';
import { collect, makeRegistry, root } from './helpers.js';

/** Longest the main thread may be held while a hostile validation runs (ms): generous for a loaded machine. */
const STALL_MS = 250;

function dag(depth: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  defs[`d${depth}`] = { type: 'string' };
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { list: { type: 'array', prefixItems: [{ $ref: '#/$defs/d0' }] } }, $defs: defs };
}

async function withStallProbe<T>(work: () => Promise<T>): Promise<{ value: T; maxStallMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  try {
    return { value: await work(), maxStallMs: histogram.max / 1e6 };
  } finally {
    histogram.disable();
  }
}

describe('the schema lane', () => {
  const lane = new SchemaLane();
  afterAll(() => lane.close());

  it('ends a validation past its deadline with INVALID_INPUT, replaces its worker, and the main thread is never stalled', async () => {
    const hits: string[] = [];
    const { value, maxStallMs } = await withStallProbe(() => lane.validate('bomb', dag(30), { list: ['x'] }, { limits: { laneMs: 300 }, onLimit: (_tool, limit) => hits.push(limit) }));
    expect(value).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'schema-lane-deadline', limit: 'schema_lane_ms' } });
    expect(hits).toEqual(['schema_lane_ms']);
    expect(maxStallMs).toBeLessThan(STALL_MS);
    // The next task gets a new worker.
    expect(await lane.validate('plain', { type: 'object', properties: { text: { type: 'string' } } }, { text: 'x' })).toBeUndefined();
  });

  it('answers INVALID_INPUT with the ajv path for args that fail an ordinary schema, and nothing for valid ones', async () => {
    const schema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
    expect(await lane.validate('plain', schema, { text: 5 }, { callId: 'c-1' })).toMatchObject({ code: 'INVALID_INPUT', callId: 'c-1', details: { errors: [expect.objectContaining({ path: '/text' })] } });
    expect(await lane.validate('plain', schema, { text: 'ok' })).toBeUndefined();
  });

  it('refuses a schema that does not compile, and one past a cost limit, as registration does', async () => {
    await expect(lane.check('broken', { $schema: 'https://json-schema.org/draft/2020-12/schema', prefixItems: 3 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(lane.check('deep', { allOf: [{ allOf: [{ allOf: [{}] }] }] }, { limits: { depth: 3 } })).rejects.toMatchObject({ code: 'COMPONENT_INVALID', details: { reason: 'schema-cost' } });
  });

  it('stops a task when its caller\'s signal aborts', async () => {
    const stop = new AbortController();
    const pending = lane.validate('bomb', dag(30), { list: ['x'] }, { limits: { laneMs: 60_000 }, signal: stop.signal });
    setTimeout(() => stop.abort(), 100);
    expect(await pending).toMatchObject({ code: 'CANCELLED' });
  });
});

describe('an imported MCP server\'s schemas', () => {
  let registry: ToolRegistry;
  let imported: McpImport;
  beforeAll(async () => {
    registry = makeRegistry();
    imported = await importMcpServer(registry, { name: 'bomb', command: process.execPath, args: [join(root, 'test', 'fixtures', 'mcp', 'schema-bomb-server.mjs')], cwd: root });
  });
  afterAll(async () => {
    await imported?.close();
    await registry?.close();
  });

  it('are checked in the lane at import: one that does not compile is skipped', () => {
    expect(imported.tools).toEqual(['bomb.plain', 'bomb.prefix_dag']);
    expect(imported.skipped).toEqual([expect.objectContaining({ tool: 'broken' })]);
  });

  it('end a call whose honest args would take 2^30 checks at the lane deadline, the main thread never stalled', async () => {
    const limits: string[] = [];
    registry.onLimitHit((_tool, limit) => limits.push(limit));
    const { value: events, maxStallMs } = await withStallProbe(() => collect(registry.stream('bomb.prefix_dag', { list: ['x'] })));
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'INVALID_INPUT', stage: 'rejected', details: { reason: 'schema-lane-deadline' } });
    expect(limits).toContain('schema_lane_ms');
    expect(maxStallMs).toBeLessThan(STALL_MS);
  });

  it('still refuse bad args with the ajv path, and valid calls reach the remote', async () => {
    await expect(registry.execute('bomb.plain', { text: 5 })).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { errors: [expect.objectContaining({ path: '/text' })] } });
    expect((await registry.execute('bomb.plain', { text: 'hi' })).content).toEqual([{ type: 'text', text: '{"text":"hi"}' }]);
  });
});
