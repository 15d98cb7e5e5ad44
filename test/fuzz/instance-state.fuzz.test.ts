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
 * re-instantiated instance (issue 28). Both hold in both containments, and
 * with every module that can be split into an engine and an image split
 * (`TOOLHOST_ENGINE_SPLIT=always`: a shape whose data segments are all active
 * then runs as engine + image, issue 37) as well as with the default (such
 * small modules whole). FUZZ_RUNS scales the number of cases.
 */
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../../host/index.js';
import { freshAnswer, segmentSmugglerComponent, segmentTools, type SegmentShape } from '../fixtures/wat/segment-smuggler.js';
import { IMAGE_SUFFIX } from '../../host/sandbox/load/engine-split.js';
import { CONTAINMENTS, collect, makeRegistry, sharedCacheDir } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * RUNS));

type Containment = (typeof CONTAINMENTS)[number];

/** Image modules stored since `since` (ms) in variants whose key ends with `keySuffix`, anywhere under `dir`. */
function imagesStoredSince(dir: string, since: number, keySuffix: string): number {
  let found = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.includes(IMAGE_SUFFIX) || !entry.parentPath.endsWith(keySuffix)) continue;
    if (statSync(join(entry.parentPath, entry.name)).mtimeMs >= since) found += 1;
  }
  return found;
}

describe.each(['large', 'always'] as const)('fuzzing instance reset with segment shapes (engine split: %s)', (split) => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-fuzz-segments-'));
  const registries = new Map<string, ToolRegistry>();
  const splitBefore = process.env.TOOLHOST_ENGINE_SPLIT;
  const started = Date.now();
  // Read where the host makes a component's modules (module-variants.ts): at each registration below.
  beforeAll(() => {
    process.env.TOOLHOST_ENGINE_SPLIT = split;
  });
  afterAll(async () => {
    await Promise.all([...registries.values()].map((registry) => registry.close()));
    if (splitBefore === undefined) delete process.env.TOOLHOST_ENGINE_SPLIT;
    else process.env.TOOLHOST_ENGINE_SPLIT = splitBefore;
  });

  /** One registry (one worker) per shape, containment and eviction setting, made on first use. */
  const registryFor = async (shape: SegmentShape, containment: Containment, evicting = false): Promise<ToolRegistry> => {
    const key = `${shape.data.join(',')}|${shape.elements.join(',')}|${containment}|${evicting}`;
    let registry = registries.get(key);
    if (!registry) {
      const file = join(scratch, `segments-${registries.size}.wasm`);
      writeFileSync(file, await segmentSmugglerComponent(shape));
      // Evicting: a component uncalled for 1 ms loses its instances at the worker's next sweep (every 100 ms).
      registry = makeRegistry({ sandbox: { threads: 1, containment, ...(evicting ? { idleReleaseMs: 1 } : {}) } });
      await registry.registerWasmTools(file);
      registries.set(key, registry);
    }
    return registry;
  };
  const containments = fc.constantFrom(...CONTAINMENTS);

  const shapes = fc.record({
    data: fc.array(fc.constantFrom('passive' as const, 'active' as const), { maxLength: 3 }),
    elements: fc.array(fc.constantFrom('passive' as const, 'active' as const, 'declarative' as const), { maxLength: 3 }),
  });
  const cases = shapes.chain((shape) => fc.tuple(fc.constant(shape), containments, fc.array(fc.constantFrom(...segmentTools(shape)), { minLength: 1, maxLength: 12 })));

  it('every call in the default isolation answers what a new instance answers', async () => {
    await fc.assert(fc.asyncProperty(cases, async ([shape, containment, calls]) => {
      const registry = await registryFor(shape, containment);
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
    const paused = shapes.chain((shape) => fc.tuple(fc.constant(shape), containments, fc.array(fc.tuple(fc.constantFrom(...segmentTools(shape)), fc.boolean()), { minLength: 1, maxLength: 8 })));
    let reinstantiated = 0;
    await fc.assert(fc.asyncProperty(paused, async ([shape, containment, calls]) => {
      const registry = await registryFor(shape, containment, true);
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

  it.runIf(split === 'always')('ran on split components: a shape of active segments was made an engine and an image', async () => {
    const registry = await registryFor({ data: ['active', 'active'], elements: ['active'] }, 'thread');
    expect((await registry.execute('probe_d0', {})).structuredContent).toBe(freshAnswer({ data: ['active', 'active'], elements: ['active'] }, 'probe_d0'));
    // The variant made under this setting is stored beside its cache entry (variant-cache.ts), image included.
    await expect.poll(() => imagesStoredSince(sharedCacheDir, started, '-split-all'), { timeout: 10_000, interval: 200 }).toBeGreaterThan(0);
  });
});
