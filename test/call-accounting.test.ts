/** What a runner measures reaches the call's accounting, field by field (host/core/call/accounting.ts builds it explicitly). */
import { describe, expect, it } from 'vitest';
import { ToolRegistry, silentLogger, type CallAccounting, type Tool } from '../host/index.js';

/** Every field a runner may report: a field added to CallAccounting must be listed here (this file does not compile otherwise) and copied by accountingOf (host/core/call/accounting.ts). */
const reported: Required<Omit<CallAccounting, 'wallMs' | 'attempts' | 'events'>> = {
  queuedMs: 1.5,
  cpuMs: 0.25,
  cpuClock: 'thread',
  peakMemoryBytes: 131_072,
  instance: 'restored',
  isolation: 'call',
  instantiateMs: 0.125,
  workerThreadId: 7,
  networkDenied: [{ url: 'http://10.0.0.1/', reason: 'private address' }],
  networkDeniedCount: 3,
  waitingForWorker: false,
  reinstantiated: true,
  evictions: 2,
};

function measuringTool(name: string, reports: Array<Partial<CallAccounting>>): Tool {
  return {
    name,
    description: 'Reports measurements, then returns.',
    inputSchema: {},
    executionMode: 'native',
    idempotent: false,
    streaming: false,
    async invoke(_args, _ctx, events) {
      for (const report of reports) events.account(report);
      return { output: { ok: true } };
    },
  };
}

describe("a call's accounting", () => {
  it('carries every field the runner reported, beside the call\'s own counts', async () => {
    const registry = new ToolRegistry({ logger: silentLogger });
    registry.register(measuringTool('full', [reported]));
    try {
      const { accounting } = await registry.execute('full', {});
      expect(accounting).toEqual({ ...reported, wallMs: expect.any(Number), attempts: 1, events: 0 });
    } finally {
      await registry.close();
    }
  });

  it('keeps the last value of a field reported twice, reads queuedMs as 0 when none came, and adds no field nobody reported', async () => {
    const registry = new ToolRegistry({ logger: silentLogger });
    registry.register(measuringTool('partial', [{ cpuMs: 1, instance: 'fresh' }, { cpuMs: 2 }]));
    try {
      const { accounting } = await registry.execute('partial', {});
      expect(accounting).toStrictEqual({ queuedMs: 0, wallMs: accounting!.wallMs, attempts: 1, events: 0, cpuMs: 2, instance: 'fresh' });
    } finally {
      await registry.close();
    }
  });
});
