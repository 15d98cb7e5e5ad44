/**
 * Process containment: the sandbox pool runs in a child process, and when that
 * process dies (a fatal V8 error in a worker would kill it; SIGKILL and
 * SIGABRT stand in for one here) only the calls it was running end, each with
 * one TOOL_CRASHED; calls still waiting run on the next process, which is
 * started at once, and the host keeps serving. Budgets, cancel, state and the
 * network policy through the process are covered where those are tested (they
 * run under both containments: see CONTAINMENTS in helpers.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { collect, fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

/** The sandbox process's pid, once it is running. */
async function sandboxPid(registry: ToolRegistry): Promise<number> {
  for (;;) {
    const pid = registry.sandboxStats()?.process?.pid;
    if (pid !== undefined) return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.runIf(hasCGuests)('the sandbox process', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { containment: 'process' } });
    await registry.registerWasmTools(fixture('hostile'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('runs calls in a child process, and says so in the pool stats', async () => {
    expect((await registry.execute('honest', { n: 10 })).structuredContent).toMatchObject({ sum: 55 });
    const stats = registry.sandboxStats();
    expect(stats).toMatchObject({ containment: 'process', threads: 1, process: { pid: expect.any(Number), restarts: 0 } });
    expect(stats?.process?.pid).not.toBe(process.pid);
  });

  for (const signal of ['SIGKILL', 'SIGABRT'] as const) {
    it(`ends the running call with one TOOL_CRASHED when the process gets ${signal}, and runs the waiting calls on the next one`, async () => {
      const before = registry.sandboxStats()!.process!;
      const pid = await sandboxPid(registry);
      // One call running in the guest (its progress event proves it), three waiting for the one worker.
      const running = registry.stream('progress_then_spin', {}, { policy: { timeout: '30s' } });
      const iterator = running[Symbol.asyncIterator]();
      const events: ToolEvent[] = [];
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        events.push(next.value);
        if (next.value.type === 'progress') break;
      }
      const waiting = [1, 2, 3].map((n) => registry.execute('honest', { n }));
      process.kill(pid, signal);
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value);

      expect(terminalCount(events)).toBe(1);
      expect(events.at(-1)).toMatchObject({
        type: 'error',
        code: 'TOOL_CRASHED',
        message: expect.stringContaining(`was killed by ${signal}`),
        details: { reason: 'sandbox-process-death', pid, signal },
      });
      expect((await Promise.all(waiting)).map((result) => result.structuredContent)).toEqual([{ ok: true, sum: 1 }, { ok: true, sum: 3 }, { ok: true, sum: 6 }]);
      const after = registry.sandboxStats()!.process!;
      expect(after.restarts).toBe(before.restarts + 1);
      expect(after.pid).not.toBe(pid);
      expect(alive(pid)).toBe(false);
      // The host is up and serves the next calls.
      expect((await registry.execute('honest', { n: 4 })).structuredContent).toMatchObject({ sum: 10 });
    });
  }

  it('ends a call whose timeout fires while it waits for the worker, and the calls around it run normally', async () => {
    const running = registry.execute('sleep_for', { ms: 600 });
    // Waits (in the sandbox process, or in the host) behind the sleeper; its wall clock runs out there.
    const waiting = await registry.execute('honest', { n: 2 }, { policy: { timeout: '0.1s' } });
    expect(waiting.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
    expect((await running).structuredContent).toMatchObject({ slept_ms: 600 });
    expect((await Promise.all([3, 4].map((n) => registry.execute('honest', { n })))).map((result) => result.structuredContent)).toEqual([
      { ok: true, sum: 6 },
      { ok: true, sum: 10 },
    ]);
  });

  it('keeps a guest\'s own crash inside its call: a trap is TOOL_CRASHED without a new process', async () => {
    const { restarts } = registry.sandboxStats()!.process!;
    const events = await collect(registry.stream('trap', {}));
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'TOOL_CRASHED' });
    expect(registry.sandboxStats()?.process?.restarts).toBe(restarts);
  });

  it('leaves no process behind when it is closed, ending the call it ran', async () => {
    const pid = await sandboxPid(registry);
    const running = registry.execute('sleep_for', { ms: 20_000 });
    await registry.close();
    expect(alive(pid)).toBe(false);
    expect((await running).error).toMatchObject({ code: expect.stringMatching(/^(TOOL_CRASHED|CANCELLED)$/) });
  });
});

describe.runIf(hasCGuests)('a sandbox process that cannot start', () => {
  it('is started again with a growing delay, then calls fail at once with a clear TOOL_CRASHED instead of spinning', async () => {
    // Every process this one forks now exits before it runs anything (a preloaded module ends it, quietly).
    const exitAtStart = join(mkdtempSync(join(tmpdir(), 'toolhost-exit-')), 'exit-at-start.cjs');
    writeFileSync(exitAtStart, 'process.exit(3);\n');
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${saved ?? ''} --require ${exitAtStart}`;
    const broken = makeRegistry({ sandbox: { containment: 'process' } });
    try {
      // The description is cached: loading needs no sandbox process.
      await broken.registerWasmTools(fixture('hostile'));
      const waited = await broken.execute('honest', { n: 1 });
      expect(waited.error).toMatchObject({
        code: 'TOOL_CRASHED',
        message: expect.stringMatching(/died 5 times in a row before it ran anything \(last: it exited with code 3\)/),
        details: { reason: 'sandbox-process-crash-loop' },
      });
      expect(broken.sandboxStats()?.process).toMatchObject({ pid: undefined, restarts: 5 });
      expect((await broken.execute('honest', { n: 2 })).error).toMatchObject({ code: 'TOOL_CRASHED', details: { reason: 'sandbox-process-crash-loop' } });
    } finally {
      process.env.NODE_OPTIONS = saved;
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      await broken.close();
      rmSync(dirname(exitAtStart), { recursive: true, force: true });
    }
  });
});
