/**
 * Process containment's heartbeat: a sandbox process that stops answering (SIGSTOP here; a wedged main thread
 * alike) is killed and replaced within `heartbeatMs` (plus a fifth): the call it was running ends with one
 * TOOL_CRASHED (`details.reason: "sandbox-process-unresponsive"`, counted as a `heartbeat_ms` limit hit), the calls
 * waiting behind it run on the new process, and the host serves on. A process whose workers are busy with guests
 * for longer than the heartbeat is not touched: its main thread answers, not its workers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

const HEARTBEAT_MS = 1_000;

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

describe.runIf(hasCGuests)('a sandbox process that stops answering', () => {
  let registry: ToolRegistry;
  const limitHits: Array<[string, string]> = [];
  const stopped: number[] = [];

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { containment: 'process', heartbeatMs: HEARTBEAT_MS } });
    registry.onLimitHit((tool, limit) => limitHits.push([tool, limit]));
    await registry.registerWasmTools(fixture('hostile'));
  });
  afterAll(async () => {
    // On code without a heartbeat the stopped process would outlive the test: let it go on and be closed.
    for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGCONT');
    await registry.close();
  });

  it('is killed and replaced: the running call ends with one TOOL_CRASHED, the waiting calls run on the next process', { timeout: 30_000 }, async () => {
    expect((await registry.execute('honest', { n: 1 })).structuredContent).toMatchObject({ sum: 1 });
    const before = registry.sandboxStats()!.process!;
    const pid = await sandboxPid(registry);
    const running = registry.stream('progress_then_spin', {}, { policy: { timeout: '20s' } });
    const iterator = running[Symbol.asyncIterator]();
    const events: ToolEvent[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      events.push(next.value);
      if (next.value.type === 'progress') break;
    }
    const waiting = [1, 2, 3].map((n) => registry.execute('honest', { n }, { policy: { timeout: '20s' } }));
    const stoppedAt = performance.now();
    process.kill(pid, 'SIGSTOP');
    stopped.push(pid);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value);
    const endedAfterMs = performance.now() - stoppedAt;

    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'TOOL_CRASHED',
      message: expect.stringContaining('answered no heartbeat'),
      details: { reason: 'sandbox-process-unresponsive', limit: 'heartbeat_ms', heartbeatMs: HEARTBEAT_MS, pid, signal: 'SIGKILL' },
    });
    // Within the heartbeat and a ping's interval (and slack for a loaded machine), not the call's 20 s wall clock.
    expect(endedAfterMs).toBeLessThan(HEARTBEAT_MS * 6);
    expect((await Promise.all(waiting)).map((result) => result.structuredContent)).toEqual([{ ok: true, sum: 1 }, { ok: true, sum: 3 }, { ok: true, sum: 6 }]);
    const after = registry.sandboxStats()!.process!;
    expect(after.restarts).toBe(before.restarts + 1);
    expect(after.pid).not.toBe(pid);
    expect(alive(pid)).toBe(false);
    expect(limitHits).toContainEqual(['progress_then_spin', 'heartbeat_ms']);
    expect((await registry.execute('honest', { n: 4 })).structuredContent).toMatchObject({ sum: 10 });
  });

  it('is replaced when it stops while idle, before any call needs it, and the next call runs on the new one', { timeout: 30_000 }, async () => {
    const pid = await sandboxPid(registry);
    const { restarts } = registry.sandboxStats()!.process!;
    const stoppedAt = performance.now();
    process.kill(pid, 'SIGSTOP');
    stopped.push(pid);
    while (registry.sandboxStats()!.process!.restarts === restarts && performance.now() - stoppedAt < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(registry.sandboxStats()!.process!.restarts).toBe(restarts + 1);
    expect(performance.now() - stoppedAt).toBeLessThan(HEARTBEAT_MS * 6);
    expect(alive(pid)).toBe(false);
    const result = await registry.execute('honest', { n: 5 }, { policy: { timeout: '20s' } });
    expect(result.structuredContent).toMatchObject({ sum: 15 });
  });

  it('leaves a process alone whose worker runs a guest for longer than the heartbeat', { timeout: 30_000 }, async () => {
    const { restarts, pid } = registry.sandboxStats()!.process!;
    // Half again the heartbeat: a process whose main thread ran the guest would miss it by half a second.
    const spun = await registry.execute('spin_for', { ms: HEARTBEAT_MS * 1.5 });
    expect(spun.error).toBeUndefined();
    const slept = await registry.execute('sleep_for', { ms: HEARTBEAT_MS * 1.5 });
    expect(slept.error).toBeUndefined();
    expect(registry.sandboxStats()!.process).toMatchObject({ restarts, pid });
  });

  it('does not blame the process for answers the host was too busy to read', { timeout: 30_000 }, async () => {
    expect((await registry.execute('honest', { n: 1 })).structuredContent).toMatchObject({ sum: 1 });
    const { restarts, pid } = registry.sandboxStats()!.process!;
    // The host's own event loop stalls (a long synchronous task) while the process answers on time: half again
    // the heartbeat, so a host that blamed the process for its own late reading would kill it.
    const until = performance.now() + HEARTBEAT_MS * 1.5;
    while (performance.now() < until) { /* busy */ }
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS / 2));
    expect(registry.sandboxStats()!.process).toMatchObject({ restarts, pid });
    expect((await registry.execute('honest', { n: 2 })).structuredContent).toMatchObject({ sum: 3 });
  });
});
