/**
 * The CPU watchdog of a pool task reads the guest's thread clock from the
 * main thread, on a timer that may fire late. Once the worker says the guest
 * returned, the guest's own CPU time is what counts: the thread's later work
 * (posting the answer, making the next spare) was once charged to the call,
 * which then ended CPU_BUDGET_EXCEEDED although its guest stayed in budget.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ToolhostError } from '../host/base/errors.js';
import { ControlSlots } from '../host/sandbox/transport/control-slots.js';
import { PoolTask } from '../host/sandbox/pool-task.js';
import { cpuTimeMs, threadTid } from '../host/sandbox/worker/cpu-clock.js';
import { HostBridge } from '../host/sandbox/worker/host-bridge.js';

const BUDGET_MS = 5;

/** A task with a CPU budget, and the worker's side of its control block (played by this thread). */
function budgetedTask(): { task: PoolTask; bridge: HostBridge } {
  const slot = new ControlSlots().acquire();
  const task = new PoolTask(1, slot, { cpuBudgetMs: BUDGET_MS, onMessage: () => undefined, rpc: async () => undefined }, () => undefined);
  return { task, bridge: new HostBridge(1, slot.ref) };
}

/** Burn this thread's CPU (the "guest's thread" here) past the budget. */
function burn(ms: number): void {
  const until = cpuTimeMs() + ms;
  while (cpuTimeMs() < until) { /* spin */ }
}

describe.runIf(threadTid !== undefined)('CPU watchdog', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops a guest that runs past its budget', () => {
    const { task, bridge } = budgetedTask();
    bridge.guestStarting(threadTid, cpuTimeMs(), Date.now());
    burn(BUDGET_MS * 3);
    vi.advanceTimersByTime(BUDGET_MS * 4);
    expect(task.signal?.aborted).toBe(true);
    expect(task.signal?.reason).toBeInstanceOf(ToolhostError);
    expect((task.signal?.reason as ToolhostError).code).toBe('CPU_BUDGET_EXCEEDED');
    task.dispose();
  });

  it('does not charge the thread\'s work after the guest returned, however late it looks', () => {
    const { task, bridge } = budgetedTask();
    const start = cpuTimeMs();
    bridge.guestStarting(threadTid, start, Date.now());
    bridge.guestEnded(1);
    // The worker's thread keeps working (its answer, the next spare) before the main thread's timer fires.
    burn(BUDGET_MS * 3);
    vi.advanceTimersByTime(BUDGET_MS * 10);
    expect(task.signal?.aborted).toBe(false);
    expect(task.cpuUsed()).toBe(1);
    task.dispose();
  });

  it('still ends a call whose guest returned over its budget between two looks', () => {
    const { task, bridge } = budgetedTask();
    bridge.guestStarting(threadTid, cpuTimeMs(), Date.now());
    bridge.guestEnded(BUDGET_MS + 2);
    vi.advanceTimersByTime(BUDGET_MS * 2);
    expect(task.signal?.aborted).toBe(true);
    expect((task.signal?.reason as ToolhostError).code).toBe('CPU_BUDGET_EXCEEDED');
    task.dispose();
  });
});
