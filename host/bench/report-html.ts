import type { BenchReport } from './row.js';
import type { TargetCheck } from './targets.js';
export function renderHtmlReport(report: BenchReport, targets?: TargetCheck[]): string {
  return `<!doctype html><pre>${JSON.stringify({ report, targets })}</pre>`;
}
