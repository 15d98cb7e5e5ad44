/**
 * Wall-clock, CPU and memory budgets against hostile guests (test/fixtures/guests/c/hostile.c),
 * under both containments (the sandbox in this process, and in a sandbox process).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests).each(CONTAINMENTS)('budgets (%s containment)', (containment) => {
  let registry: ToolRegistry;
  // Tests that need a registry of their own (other defaults, another grant) run once, in thread containment:
  // what they check is decided before the sandbox.
  const ownRegistry = (name: string, test: () => Promise<void>): void => {
    if (containment === 'thread') it(name, test);
  };

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 5_000, maxWallMs: 60_000 }, sandbox: { containment } });
    await registry.registerWasmTools(fixture('hostile'));
  });
  afterAll(async () => {
    await registry.close();
  });

  describe('the wall clock', () => {
    it('ends an infinite loop at its timeout with TOOL_TIMEOUT, and at its wall budget with WALL_TIMEOUT', async () => {
      const timeout = await registry.execute('spin', {}, { policy: { timeout: '0.15s' } });
      expect(timeout.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
      // Not before its timeout. (Node's timers run on the event loop's millisecond clock, cached at each turn, and
      // the call's wall time is read from performance.now(): the two can disagree by up to a millisecond.)
      expect(timeout.accounting?.wallMs).toBeGreaterThanOrEqual(149);
      const budget = await registry.execute('spin', {}, { policy: { budget_wall_ms: 150, timeout: '10s' } });
      expect(budget.error).toMatchObject({ code: 'WALL_TIMEOUT' });
    });

    it('says so when the wall clock ran out while the call still waited for a worker', async () => {
      // The registry's one worker sleeps; the next call waits behind it past its own wall clock.
      const busy = registry.execute('sleep_for', { ms: 800 });
      const queued = await registry.execute('honest', { n: 3 }, { policy: { budget_wall_ms: 200 } });
      expect(queued.error).toMatchObject({ code: 'WALL_TIMEOUT', details: { waitingForWorker: true } });
      expect(queued.error?.message).toContain('while it still waited for a sandbox worker');
      expect(queued.accounting?.waitingForWorker).toBe(true);
      expect((await busy).isError).toBe(false);
      // A call that ran past its wall clock says nothing of the kind.
      const ran = await registry.execute('spin', {}, { policy: { budget_wall_ms: 100 } });
      expect(ran.error?.code).toBe('WALL_TIMEOUT');
      expect(ran.error?.message).not.toContain('waited for a sandbox worker');
      expect(ran.accounting?.waitingForWorker).toBeUndefined();
    });

    it('uses the smaller of timeout and budget_wall_ms', async () => {
      const result = await registry.execute('spin', {}, { policy: { budget_wall_ms: 5000, timeout: '0.1s' } });
      expect(result.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
    });

    ownRegistry('applies the host default when the policy is silent', async () => {
      const quick = makeRegistry({ defaults: { wallMs: 200 } });
      try {
        await quick.registerWasmTools(fixture('hostile'));
        const result = await quick.execute('spin', {});
        expect(result.error).toMatchObject({ code: 'TOOL_TIMEOUT', message: expect.stringContaining('200 ms') });
      } finally {
        await quick.close();
      }
    });

    it('refuses a timeout above the host ceiling with PERMISSION_DENIED before anything runs', async () => {
      await expect(registry.execute('honest', { n: 3 }, { policy: { timeout: '120s' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    });
  });

  describe('the CPU budget', () => {
    it('ends a guest that spins under a long wall clock but a short CPU budget with CPU_BUDGET_EXCEEDED', async () => {
      const result = await registry.execute('spin', {}, { policy: { budget_cpu_ms: 100, timeout: '20s' } });
      expect(result.error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED', details: { budgetMs: 100 } });
      expect(result.accounting?.wallMs).toBeLessThan(20_000);
      expect(result.accounting?.cpuMs).toBeGreaterThanOrEqual(100);
    });

    it('charges spinning that watches the clock, too', async () => {
      const result = await registry.execute('spin_for', { ms: 5000 }, { policy: { budget_cpu_ms: 150, timeout: '20s' } });
      expect(result.error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
    });

    it('does not charge waiting: a guest that sleeps 0.5 s under a 100 ms CPU budget succeeds', async () => {
      const result = await registry.execute('sleep_for', { ms: 500 }, { policy: { budget_cpu_ms: 100, timeout: '20s' } });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toMatchObject({ slept_ms: 500 });
      expect(result.accounting?.wallMs).toBeGreaterThanOrEqual(500);
      expect(result.accounting?.cpuMs).toBeLessThan(100);
      expect(result.accounting?.cpuClock).toBe('thread');
    });
  });

  describe('the memory cap', () => {
    it('refuses memory.grow past memory_mb and ends the call with MEMORY_LIMIT_EXCEEDED', async () => {
      const result = await registry.execute('memory_bomb', { mb: 1024 }, { policy: { memory_mb: 64 } });
      expect(result.error).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED' });
      const details = result.error?.details as { capBytes: number; peakBytes: number };
      expect(details.capBytes).toBe(64 * 1024 * 1024);
      expect(details.peakBytes).toBeLessThanOrEqual(details.capBytes);
    });

    it('ends a guest whose allocator runs out at the cap with MEMORY_LIMIT_EXCEEDED', async () => {
      const result = await registry.execute('malloc_bomb', {}, { policy: { memory_mb: 48 } });
      expect(result.error).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED' });
    });

    ownRegistry('applies the host default cap when the policy is silent', async () => {
      const small = makeRegistry({ defaults: { memoryMb: 32 } });
      try {
        await small.registerWasmTools(fixture('hostile'));
        const result = await small.execute('memory_bomb', { mb: 4096 });
        expect(result.error).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED', details: { capBytes: 32 * 1024 * 1024 } });
      } finally {
        await small.close();
      }
    });

    it('lets a guest use memory below the cap, and reports its peak', async () => {
      const result = await registry.execute('memory_bomb', { mb: 16 }, { policy: { memory_mb: 64 } });
      expect(result.structuredContent).toMatchObject({ grown_mb: 16 });
      expect(result.accounting?.peakMemoryBytes).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    });

    ownRegistry('takes the smaller of the tool\'s grant and the call\'s request', async () => {
      const granted = makeRegistry();
      try {
        await granted.registerWasmTools(fixture('hostile'), { memoryMb: 24 });
        const result = await granted.execute('memory_bomb', { mb: 4096 }, { policy: { memory_mb: 512 } });
        expect(result.error).toMatchObject({ code: 'MEMORY_LIMIT_EXCEEDED', details: { capBytes: 24 * 1024 * 1024 } });
      } finally {
        await granted.close();
      }
    });

    it('refuses a memory_mb above the host ceiling', async () => {
      await expect(registry.execute('honest', { n: 1 }, { policy: { memory_mb: 8192 } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    });
  });
});
