/**
 * Enforcement precision: how far past its budget a spinning guest gets before
 * the host ends its call. For each wall-clock and CPU budget, a guest that
 * spins forever (never checking cancellation) is called repeatedly; the
 * overshoot is the call's wall time past a wall budget, or the CPU time the
 * watchdog read past a CPU budget.
 */
import type { ToolRegistry } from '../host/index.js';

export interface BudgetRow {
  kind: 'wall' | 'cpu';
  budgetMs: number;
  samples: number;
  /** Calls that did not end with the expected code. */
  wrong: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Measure overshoots with `spinTool`, a tool that spins until its worker is stopped. */
export async function measureEnforcement(registry: ToolRegistry, spinTool: string, samplesFor: (budgetMs: number) => number): Promise<BudgetRow[]> {
  const rows: BudgetRow[] = [];
  for (const kind of ['wall', 'cpu'] as const) {
    for (const budgetMs of [50, 200, 1000]) {
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
        p50Ms: percentile(overshoots, 50),
        p99Ms: percentile(overshoots, 99),
        maxMs: overshoots.at(-1) ?? Number.NaN,
      });
    }
  }
  return rows;
}

export function formatBudgetTable(rows: BudgetRow[]): string {
  const header = 'budget         samples  wrong  overshoot p50 ms  overshoot p99 ms  max ms';
  const lines = rows.map((row) =>
    [
      `${row.kind} ${row.budgetMs} ms`.padEnd(13),
      String(row.samples).padStart(8),
      String(row.wrong).padStart(6),
      row.p50Ms.toFixed(3).padStart(17),
      row.p99Ms.toFixed(3).padStart(17),
      row.maxMs.toFixed(3).padStart(7),
    ].join(' '),
  );
  return [header, '-'.repeat(header.length), ...lines].join('\n');
}
