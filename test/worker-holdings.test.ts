/**
 * A worker may hold a second task behind a short one (host/sandbox/worker-holdings.ts). What that must never change:
 * a task stopped while it waits there is answered at once and does not take the running call down with it, and a
 * task whose worker is lost before it claimed the task runs elsewhere, once, as if nothing happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests)('tasks held behind another on one worker', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 10_000, maxWallMs: 60_000 }, sandbox: { threads: 1, waitBehind: { averageMs: 50, withinMs: 100 } } });
    await registry.registerWasmTools(fixture('hostile'));
    // Short runs of both tools: the pool then lets a task wait behind sleep_for (under 50 ms on average: generous,
    // so a loaded machine does not decide the test).
    for (let i = 0; i < 5; i += 1) {
      expect((await registry.execute('sleep_for', { ms: 0 })).isError).toBe(false);
      expect((await registry.execute('honest', { n: 3 })).isError).toBe(false);
    }
  });
  afterAll(async () => {
    await registry.close();
  });

  const handedBack = (): { abandoned: number; reposted: number } => ({ ...registry.sandboxStats()!.handedBack! });

  /** An honest call, and a spinner posted right behind it on the same worker that its CPU budget stops with the worker. */
  const honestBesideStoppedSpinner = async (): Promise<void> => {
    const first = registry.execute('honest', { n: 6 });
    const spinner = registry.execute('spin_for', { ms: 10_000 }, { policy: { budget_cpu_ms: 25, budget_wall_ms: 5_000 } });
    expect((await spinner).error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
    const answer = await first;
    expect(answer.error).toBeUndefined();
    expect(answer.structuredContent).toEqual({ ok: true, sum: 21 });
  };

  it('a task stopped while it waits is taken back, and the call in front of it goes on', async () => {
    const before = handedBack();
    const running = registry.execute('sleep_for', { ms: 600 });
    const waiting = await registry.execute('honest', { n: 3 }, { policy: { budget_wall_ms: 150 } });
    expect(waiting.error).toMatchObject({ code: 'WALL_TIMEOUT', details: { waitingForWorker: true } });
    const first = await running;
    expect(first.isError).toBe(false);
    expect(first.structuredContent).toMatchObject({ slept_ms: 600 });
    // The worker reached the taken-back task after the sleep and answered at once; the host goes on serving.
    const next = await registry.execute('honest', { n: 4 });
    expect(next.structuredContent).toEqual({ ok: true, sum: 10 });
    expect(handedBack().abandoned).toBe(before.abandoned + 1);
  });

  it('a task whose worker is stopped for the call in front of it runs on the next worker, once', async () => {
    // Short runs again: the 600 ms one above weighs in sleep_for's average until enough short ones follow.
    for (let i = 0; i < 20; i += 1) await registry.execute('sleep_for', { ms: 0 });
    const before = handedBack();
    const stopped = registry.execute('sleep_for', { ms: 5_000 }, { policy: { budget_wall_ms: 200 } });
    const behind = registry.execute('honest', { n: 5 });
    expect((await stopped).error).toMatchObject({ code: 'WALL_TIMEOUT' });
    const result = await behind;
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ ok: true, sum: 15 });
    // Posted again by the pool (nothing of it had run), not retried by the call path.
    expect(result.accounting?.attempts).toBe(1);
    expect(handedBack().reposted).toBe(before.reposted + 1);
  });

  it('a call keeps its answer when the task behind it is stopped with their worker right after it', async () => {
    // A worker fresh from its replacement loads the glue at its first call (it awaits), so the next task's message
    // arrives while that call is in progress and waits for its turn. It must not run before the first call's answer
    // has left the worker: stopped with the worker, it took that answer down with it.
    for (let round = 0; round < 3; round += 1) {
      expect((await registry.execute('sleep_for', { ms: 5_000 }, { policy: { budget_wall_ms: 100 } })).error).toMatchObject({ code: 'WALL_TIMEOUT' });
      for (let i = 0; i < 20; i += 1) await registry.execute('sleep_for', { ms: 0 });
      expect((await registry.execute('sleep_for', { ms: 5_000 }, { policy: { budget_wall_ms: 100 } })).error).toMatchObject({ code: 'WALL_TIMEOUT' });
      await honestBesideStoppedSpinner();
    }
  });

  it('a call keeps its answer when the task posted with it is stopped with their worker', async () => {
    // Both tasks reach an idle worker together: piscina reads both from the port in one go, and the second's turn
    // came before the first one's answer had left. A known component's call runs synchronously, so this is every call.
    for (let round = 0; round < 3; round += 1) {
      for (let i = 0; i < 20; i += 1) await registry.execute('honest', { n: 1 });
      // The worker sleeps, waiting for tasks: both then wake it together.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await honestBesideStoppedSpinner();
    }
  });
});
