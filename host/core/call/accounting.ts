/** A call's accounting, from what its runner reported and the call's own counts. */
import type { CallAccounting, ReportedAccounting } from '../result.js';

/**
 * Built field by field in one order, not spread from what the runner
 * reported: copying an object of a shape made per call was ~3 % of the main
 * thread's samples at 8 sandboxed calls in flight. A field added to
 * CallAccounting is copied here too (test/call-accounting.test.ts lists them all).
 */
export function accountingOf(reported: ReportedAccounting, wallMs: number, attempts: number, events: number): CallAccounting {
  const accounting: CallAccounting = { queuedMs: reported.queuedMs ?? 0, wallMs, attempts, events };
  if (reported.cpuMs !== undefined) accounting.cpuMs = reported.cpuMs;
  if (reported.cpuClock !== undefined) accounting.cpuClock = reported.cpuClock;
  if (reported.peakMemoryBytes !== undefined) accounting.peakMemoryBytes = reported.peakMemoryBytes;
  if (reported.instance !== undefined) accounting.instance = reported.instance;
  if (reported.isolation !== undefined) accounting.isolation = reported.isolation;
  if (reported.instantiateMs !== undefined) accounting.instantiateMs = reported.instantiateMs;
  if (reported.workerThreadId !== undefined) accounting.workerThreadId = reported.workerThreadId;
  if (reported.reinstantiated !== undefined) accounting.reinstantiated = reported.reinstantiated;
  if (reported.evictions !== undefined) accounting.evictions = reported.evictions;
  if (reported.networkDenied !== undefined) accounting.networkDenied = reported.networkDenied;
  if (reported.networkDeniedCount !== undefined) accounting.networkDeniedCount = reported.networkDeniedCount;
  if (reported.waitingForWorker !== undefined) accounting.waitingForWorker = reported.waitingForWorker;
  return accounting;
}
