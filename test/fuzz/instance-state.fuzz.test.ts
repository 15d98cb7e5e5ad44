/**
 * Property-based fuzzing of instance reset (fast-check): components of random
 * shape (data segments passive or active, element segments passive, active or
 * declarative, each with a table of its own; fixtures/wat/segment-smuggler.ts)
 * get random sequences of calls that drop segments, probe them and scribble
 * over memory, a global and the tables. The property: in the default
 * isolation every call answers what a new instance answers, whatever the
 * calls before it did, with exactly one terminal event. The same property
 * holds when the component's instances are dropped between calls (a tiny
 * `idleReleaseMs`, and random pauses): the call after one runs on a
 * re-instantiated instance (issue 28). FUZZ_RUNS scales the number of cases.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../../host/index.js';
import { freshAnswer, segmentSmugglerComponent, segmentTools, type SegmentShape } from '../fixtures/wat/segment-smuggler.js';
import { collect, makeRegistry } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * RUNS));

describe('fuzzing instance reset with segment shapes', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-fuzz-segments-'));
  const registries = new Map<string, ToolRegistry>();
  afterAll(async () => {
    await Promise.all([...registries.values()].map((registry) => registry.close()));
  });

  /** One registry (one worker) per shape (and per eviction setting), made on first use. */
  const registryFor = async (shape: SegmentShape, evicting = false): Promise<ToolRegistry> => {
    const key = `${shape.data.join(',')}|${shape.elements.join(',')}|${evicting}`;
    let registry = registries.get(key);
    if (!registry) {
      const file = join(scratch, `segments-${registries.size}.wasm`);
      writeFileSync(file, await segmentSmugglerComponent(shape));
      // Evicting: a component uncalled for 1 ms loses its instances at the worker's next sweep (every 100 ms).
      registry = makeRegistry({ sandbox: { threads: 1, ...(evicting ? { idleReleaseMs: 1 } : {}) } });
      await registry.registerWasmTools(file);
      registries.set(key, registry);
    }
    return registry;
  };

  const shapes = fc.record({
    data: fc.array(fc.constantFrom('passive' as const, 'active' as const), { maxLength: 3 }),
    elements: fc.array(fc.constantFrom('passive' as const, 'active' as const, 'declarative' as const), { maxLength: 3 }),
  });
  const cases = shapes.chain((shape) => fc.tuple(fc.constant(shape), fc.array(fc.constantFrom(...segmentTools(shape)), { minLength: 1, maxLength: 12 })));

  it('every call in the default isolation answers what a new instance answers', async () => {
    await fc.assert(fc.asyncProperty(cases, async ([shape, calls]) => {
      const registry = await registryFor(shape);
      for (const tool of calls) {
        const events = await collect(registry.stream(tool, {}));
        const terminals = events.filter((event) => event.type === 'result' || event.type === 'error');
        expect(terminals).toHaveLength(1);
        const terminal = terminals[0]!;
        const expected = freshAnswer(shape, tool);
        if (expected === undefined) {
          expect(terminal.type === 'error' ? terminal.code : terminal.type, tool).toBe('TOOL_CRASHED');
        } else {
          expect(terminal.type === 'result' ? terminal.data : terminal, `${tool} after ${calls.join(' ')}`).toBe(expected);
        }
      }
    }), { numRuns: runs(25) });
  });

  it('every call answers what a new instance answers when instances are dropped between calls', async () => {
    const paused = shapes.chain((shape) => fc.tuple(fc.constant(shape), fc.array(fc.tuple(fc.constantFrom(...segmentTools(shape)), fc.boolean()), { minLength: 1, maxLength: 8 })));
    let reinstantiated = 0;
    await fc.assert(fc.asyncProperty(paused, async ([shape, calls]) => {
      const registry = await registryFor(shape, true);
      for (const [tool, pause] of calls) {
        if (pause) await new Promise((resolve) => setTimeout(resolve, 250));
        const events = await collect(registry.stream(tool, {}));
        const terminals = events.filter((event) => event.type === 'result' || event.type === 'error');
        expect(terminals).toHaveLength(1);
        const terminal = terminals[0]!;
        if (terminal.accounting?.reinstantiated === true) reinstantiated += 1;
        const expected = freshAnswer(shape, tool);
        if (expected === undefined) {
          expect(terminal.type === 'error' ? terminal.code : terminal.type, tool).toBe('TOOL_CRASHED');
        } else {
          expect(terminal.type === 'result' ? terminal.data : terminal, tool).toEqual(expected);
        }
      }
    }), { numRuns: runs(12) });
    // The property ran on re-instantiated instances, not only on spares.
    expect(reinstantiated).toBeGreaterThan(0);
  });
});
