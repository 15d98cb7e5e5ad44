/**
 * Enforcement precision: how far past its budget a spinning guest gets before
 * the host ends its call. For each wall-clock and CPU budget, a guest that
 * spins forever (never checking cancellation) is called repeatedly; the
 * overshoot is the call's wall time past a wall budget, or the CPU time the
 * watchdog read past a CPU budget.
 */
import type { ToolRegistry } from '../core/registry.js';
import type { BudgetRow } from './row.js';
import { percentile, round3 } from './statistics.js';

export const BUDGETS_MS = [50, 200, 1000] as const;

/** Measure overshoots with `spinTool`, a tool that spins until its worker is stopped. */
export async function measureEnforcement(registry: ToolRegistry, spinTool: string, samplesFor: (budgetMs: number) => number): Promise<BudgetRow[]> {
  const rows: BudgetRow[] = [];
  for (const kind of ['wall', 'cpu'] as const) {
    for (const budgetMs of BUDGETS_MS) {
      const overshoots: number[] = [];
      let wrong = 0;
      const samples = samplesFor(budgetMs);
      for (let i = 0; i < samples; i += 1) {
        // A long wall clock behind a CPU budget, so only the CPU watchdog can end the call.
        const policy = kind === 'wall' ? { budget_wall_ms: budgetMs } : { budget_cpu_ms: budgetMs, timeout: '30s' };
        const result = await registry.execute(spinTool, {}, { policy });
        const expected = kind === 'wall' ? 'WALL_TIMEOUT' : 'CPU_BUDGET_EXCEEDED';
        if (result.error?.code !== expected) {
          wrong += 1;
          continue;
        }
        if (kind === 'wall') {
          overshoots.push((result.accounting?.wallMs ?? Number.NaN) - budgetMs);
        } else {
          const used = (result.error.details as { usedMs?: number } | undefined)?.usedMs ?? Number.NaN;
          overshoots.push(used - budgetMs);
        }
      }
      overshoots.sort((a, b) => a - b);
      rows.push({
        kind,
        budgetMs,
        samples,
        wrong,
        p50Ms: round3(percentile(overshoots, 0.5)),
        p99Ms: round3(percentile(overshoots, 0.99)),
        maxMs: round3(overshoots.at(-1) ?? Number.NaN),
      });
    }
  }
  return rows;
}
