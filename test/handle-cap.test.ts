/**
 * The resource handles a guest holds are capped (`handles_per_call`): a guest
 * that opens WASI handles in a loop and keeps them (here: pollables from the
 * monotonic clock, in a WAT component) ends with OUTPUT_LIMIT_EXCEEDED
 * instead of growing its worker's heap, the limit hit is reported, and the
 * host goes on. Handles a guest drops do not count: a guest that opens and
 * drops many more than the cap is not stopped.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { DEFAULT_GUEST_OUTPUT_LIMITS } from '../host/sandbox/protocol.js';
import { growerComponent } from './fixtures/wat/grower.js';
import { collect, freshCacheDir, makeRegistry, terminalCount } from './helpers.js';

describe('the cap on handles a guest holds', () => {
  let registry: ToolRegistry;
  const hits: string[] = [];

  beforeAll(async () => {
    const dir = freshCacheDir();
    const file = join(dir, 'hoarder.wasm');
    const churner = join(dir, 'churner.wasm');
    await writeFile(file, await growerComponent({ holders: 1, hoardPollables: 'keep' }));
    await writeFile(churner, await growerComponent({ holders: 1, hoardPollables: 'drop', hoardCount: 2000 }));
    registry = makeRegistry({ sandbox: { outputLimits: { maxHandles: 50 } } });
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    await registry.registerWasmTools([file, churner]);
    // Both bring grow_memory and grow_table: the second's are registered as churner.<tool>.
    expect(registry.names()).toEqual(['churner.grow_memory', 'churner.grow_table', 'grow_memory', 'grow_table']);
  });
  afterAll(async () => {
    await registry.close();
  });

  it('ends a guest that keeps opening handles with OUTPUT_LIMIT_EXCEEDED, once, and serves the next call', async () => {
    const events = await collect(registry.stream('grow_memory', {}));
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'handles', limit: 'handles_per_call', max: 50 } });
    expect(hits).toEqual(['handles_per_call']);
    expect((await registry.execute('grow_table', {})).structuredContent).toEqual({ pages: 65536 });
  });

  it('counts only the handles held: a guest that opens and drops 2000, 40 times the cap, is not stopped', async () => {
    const result = await registry.execute('churner.grow_memory', {});
    expect(result.error ?? result.structuredContent).toEqual({ pages: 2000 });
  });

  it('has a default of 100000 handles', () => {
    expect(DEFAULT_GUEST_OUTPUT_LIMITS.maxHandles).toBe(100_000);
  });
});
