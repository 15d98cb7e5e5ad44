/**
 * A worker's instances kept in `conversation` isolation hold at most
 * `keptInstanceMb` of linear memory in all, over every component (issue 30,
 * "Found" 4: 32 instances per component at up to `memory_mb` each held
 * 3.9 GiB after the calls ended). Keeping one more drops the least recently
 * used others, each a `kept_instances_mb` limit hit; an instance larger than
 * the whole budget is not kept.
 */
import { describe, expect, it } from 'vitest';
import type { GuestInstance } from '../host/sandbox/worker/guest-instance.js';
import { resolveOptions } from '../host/sandbox/pool-options.js';
import { KeptInstances } from '../host/sandbox/worker/kept-instances.js';
import { createMetrics } from '../host/servers/metrics.js';
import { CONTAINMENTS, fixture, hasCGuests, makeRegistry } from './helpers.js';

const MiB = 1024 * 1024;
/** Stands in for an instance: the budget reads only its memory. */
const instanceOf = (bytes: number): GuestInstance => ({ memoryBytes: () => bytes }) as unknown as GuestInstance;

describe('the kept-instance budget', () => {
  it('drops the least recently kept instances, over every component, to keep one more', () => {
    const kept = new KeptInstances(100);
    const first = new Map<string, GuestInstance>();
    const second = new Map<string, GuestInstance>();
    const a = instanceOf(40);
    const b = instanceOf(40);
    const c = instanceOf(40);
    expect(kept.keep(first, 'a', a)).toBe(0);
    expect(kept.keep(second, 'b', b)).toBe(0);
    // Keeping `a` again makes `b` the least recently used.
    expect(kept.keep(first, 'a', a)).toBe(0);
    expect(kept.keep(first, 'c', c)).toBe(1);
    expect([...first.keys()]).toEqual(['a', 'c']);
    expect(second.size).toBe(0);
    expect(kept.bytes).toBe(80);
  });

  it('does not keep an instance larger than the whole budget, and forgets what its owner dropped', () => {
    const kept = new KeptInstances(100);
    const owner = new Map<string, GuestInstance>();
    const small = instanceOf(30);
    kept.keep(owner, 'small', small);
    const huge = instanceOf(101);
    owner.set('huge', huge);
    expect(kept.keep(owner, 'huge', huge)).toBe(1);
    expect(owner.has('huge')).toBe(false);
    expect(owner.get('small')).toBe(small);
    kept.forget(small);
    expect(kept.bytes).toBe(0);
    expect(kept.size).toBe(0);
  });
});

describe.runIf(hasCGuests)('a guest that grows its memory in every conversation', () => {
  it.each(CONTAINMENTS)('leaves the worker holding at most the budget: the oldest conversations get new instances, each drop a limit hit (%s containment)', async (containment) => {
    const registry = makeRegistry({ sandbox: { keptInstanceMb: 64, containment } });
    const metrics = createMetrics(registry);
    const hits: string[] = [];
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    try {
      await registry.registerWasmTools(fixture('hostile'), { isolation: 'conversation' });
      // Each conversation's instance grows to ~20 MiB and is kept: three fit in 64 MiB.
      for (let c = 0; c < 8; c++) {
        const grown = await registry.execute('memory_bomb', { mb: 20, step_kb: 1024 }, { conversationId: `conv-${c}` });
        expect(grown.structuredContent).toMatchObject({ grown_mb: 20 });
        expect(grown.accounting?.peakMemoryBytes).toBeGreaterThan(20 * MiB);
      }
      expect(hits.filter((limit) => limit === 'kept_instances_mb').length).toBe(5);
      // The newest conversation still has its instance; the oldest does not.
      const newest = await registry.execute('honest', { n: 1 }, { conversationId: 'conv-7' });
      expect(newest.accounting?.instance).toBe('reused');
      expect(newest.accounting?.peakMemoryBytes).toBeGreaterThan(20 * MiB);
      const oldest = await registry.execute('honest', { n: 1 }, { conversationId: 'conv-0' });
      expect(oldest.accounting?.instance).not.toBe('reused');
      expect(oldest.accounting?.peakMemoryBytes).toBeLessThan(20 * MiB);
      expect(await metrics.metrics()).toContain('toolhost_limit_hits_total{tool="memory_bomb",limit="kept_instances_mb"} 5');
    } finally {
      metrics.close();
      await registry.close();
    }
  });

  it('refuses a budget that is not a positive integer, naming the option', () => {
    expect(() => resolveOptions({ keptInstanceMb: 0 })).toThrow('options.keptInstanceMb must be a positive integer');
    expect(resolveOptions({}).keptInstanceMb).toBe(512);
  });
});
